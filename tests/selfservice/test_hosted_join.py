"""Hosted join through HTTP with the ``file:`` mailer (decisions 6, 11; issue 7).

The whole signup as an applicant lives it: the public page, the request, the message in the
mailbox, the confirmation, the affiliate key, a named link made with that key, the Developer's
approval, and a capture on the link that an identify then attributes. Then every way a token can
be bad, the rate limits, and the program states.
"""

from __future__ import annotations

import logging
import socket
from datetime import timedelta
from pathlib import Path

import pytest
from attrs import evolve

from refcore.clocks import ManualClock
from refcore.credentials import digest
from refcore.errors import ValidationError
from refcore.models import EventType
from refcore.services.payout_accounts import parse_details
from refcore.services.runtime import Runtime, Tx
from refcore_http.app import create_app
from refcore_http.settings import Settings
from tests.http.world import Client, Tenant, expect, new_tenant
from tests.selfservice.images import png
from tests.selfservice.world import body_of, join, link_in, mailbox, sign_up, token_in


def _slug(tenant: Tenant) -> str:
    """``new_tenant(…, name)`` makes the program ``<name>-partners`` and the link ``<name>-ally``."""
    return tenant.link_code.removesuffix("-ally") + "-partners"


def test_the_whole_hosted_signup_ends_in_an_attributed_customer(
    client: Client, runtime: Runtime, mail_dir: Path
) -> None:
    acme = new_tenant(client, runtime, "acme")
    slug = _slug(acme)
    expect(client.post(f"/v1/programs/{acme.program_id}/terms", acme.session, {"text": "Terms v1"}), 201)
    expect(client.post(f"/v1/programs/{acme.program_id}/terms", acme.session, {"text": "Terms v2"}), 201)
    expect(client.patch(f"/v1/apps/{acme.app_id}/agreement", acme.session, {"text": "Agreement v1"}), 200)
    logo = png()
    expect(
        client.request(
            "POST",
            f"/v1/apps/{acme.app_id}/logo",
            acme.session,
            content=logo,
            headers={"Content-Type": "image/png"},
        ),
        200,
    )

    # -- the public page: no credential --------------------------------------------------------
    page = expect(client.get(f"/v1/join/{slug}"), 200)
    assert page["object"] == "join_page"
    assert page["program"]["id"] == acme.program_id
    assert (page["program"]["name"], page["program"]["currency"]) == ("acme partners", "usd")
    assert page["program"]["commission"] == {"type": "percent", "bps": 2000}
    # Every object has id, object and created_at (api.md), the public program's too.
    program = expect(client.get(f"/v1/programs/{acme.program_id}", acme.session), 200)
    assert page["program"]["created_at"] == program["created_at"]
    assert page["terms"]["text"] == "Terms v2"
    assert page["app"]["name"] == "acme"
    assert page["agreement"]["text"] == "Agreement v1"
    fetched = client.get(page["app"]["logo_url"])
    assert fetched.status_code == 200 and fetched.content == logo
    assert fetched.headers["content-type"] == "image/png"

    # -- the request: 202, and the answer never carries the token -------------------------------
    response = client.post(f"/v1/join/{slug}", json={"email": "Sam@Blog.example", "name": "Sam Blogger"})
    accepted = expect(response, 202)
    assert accepted["object"] == "join_request"
    assert (accepted["program_id"], accepted["email"]) == (acme.program_id, "sam@blog.example")

    (message,) = mailbox(mail_dir)
    assert message["To"] == "sam@blog.example"
    assert "acme partners" in message["Subject"]
    link = link_in(message)
    assert link.startswith("https://partners.example/join/acme-partners/confirm?lang=en&token=")
    token = token_in(message)
    assert token not in response.text
    assert "Sam Blogger" not in body_of(message)  # nobody has confirmed the address yet

    # -- confirm: a pending affiliate, affiliate.created, and a key shown once ------------------
    confirmed = client.post(f"/v1/join/{slug}/confirm", json={"token": token})
    confirmation = expect(confirmed, 201)
    assert confirmed.headers["cache-control"] == "no-store"  # the key's one showing: never cached
    affiliate = confirmation["program_affiliate"]
    assert (affiliate["program_id"], affiliate["email"], affiliate["name"]) == (
        acme.program_id,
        "sam@blog.example",
        "Sam Blogger",
    )
    assert affiliate["status"] == "pending"  # the program does not auto-approve
    key = confirmation["api_key"]
    assert key["secret"].startswith("key_aff_")
    assert (key["kind"], key["mode"], key["program_affiliate_id"]) == ("affiliate", "live", affiliate["id"])
    events = runtime.read(lambda tx: tx.uow.events.find_all({"app_id": acme.app_id}))
    created = [e for e in events if e.type is EventType.AFFILIATE_CREATED and e.data["id"] == affiliate["id"]]
    assert len(created) == 1 and created[0].livemode is True
    listed = expect(client.get("/v1/api-keys", acme.session, app_id=acme.app_id), 200)["data"]
    assert key["id"] in {k["id"] for k in listed}
    assert all("secret" not in k for k in listed)

    # -- with the key, the affiliate makes a named link -----------------------------------------
    secret = key["secret"]
    link_obj = expect(
        client.post(f"/v1/affiliate/programs/{acme.program_id}/links", secret, {"name": "Blog"}), 201
    )
    assert (link_obj["name"], link_obj["program_affiliate_id"]) == ("Blog", affiliate["id"])
    mine = expect(client.get(f"/v1/affiliate/programs/{acme.program_id}/links", secret), 200)
    assert [item["id"] for item in mine["data"]] == [link_obj["id"]]

    # While pending, a click on the link is recorded but an identify is not attributed.
    early = expect(client.post("/v1/capture", json={"via": link_obj["code"]}), 201)
    early_who = expect(
        client.post(
            "/v1/identify", acme.live_key, {"click_id": early["click_id"], "external_customer_id": "u0"}
        ),
        201,
    )
    assert early_who["attributed"] is False

    # -- the Developer approves; the next visitor is attributed ---------------------------------
    approved = expect(client.post(f"/v1/program-affiliates/{affiliate['id']}/approve", acme.session), 200)
    assert approved["status"] == "active"
    click = expect(client.post("/v1/capture", json={"via": link_obj["code"]}), 201)
    who = expect(
        client.post(
            "/v1/identify",
            acme.live_key,
            {"click_id": click["click_id"], "external_customer_id": "u1", "email": "reader@x.example"},
        ),
        201,
    )
    assert who["attributed"] is True
    referral = expect(client.get(f"/v1/referrals/{who['referral_id']}", acme.session), 200)
    assert referral["program_affiliate_id"] == affiliate["id"]


