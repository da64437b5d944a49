"""Library callers get validation errors, not ValueError, for bad enum filters."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from refcore.clocks import ManualClock
from refcore.errors import ValidationError
from refcore.models import Program
from refcore.services import affiliates, programs, rate_limits, tenancy
from refcore.services.join import JoinPolicy
from refcore.services.principal import Principal
from refcore.services.runtime import Runtime
from refcore.validation import ascii_lower, require_link_code, require_slug
from refcore_memstore import memory_runtime


def _program_with_session() -> tuple[Runtime, Principal, Program]:
    rt = memory_runtime(clock=ManualClock())
    _, token = tenancy.create_session(rt, "dev@example.com")
    session = tenancy.authenticate(rt, token)
    org = tenancy.create_organization(rt, session, "Org")
    app = tenancy.create_app(rt, session, org.id, "App")
    program = programs.create_program(
        rt,
        session,
        {
            "app_id": app.id,
            "name": "P",
            "slug": "p",
            "currency": "usd",
            "commission": {"type": "percent", "bps": 1000},
        },
    )
    return rt, session, program


def test_decisions_8_unknown_affiliate_status_filter_is_a_validation_error() -> None:
    rt, session, program = _program_with_session()
    with pytest.raises(ValidationError) as caught:
        affiliates.list_program_affiliates(rt, session, program.id, status="sleeping")
    assert caught.value.param == "status"


@pytest.mark.parametrize(
    ("check", "value"),
    [
        ("email", "a@b.co\n"),
        ("slug", "abc\n"),
    ],
)
def test_decisions_8_a_trailing_newline_is_not_a_valid_value(check: str, value: str) -> None:
    from refcore import validation

    validator = {"email": validation.require_email, "slug": validation.require_slug}[check]
    with pytest.raises(ValidationError):
        validator(value)


@pytest.mark.parametrize(
    "address",
    [
        "ally,boss@x.example",  # read by a To header as two recipients
        "<ally>@x.example",
        "ally@<x.example>",
        '"ally"@x.example',
        "ally(comment)@x.example",
        "ally;boss@x.example",
        "ally:boss@x.example",
        "al[ly]@x.example",
        "al\\ly@x.example",
        "al\x07ly@x.example",
        "al\x7fly@x.example",
        "ally@x",
        "ally@.x.example",
        "ally@x..example",
        "ally@x.example.",
        ".ally@x.example",
        "ally.@x.example",
        "al..ly@x.example",
        "ally@@x.example",
        "ally boss@x.example",
    ],
)
def test_an_e_mail_address_with_a_header_special_or_an_empty_dot_run_is_refused(address: str) -> None:
    from refcore import validation

    with pytest.raises(ValidationError) as caught:
        validation.require_email(address)
    assert caught.value.param == "email"


@pytest.mark.parametrize(
    "address",
    ["a@b.co", "ally.boss+tag@mail.x.example", "o'neil@x.example", "élodie@exemple.fr", "a_b-c@x-y.example"],
)
def test_an_ordinary_e_mail_address_is_accepted_as_it_is(address: str) -> None:
    from refcore import validation

    assert validation.require_email(address) == address


@pytest.mark.parametrize(
    "address",
    [
        "a\u200b@b.example",  # a zero-width space: reads as a@b.example
        "a@b\u200b.example",
        "a\u2060@b.example",  # WORD JOINER
        "a@\uff42.example",  # full-width b: not taken as b.example
        "a@b\u2800.example",  # BRAILLE PATTERN BLANK
        "a@\u212a.example",  # KELVIN SIGN, whose lower case is k
        "a@\u0301b.example",  # a label that starts with a combining mark
        "k3@\u2165.example",  # a Roman numeral: UTS 46 would read vi
        # Compatibility letters before the @ too (probe AI): NFKC would fold them into others.
        "\uff42ob@example.com",  # full-width b: not bob@
        "\u2165bob@example.com",  # a Roman numeral six: not vibob@
        "\ufb01le@example.com",  # the ligature fi: not file@
    ],
)
def test_an_e_mail_address_outside_ascii_that_names_no_mailbox_is_refused(address: str) -> None:
    """Probe Q: these were stored, two affiliates of one program could share a mailbox under
    addresses that read the same, and the mailer sent such domains raw under SMTPUTF8."""
    from refcore import validation

    with pytest.raises(ValidationError) as caught:
        validation.require_email(address, param="payout_email")
    assert caught.value.param == "payout_email"


@pytest.mark.parametrize(
    "address",
    ["sam@b\u00fccher.example", "Sam@B\u00dcCHER.example", "sam@stra\u00dfe.de", "s\u00e4m@example.com"],
)
def test_an_internationalised_address_is_accepted_and_kept_as_sent(address: str) -> None:
    from refcore import validation

    assert validation.require_email(address) == address


@pytest.mark.parametrize(
    ("domain", "ascii"),
    [
        ("b\u00fccher.example", "xn--bcher-kva.example"),
        ("B\u00dcCHER.Example", "xn--bcher-kva.example"),  # case means nothing in a domain
        ("stra\u00dfe.de", "xn--strae-oqa.de"),  # not strasse.de (IDNA 2003)
        ("\uff42.example", None),  # not b.example (UTS 46)
        ("\u212a.example", None),  # not k.example (lower-casing)
        ("a\u200db.example", None),  # not ab.example
    ],
)
def test_idna_ascii_domain_writes_idna_2008_and_maps_no_letter_onto_another(
    domain: str, ascii: str | None
) -> None:
    from refcore import validation

    assert validation.idna_ascii_domain(domain) == ascii


def test_decisions_2_link_code_with_a_trailing_newline_is_refused() -> None:
    rt, session, program = _program_with_session()
    affiliate = affiliates.add_program_affiliate(rt, session, program.id, "a@example.com", "A")
    with pytest.raises(ValidationError) as caught:
        affiliates.create_link(rt, session, affiliate.id, "abc\n")
    assert caught.value.param == "code"


def test_a_rate_limit_window_is_at_most_a_day_so_its_counters_can_be_pruned() -> None:
    """``rate_limits.LONGEST_WINDOW``: the store prunes counters of windows that began before
    ``forgettable_before(now)``, which must have ended whatever the window."""
    now = datetime(2026, 2, 10, 5, 30, tzinfo=UTC)
    assert rate_limits.window_start(now, rate_limits.LONGEST_WINDOW) == datetime(2026, 2, 10, tzinfo=UTC)
    assert rate_limits.forgettable_before(now) < now - rate_limits.LONGEST_WINDOW
    with pytest.raises(ValueError, match="at most a day"):
        rate_limits.window_start(now, rate_limits.LONGEST_WINDOW + timedelta(seconds=1))
    with pytest.raises(ValueError, match="at most a day"):
        JoinPolicy(window=timedelta(days=2))
    with pytest.raises(ValueError, match="at least one second"):
        JoinPolicy(window=timedelta(0))
    assert JoinPolicy(window=timedelta(days=1)).window == timedelta(days=1)


@pytest.mark.parametrize("look_alike", ["\u212akk", "KK\u212a", "ally\u212a"])
def test_decisions_2_link_code_refuses_the_kelvin_sign_that_lower_cases_to_k(look_alike: str) -> None:
    """``"\u212a".lower() == "k"``: lower-casing before the check had stored ``kkk``."""
    with pytest.raises(ValidationError) as refused:
        require_link_code(look_alike)
    assert refused.value.param == "code"
    assert require_link_code(look_alike.replace("\u212a", "K")) == look_alike.replace("\u212a", "k").lower()


@pytest.mark.parametrize(("sent", "stored"), [("UpperSlug", "upperslug"), ("ACME-2", "acme-2"), ("a", "a")])
def test_decisions_a_slug_is_accepted_in_any_case_and_kept_lower_case(sent: str, stored: str) -> None:
    """Probe J: ``UpperSlug`` had been refused, though slugs, like codes, are taken in any case."""
    assert require_slug(sent) == stored


@pytest.mark.parametrize("look_alike", ["\u212akk", "Acme-\u212a", "\u0130stanbul"])
def test_decisions_a_slug_refuses_letters_that_lower_case_into_ascii(look_alike: str) -> None:
    """``"\u212a".lower() == "k"``: a look-alike must not become the slug of another program."""
    with pytest.raises(ValidationError) as refused:
        require_slug(look_alike)
    assert refused.value.param == "slug"


def test_ascii_lower_leaves_text_that_is_not_ascii_as_it_is() -> None:
    assert ascii_lower("Ally-Link") == "ally-link"
    assert ascii_lower("\u212akk") == "\u212akk"
    assert ascii_lower("\u0130x") == "\u0130x"


@pytest.mark.parametrize(
    ("values", "param"), [({"hold_dayz": 3}, "hold_dayz"), ({"status": "paused"}, "status")]
)
def test_decisions_8_a_program_created_with_a_field_it_does_not_have_is_refused(
    values: dict[str, object], param: str
) -> None:
    """A library caller's misspelt ``hold_dayz`` had been dropped: the program got 30 days."""
    rt, session, program = _program_with_session()
    body = {
        "app_id": program.app_id,
        "name": "Q",
        "slug": "q",
        "currency": "usd",
        "commission": {"type": "percent", "bps": 1000},
        **values,
    }
    with pytest.raises(ValidationError) as refused:
        programs.create_program(rt, session, body)
    assert refused.value.param == param
    with pytest.raises(ValidationError):
        programs.create_program(rt, session, None)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("address", "key"),
    [
        ("me@xn--bcher-kva.example", "me@b\u00fccher.example"),
        ("Me@XN--BCHER-KVA.Example", "me@b\u00fccher.example"),
        ("me@b\u00fccher.example", "me@b\u00fccher.example"),
        ("me@mail.xn--strae-oqa.de", "me@mail.stra\u00dfe.de"),
        ("me@xn--zz.example", "me@xn--zz.example"),  # no A-label IDNA 2008 decodes: left
        ("xn--me@example.com", "xn--me@example.com"),  # only the domain is IDNA's
    ],
)
def test_an_address_key_names_an_internationalised_domain_in_unicode(address: str, key: str) -> None:
    """Probe AI: the two spellings of one mailbox were two affiliates of a program, and a customer
    under one was not the affiliate under the other referring themself."""
    from refcore import validation

    assert validation.address_key(address) == key