def test_a_program_that_auto_approves_makes_an_active_affiliate(
    client: Client, runtime: Runtime, mail_dir: Path
) -> None:
    acme = new_tenant(client, runtime, "auto")
    expect(client.patch(f"/v1/programs/{acme.program_id}", acme.session, {"auto_approve": True}), 200)
    confirmation = join(client, mail_dir, "auto-partners", "eve@x.example")
    assert confirmation["program_affiliate"]["status"] == "active"


def test_the_token_is_stored_only_as_its_digest(client: Client, runtime: Runtime, mail_dir: Path) -> None:
    new_tenant(client, runtime, "dig")
    token = sign_up(client, mail_dir, "dig-partners", "d@x.example")

    def read(tx: Tx) -> list[object]:
        return list(tx.uow.pending_signups.find_all({}))

    (signup,) = runtime.read(read)
    assert getattr(signup, "token_digest") == digest(token)  # noqa: B009
    assert token not in repr(signup)


# -- bad tokens ---------------------------------------------------------------------------------


def test_a_forged_token_is_invalid(client: Client, runtime: Runtime) -> None:
    new_tenant(client, runtime, "forge")
    body = expect(
        client.post("/v1/join/forge-partners/confirm", json={"token": "join_" + "A" * 43}),
        400,
        "invalid_signup_token",
    )
    assert body["error"]["param"] == "token"


def test_a_reused_token_is_invalid_and_creates_nothing_more(
    client: Client, runtime: Runtime, mail_dir: Path
) -> None:
    tenant = new_tenant(client, runtime, "reuse")
    token = sign_up(client, mail_dir, "reuse-partners", "r@x.example")
    expect(client.post("/v1/join/reuse-partners/confirm", json={"token": token}), 201)
    body = expect(
        client.post("/v1/join/reuse-partners/confirm", json={"token": token}), 400, "invalid_signup_token"
    )
    assert "already used" in body["error"]["message"]
    affiliates = expect(
        client.get("/v1/program-affiliates", tenant.session, program_id=tenant.program_id), 200
    )
    assert [a["email"] for a in affiliates["data"]].count("r@x.example") == 1


def test_an_expired_token_is_invalid(
    client: Client, runtime: Runtime, mail_dir: Path, clock: ManualClock
) -> None:
    new_tenant(client, runtime, "late")
    token = sign_up(client, mail_dir, "late-partners", "l@x.example")
    clock.advance(timedelta(hours=24))
    body = expect(
        client.post("/v1/join/late-partners/confirm", json={"token": token}), 400, "invalid_signup_token"
    )
    assert "expired" in body["error"]["message"]


def test_a_token_still_works_just_before_it_expires(
    client: Client, runtime: Runtime, mail_dir: Path, clock: ManualClock
) -> None:
    new_tenant(client, runtime, "intime")
    token = sign_up(client, mail_dir, "intime-partners", "i@x.example")
    clock.advance(timedelta(hours=24) - timedelta(milliseconds=1))
    expect(client.post("/v1/join/intime-partners/confirm", json={"token": token}), 201)


def test_a_token_of_another_program_is_invalid_there(
    client: Client, runtime: Runtime, mail_dir: Path
) -> None:
    new_tenant(client, runtime, "one")
    new_tenant(client, runtime, "two")
    token = sign_up(client, mail_dir, "one-partners", "o@x.example")
    expect(client.post("/v1/join/two-partners/confirm", json={"token": token}), 400, "invalid_signup_token")
    expect(client.post("/v1/join/one-partners/confirm", json={"token": token}), 201)


def test_join_routes_take_strict_json(client: Client, runtime: Runtime) -> None:
    new_tenant(client, runtime, "strict")
    expect(client.post("/v1/join/strict-partners", json={"email": "s@x.example"}), 400, "validation_error")
    expect(
        client.post("/v1/join/strict-partners", json={"email": "nope", "name": "N"}), 400, "validation_error"
    )
    expect(
        client.post("/v1/join/strict-partners", json={"email": "s@x.example", "name": "S", "role": "admin"}),
        400,
        "validation_error",
    )
    expect(client.request("POST", "/v1/join/strict-partners", content=b"email=s"), 400, "invalid_json")
    expect(client.post("/v1/join/strict-partners/confirm", json={}), 400, "validation_error")


# -- rate limits ----------------------------------------------------------------------------------


def test_signups_are_limited_per_email_address(client: Client, runtime: Runtime, mail_dir: Path) -> None:
    new_tenant(client, runtime, "spam")
    for _ in range(5):
        expect(client.post("/v1/join/spam-partners", json={"email": "v@x.example", "name": "V"}), 202)
    body = expect(
        client.post("/v1/join/spam-partners", json={"email": "V@x.example", "name": "V"}), 429, "rate_limited"
    )
    assert "try again after" in body["error"]["message"]
    assert len(mailbox(mail_dir)) == 5
    # Another address from the same client is still welcome.
    expect(client.post("/v1/join/spam-partners", json={"email": "w@x.example", "name": "W"}), 202)


def test_signups_are_limited_per_client_ip(
    runtime: Runtime, mail_dir: Path, settings: Settings, clock: ManualClock
) -> None:
    app = create_app(runtime, settings)
    first = Client(app, client_address=("198.51.100.1", 1000))
    other = Client(app, client_address=("198.51.100.2", 1000))
    new_tenant(first, runtime, "ipl")
    for n in range(20):
        expect(first.post("/v1/join/ipl-partners", json={"email": f"p{n}@x.example", "name": "P"}), 202)
    expect(
        first.post("/v1/join/ipl-partners", json={"email": "p20@x.example", "name": "P"}), 429, "rate_limited"
    )
    expect(other.post("/v1/join/ipl-partners", json={"email": "p20@x.example", "name": "P"}), 202)
    # A new window (one hour, on the hour) starts a new count.
    clock.advance(timedelta(hours=1))
    expect(first.post("/v1/join/ipl-partners", json={"email": "p21@x.example", "name": "P"}), 202)


def test_an_ipv6_client_is_counted_by_its_64_and_an_address_however_it_is_written(
    runtime: Runtime, mail_dir: Path, settings: Settings
) -> None:
    """Per-IP signups count a client: one IPv6 /64 (a client may send from any of its 2**64
    addresses), an IPv4 address in its mapped form as itself (probe M: each spelling and each
    IPv6 address had had an allowance of its own)."""
    app = create_app(runtime, evolve(settings, join_limit_per_ip=2))
    new_tenant(Client(app), runtime, "six")

    def join_from(peer: str, n: int) -> int:
        client = Client(app, client_address=(peer, 1000))
        return client.post(
            "/v1/join/six-partners", json={"email": f"s{n}@x.example", "name": "S"}
        ).status_code

    assert [
        join_from(peer, n) for n, peer in enumerate(["2001:db8::1", "2001:db8::2", "2001:db8::ffff:1"])
    ] == [
        202,
        202,
        429,
    ]
    assert join_from("2001:db8:0:1::1", 3) == 202  # another /64
    assert [
        join_from(peer, n) for n, peer in enumerate(["192.0.2.7", "::ffff:192.0.2.7", "192.0.2.7"], 4)
    ] == [
        202,
        202,
        429,
    ]


def test_a_refused_signup_uses_no_allowance(client: Client, runtime: Runtime, mail_dir: Path) -> None:
    """Bad input fails before the count is taken, and a 429 rolls its own count back."""
    new_tenant(client, runtime, "fair")
    for _ in range(3):
        expect(client.post("/v1/join/nobody-partners", json={"email": "f@x.example", "name": "F"}), 404)
    for _ in range(5):
        expect(client.post("/v1/join/fair-partners", json={"email": "f@x.example", "name": "F"}), 202)
    expect(client.post("/v1/join/fair-partners", json={"email": "f@x.example", "name": "F"}), 429)


# -- names: one line, and never quoted to an unconfirmed address (probe J) -----------------------

#: Probe J's name: a phishing notice that the confirmation mail began with.
_PHISHING_NAME = "Victim,\n\nURGENT: your payout account is locked. Verify at https://evil.example/login"


@pytest.mark.parametrize(
    "name",
    [
        _PHISHING_NAME,
        "Sam\r\nBcc: x@evil.example",
        "Sam\tBlogger",
        "Sam\x1b[2J",
        "Sam\x85Blogger",
        "Sam\u2028B",
        "Eve\u202eX",  # the invisible ones that make a name read as another (probe K)
        "Eve\u200bX",
        "\ufeffEve",
        "Eve\u2067X",
        # Every other invisible format character (Unicode Cf) but the joiners (probe O).
        "Eve\u200eX",
        "Eve\u061cX",
        "Eve\u2060X",
        "Eve\U000e0041",
        "Eve\u00adX",
        # Letters that show as nothing, and a combining mark with no letter before it (probe Q).
        "a\u3164b",
        "a\u115fb",
        "a\uffa0b",
        "a\u2800b",
        "\u0301",
        "\u0301Eve",
    ],
)
def test_a_name_of_more_than_one_line_is_refused_and_nothing_is_written(
    client: Client, runtime: Runtime, mail_dir: Path, name: str
) -> None:
    """A name is one line of text: a control character (CR, LF, TAB, any Unicode Cc) or a line
    separator is ``400 validation_error`` on ``name``, before anything is recorded or mailed."""
    new_tenant(client, runtime, "line")
    refused = client.post("/v1/join/line-partners", json={"email": "victim@example.org", "name": name})
    assert expect(refused, 400, "validation_error")["error"]["param"] == "name"
    assert mailbox(mail_dir) == []
    assert runtime.read(lambda tx: tx.uow.pending_signups.find_all({})) == []
    for _ in range(5):  # the refusal took none of the address's allowance
        expect(client.post("/v1/join/line-partners", json={"email": "victim@example.org", "name": "V"}), 202)


#: A Persian word written with a zero-width non-joiner (U+200C), spelt in escapes.
_PERSIAN = "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645"


@pytest.mark.parametrize(
    "name",
    ["Zoë Smith", "José", "Jose\u0301", "👩\u200d💻 Sam", "\u2764\ufe0f Sam", "\ud55c\uad6d", _PERSIAN],
)
def test_a_name_may_hold_letters_of_any_script_and_joiners(
    client: Client, runtime: Runtime, mail_dir: Path, name: str
) -> None:
    """Only what breaks or disguises the line is refused: the zero-width joiner and non-joiner
    (emoji, Persian) are part of how names are written."""
    new_tenant(client, runtime, "line")
    expect(client.post("/v1/join/line-partners", json={"email": "sam@example.org", "name": name}), 202)


def test_every_name_of_a_person_or_affiliate_is_one_line(client: Client, runtime: Runtime) -> None:
    """The same rule where the Developer names an affiliate and where an affiliate names the
    account holder of its payouts (shown in the CSV export and payout instructions)."""
    tenant = new_tenant(client, runtime, "names")
    body = {"program_id": tenant.program_id, "email": "two@lines.example", "name": "Two\nLines"}
    added = client.post("/v1/program-affiliates", tenant.session, body)
    assert expect(added, 400, "validation_error")["error"]["param"] == "name"
    with pytest.raises(ValidationError) as refused:
        parse_details(
            {"method": "bank_transfer", "account_holder": "Kim\nLee", "iban": "DE89370400440532013000"}
        )
    assert refused.value.param == "account_holder"
    assert parse_details(
        {"method": "bank_transfer", "account_holder": "Kim Lee", "iban": "DE89370400440532013000"}
    )


@pytest.mark.parametrize("name", ["Two\nLines", "Blog\u202eX", "Tab\there", "\ufeffBOM", "Blog\u200fX"])
def test_every_name_given_to_an_organization_app_program_or_link_is_one_line(
    client: Client, runtime: Runtime, mail_dir: Path, name: str
) -> None:
    """Organization, App, program and link names are shown again as one line (dashboards, the
    public join page, link lists): the same rule as a person's name. A link's name comes from the
    affiliate's own key as well, which is input from outside the Developer's team. Each refusal is
    ``400 validation_error`` on ``name`` and changes nothing."""
    tenant = new_tenant(client, runtime, "label")
    session = tenant.session
    confirmed = join(client, mail_dir, "label-partners", "sam@label.example")
    affiliate_key = confirmed["api_key"]["secret"]
    links = f"/v1/program-affiliates/{tenant.affiliate_id}/links"
    program_body = {
        "app_id": tenant.app_id,
        "name": name,
        "slug": "label-two",
        "currency": "usd",
        "commission": {"type": "percent", "bps": 1000},
    }
    refusals = [
        client.post("/v1/organizations", session, {"name": name}),
        client.post("/v1/apps", session, {"organization_id": tenant.organization_id, "name": name}),
        client.patch(f"/v1/apps/{tenant.app_id}", session, {"name": name}),
        client.post("/v1/programs", session, program_body),
        client.patch(f"/v1/programs/{tenant.program_id}", session, {"name": name}),
        client.post(links, session, {"name": name}),
        client.patch(f"{links}/{tenant.link_id}", session, {"name": name}),
        client.post(f"/v1/affiliate/programs/{tenant.program_id}/links", affiliate_key, {"name": name}),
    ]
    for refused in refusals:
        assert expect(refused, 400, "validation_error")["error"]["param"] == "name"
    assert expect(client.get(f"/v1/apps/{tenant.app_id}", session), 200)["name"] == "label"
    assert expect(client.get(f"/v1/programs/{tenant.program_id}", session), 200)["name"] == "label partners"
    assert [link["id"] for link in expect(client.get(links, session), 200)["data"]] == [tenant.link_id]
    own = expect(client.get(f"/v1/affiliate/programs/{tenant.program_id}/links", affiliate_key), 200)
    assert own["data"] == []
    assert len(expect(client.get("/v1/organizations", session), 200)["data"]) == 1
    assert expect(client.get("/v1/programs", session, app_id=tenant.app_id), 200)["data"][0]["slug"] == (
        "label-partners"
    )
    renamed = expect(client.patch(f"/v1/apps/{tenant.app_id}", session, {"name": "Label 👩\u200d💻"}), 200)
    assert renamed["name"] == "Label 👩\u200d💻"


def test_the_mail_to_an_unconfirmed_address_does_not_quote_the_submitted_name(
    client: Client, runtime: Runtime, mail_dir: Path
) -> None:
    """Anyone may type any name with anyone's address, so the confirmation greets no one by
    name: whatever the form was sent, the mail's words are the Developer's and refcore's."""
    new_tenant(client, runtime, "greet")
    name = "Victim, URGENT: verify at https://evil.example/login"
    expect(client.post("/v1/join/greet-partners", json={"email": "victim@example.org", "name": name}), 202)
    (message,) = mailbox(mail_dir)
    text = body_of(message)
    assert text.startswith("Hello,\n") and "Victim" not in text and "evil.example" not in text
    assert name not in message.as_string()


# -- programs and members -----------------------------------------------------------------------


def test_a_disabled_program_has_no_join_page(client: Client, runtime: Runtime, mail_dir: Path) -> None:
    tenant = new_tenant(client, runtime, "gone")
    token = sign_up(client, mail_dir, "gone-partners", "g@x.example")
    expect(client.post(f"/v1/programs/{tenant.program_id}/disable", tenant.session), 200)
    expect(client.get("/v1/join/gone-partners"), 404, "program_not_found")
    expect(client.post("/v1/join/gone-partners", json={"email": "h@x.example", "name": "H"}), 404)
    expect(client.post("/v1/join/gone-partners/confirm", json={"token": token}), 404, "program_not_found")


def test_a_paused_program_still_takes_signups(client: Client, runtime: Runtime, mail_dir: Path) -> None:
    tenant = new_tenant(client, runtime, "nap")
    expect(client.post(f"/v1/programs/{tenant.program_id}/pause", tenant.session), 200)
    assert expect(client.get("/v1/join/nap-partners"), 200)["program"]["status"] == "paused"
    assert join(client, mail_dir, "nap-partners", "n@x.example")["program_affiliate"]["status"] == "pending"


def test_an_existing_affiliate_gets_the_same_answer_and_a_reminder_whose_link_issues_a_new_key(
    client: Client, runtime: Runtime, mail_dir: Path
) -> None:
    """An affiliate the Developer added has no key, and a lost key had no way back: the join
    form, answered from the affiliate's own mailbox, issues one for the affiliate that exists."""
    tenant = new_tenant(client, runtime, "known")
    existing = "ally@known.example"  # added by new_tenant, through POST /v1/program-affiliates
    answer = expect(client.post("/v1/join/known-partners", json={"email": existing, "name": "Ally"}), 202)
    fresh = expect(
        client.post("/v1/join/known-partners", json={"email": "new@x.example", "name": "New"}), 202
    )
    assert set(answer) == set(fresh) and answer["program_id"] == fresh["program_id"] == tenant.program_id
    reminder = next(m for m in mailbox(mail_dir) if m["To"] == existing)
    assert "already a member" in body_of(reminder) and "new affiliate key" in body_of(reminder)
    expect(client.post(f"/v1/program-affiliates/{tenant.affiliate_id}/disable", tenant.session), 200)

    first = expect(client.post("/v1/join/known-partners/confirm", json={"token": token_in(reminder)}), 201)
    assert first["program_affiliate"]["id"] == tenant.affiliate_id
    assert first["program_affiliate"]["status"] == "disabled"  # a new key changes no status
    second = join(client, mail_dir, "known-partners", existing)
    assert second["program_affiliate"]["id"] == tenant.affiliate_id
    assert first["api_key"]["secret"] != second["api_key"]["secret"]
    # Both keys are the affiliate's, and both work: the one issued first is not revoked.
    for key in (first["api_key"]["secret"], second["api_key"]["secret"]):
        balance = expect(client.get("/v1/payout-balance", key, program_id=tenant.program_id), 200)
        assert balance["program_affiliate_id"] == tenant.affiliate_id
    affiliates = expect(
        client.get("/v1/program-affiliates", tenant.session, program_id=tenant.program_id), 200
    )
    assert [a["email"] for a in affiliates["data"]].count(existing) == 1

    def created_events(tx: Tx) -> list[object]:
        return [
            e
            for e in tx.uow.events.find_all({"app_id": tenant.app_id})
            if e.type is EventType.AFFILIATE_CREATED
        ]

    assert len(runtime.read(created_events)) == 1  # Ally's, when the Developer added it; keys make none


def test_a_signup_confirmed_after_its_address_was_added_issues_a_key_for_that_affiliate(
    client: Client, runtime: Runtime, mail_dir: Path
) -> None:
    tenant = new_tenant(client, runtime, "race")
    token = sign_up(client, mail_dir, "race-partners", "late@x.example")
    added = expect(
        client.post(
            "/v1/program-affiliates",
            tenant.session,
            {"program_id": tenant.program_id, "email": "late@x.example", "name": "Late"},
        ),
        201,
    )
    confirmed = expect(client.post("/v1/join/race-partners/confirm", json={"token": token}), 201)
    assert confirmed["program_affiliate"]["id"] == added["id"]
    assert confirmed["program_affiliate"]["status"] == "active"


def test_an_unknown_slug_is_not_found(client: Client) -> None:
    expect(client.get("/v1/join/no-such-program"), 404, "program_not_found")
    expect(
        client.post("/v1/join/no-such-program/confirm", json={"token": "join_x"}), 404, "program_not_found"
    )


def test_join_routes_need_no_credential_and_ignore_one(client: Client, runtime: Runtime) -> None:
    tenant = new_tenant(client, runtime, "open")
    index = expect(client.get("/v1"), 200)
    auth = {(e["method"], e["path"]): e["auth"] for e in index["endpoints"]}
    for method, path in (
        ("GET", "/v1/join/:programSlug"),
        ("POST", "/v1/join/:programSlug"),
        ("POST", "/v1/join/:programSlug/confirm"),
        ("GET", "/v1/apps/:id/logo"),
    ):
        assert auth[(method, path)] == "none"
    expect(client.get("/v1/join/open-partners", tenant.session), 200)


def test_a_mail_server_that_fails_is_a_500_that_logs_no_token(
    runtime: Runtime, caplog: pytest.LogCaptureFixture
) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))  # bound, not listening: the connection is refused
        port = probe.getsockname()[1]
        client = Client(
            create_app(runtime, Settings(database_url="memory://", mailer=f"smtp://127.0.0.1:{port}"))
        )
        new_tenant(client, runtime, "down")
        with caplog.at_level(logging.DEBUG):
            body = expect(
                client.post("/v1/join/down-partners", json={"email": "d@x.example", "name": "D"}),
                500,
                "internal_error",
            )
    assert "confirmation message could not be sent" in body["error"]["message"]
    (signup,) = runtime.read(lambda tx: tx.uow.pending_signups.find_all({}))
    assert signup.token_digest not in caplog.text
    assert "join_" not in caplog.text


def test_a_refused_signup_says_when_to_retry_in_retry_after(
    runtime: Runtime, mail_dir: Path, settings: Settings, clock: ManualClock
) -> None:
    """429 carries ``Retry-After``: the whole seconds until the window ends (Stripe-like), and the
    request made that many seconds later is taken."""
    clock.set(clock.now().replace(minute=59, second=20, microsecond=500_000))
    client = Client(create_app(runtime, settings), client_address=("198.51.100.9", 1000))
    new_tenant(client, runtime, "wait")
    for _ in range(5):
        expect(client.post("/v1/join/wait-partners", json={"email": "r@x.example", "name": "R"}), 202)
    refused = client.post("/v1/join/wait-partners", json={"email": "r@x.example", "name": "R"})
    expect(refused, 429, "rate_limited")
    assert refused.headers["Retry-After"] == "40"  # 39.5 s left in the hour, rounded up
    clock.advance(timedelta(seconds=int(refused.headers["Retry-After"])))
    expect(client.post("/v1/join/wait-partners", json={"email": "r@x.example", "name": "R"}), 202)


# -- browsers on the App's origin (CORS) --------------------------------------------------------


def test_the_join_routes_answer_a_browser_on_the_apps_own_origin(
    client: Client, runtime: Runtime, mail_dir: Path
) -> None:
    """The App's sign-up page calls the join routes from the visitor's browser (the per-IP
    allowance counts the visitor's address): each answers the preflight naming its path's
    methods, and every answer, errors included, carries Access-Control-Allow-Origin."""
    new_tenant(client, runtime, "cors")
    origin = {"Origin": "https://partners.cors.example"}
    for path, methods in (
        ("/v1/join/cors-partners", "GET, OPTIONS, POST"),
        ("/v1/join/cors-partners/confirm", "OPTIONS, POST"),
    ):
        preflight = client.request(
            "OPTIONS", path, headers={**origin, "Access-Control-Request-Method": "POST"}
        )
        assert preflight.status_code == 204 and preflight.content == b""
        assert preflight.headers["access-control-allow-origin"] == "*"
        assert preflight.headers["access-control-allow-methods"] == methods
        assert "content-type" in preflight.headers["access-control-allow-headers"].lower()
    answers = [
        client.request("GET", "/v1/join/cors-partners", headers=origin),
        client.post("/v1/join/cors-partners", json={"email": "c@cors.example", "name": "C"}, headers=origin),
        client.post("/v1/join/cors-partners/confirm", json={"token": "join_nothing"}, headers=origin),
        client.request("GET", "/v1/join/no-such-program", headers=origin),
        client.request("DELETE", "/v1/join/cors-partners", headers=origin),
    ]
    assert [a.status_code for a in answers] == [200, 202, 400, 404, 405]
    for answer in answers:
        assert answer.headers["access-control-allow-origin"] == "*"
        assert "access-control-allow-methods" not in answer.headers
    token = token_in(mailbox(mail_dir)[0])
    confirmed = client.post("/v1/join/cors-partners/confirm", json={"token": token}, headers=origin)
    assert expect(confirmed, 201)["api_key"]["secret"].startswith("key_aff_")
    assert confirmed.headers["access-control-allow-origin"] == "*"
