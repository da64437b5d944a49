"""Lists per decisions 9: newest first, ``limit`` 1..100, and cursors only from the same list."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from refcore.services.runtime import Runtime
from tests.http.world import Activity, Client, Tenant, expect, new_activity, new_session, new_tenant


@dataclass
class Lists:
    a: Tenant
    b: Tenant
    #: A's live clicks on the first program's link, oldest first.
    clicks: list[str]
    #: A live click on a second program of A, by a second affiliate.
    other_program_click: str
    second_affiliate: str
    second_program: str
    test_click: str
    b_click: str
    live: Activity


@pytest.fixture
def lists(client: Client, runtime: Runtime) -> Lists:
    a = new_tenant(client, runtime, "alpha")
    b = new_tenant(client, runtime, "beta")
    clicks = [
        expect(client.post("/v1/capture", a.live_key, {"via": a.link_code}), 201)["click_id"]
        for _ in range(5)
    ]
    program = expect(
        client.post(
            "/v1/programs",
            a.session,
            {
                "app_id": a.app_id,
                "name": "Second",
                "slug": "alpha-second",
                "currency": "usd",
                "commission": {"type": "fixed", "amount": 100},
            },
        ),
        201,
    )
    affiliate = expect(
        client.post(
            "/v1/program-affiliates",
            a.session,
            {"program_id": program["id"], "email": "bo@x.io", "name": "Bo"},
        ),
        201,
    )
    link = expect(client.post(f"/v1/program-affiliates/{affiliate['id']}/links", a.session, {}), 201)
    other = expect(client.post("/v1/capture", a.live_key, {"via": link["code"]}), 201)["click_id"]
    test_click = expect(client.post("/v1/capture", a.test_key, {"via": a.link_code}), 201)["click_id"]
    b_click = expect(client.post("/v1/capture", b.live_key, {"via": b.link_code}), 201)["click_id"]
    live = new_activity(client, a, a.live_key, "one")
    return Lists(
        a=a,
        b=b,
        clicks=clicks,
        other_program_click=other,
        second_affiliate=affiliate["id"],
        second_program=program["id"],
        test_click=test_click,
        b_click=b_click,
        live=live,
    )


def _walk(client: Client, token: str, path: str, limit: int, **query: str) -> list[list[str]]:
    pages: list[list[str]] = []
    cursor: str | None = None
    while True:
        params = dict(query, limit=str(limit))
        if cursor is not None:
            params["starting_after"] = cursor
        body = expect(client.get(path, token, **params), 200)
        assert body["object"] == "list"
        pages.append([item["id"] for item in body["data"]])
        if not body["has_more"]:
            return pages
        cursor = pages[-1][-1]


def test_pages_run_newest_first_without_gaps_or_repeats(client: Client, lists: Lists) -> None:
    pages = _walk(client, lists.a.live_key, "/v1/clicks", 2, program_id=lists.a.program_id)
    ids = [i for page in pages for i in page]
    first_program = [*lists.clicks, lists.live.click_id]
    assert ids == sorted(first_program, reverse=True)
    assert [len(p) for p in pages] == [2, 2, 2]


def test_a_session_names_the_app_and_reads_live_by_default(client: Client, lists: Lists) -> None:
    a = lists.a
    live = [i for page in _walk(client, a.session, "/v1/clicks", 100, app_id=a.app_id) for i in page]
    assert lists.test_click not in live and set(lists.clicks) <= set(live)
    test = expect(client.get("/v1/clicks", a.session, app_id=a.app_id, environment="test"), 200)["data"]
    assert [c["id"] for c in test] == [lists.test_click]
    by_program = expect(client.get("/v1/clicks", a.session, program_id=lists.second_program), 200)["data"]
    assert [c["id"] for c in by_program] == [lists.other_program_click]
    error = expect(client.get("/v1/clicks", a.session), 400, "validation_error")["error"]
    assert error["param"] == "app_id"


def test_the_default_page_is_25_and_the_largest_100(client: Client, runtime: Runtime) -> None:
    a = new_tenant(client, runtime, "many")
    for _ in range(26):
        expect(client.post("/v1/capture", a.live_key, {"via": a.link_code}), 201)
    page = expect(client.get("/v1/clicks", a.live_key), 200)
    assert (len(page["data"]), page["has_more"]) == (25, True)
    page = expect(client.get("/v1/clicks", a.live_key, limit="100"), 200)
    assert (len(page["data"]), page["has_more"]) == (26, False)


def _cursor_error(client: Client, token: str, path: str, cursor: str, **query: str) -> None:
    response = client.get(path, token, starting_after=cursor, **query)
    error = expect(response, 400, "invalid_starting_after")["error"]
    assert error["param"] == "starting_after"


def test_a_cursor_of_another_app_is_invalid(client: Client, lists: Lists) -> None:
    _cursor_error(client, lists.a.live_key, "/v1/clicks", lists.b_click)
    _cursor_error(client, lists.a.session, "/v1/clicks", lists.b_click, app_id=lists.a.app_id)


def test_a_cursor_of_the_other_mode_is_invalid(client: Client, lists: Lists) -> None:
    _cursor_error(client, lists.a.live_key, "/v1/clicks", lists.test_click)
    _cursor_error(client, lists.a.session, "/v1/clicks", lists.test_click, app_id=lists.a.app_id)


def test_a_cursor_of_another_program_is_invalid(client: Client, lists: Lists) -> None:
    _cursor_error(
        client, lists.a.live_key, "/v1/clicks", lists.other_program_click, program_id=lists.a.program_id
    )
    # The same cursor is fine in the list it came from.
    expect(client.get("/v1/clicks", lists.a.live_key, starting_after=lists.other_program_click), 200)


def test_a_cursor_from_another_filter_is_invalid(client: Client, lists: Lists) -> None:
    _cursor_error(
        client,
        lists.a.live_key,
        "/v1/clicks",
        lists.other_program_click,
        program_affiliate_id=lists.a.affiliate_id,
    )
    _cursor_error(
        client,
        lists.a.live_key,
        "/v1/commissions",
        lists.live.commission_id,
        program_affiliate_id=lists.second_affiliate,
    )


def test_a_cursor_of_another_resource_type_is_invalid(client: Client, lists: Lists) -> None:
    key = lists.a.live_key
    _cursor_error(client, key, "/v1/clicks", lists.live.referral_id)
    _cursor_error(client, key, "/v1/referrals", lists.live.click_id)
    _cursor_error(client, key, "/v1/transactions/refunds", lists.live.payment_txn)  # a txn_, but a payment
    _cursor_error(client, key, "/v1/transactions", lists.live.refund_txn)  # a txn_, but a refund
    _cursor_error(client, key, "/v1/commissions", lists.live.dispute_dsp)
    _cursor_error(client, lists.a.session, "/v1/programs", lists.a.affiliate_id, app_id=lists.a.app_id)
    _cursor_error(client, lists.a.session, "/v1/organizations", lists.a.app_id)


def test_a_cursor_that_names_nothing_is_invalid(client: Client, lists: Lists) -> None:
    _cursor_error(client, lists.a.live_key, "/v1/clicks", "clk_00000000000000000000000000")
    _cursor_error(client, lists.a.session, "/v1/organizations", "org_00000000000000000000000000")


@pytest.mark.parametrize(
    "path",
    [
        "/v1/clicks",
        "/v1/customers",
        "/v1/referrals",
        "/v1/transactions",
        "/v1/transactions/refunds",
        "/v1/transactions/disputes",
        "/v1/commissions",
    ],
)
def test_every_activity_list_pages_in_the_key_scope(client: Client, lists: Lists, path: str) -> None:
    pages = _walk(client, lists.a.live_key, path, 1)
    ids = [i for page in pages for i in page]
    assert ids == sorted(ids, reverse=True) and len(set(ids)) == len(ids) and ids
    test_ids = {item["id"] for item in expect(client.get(path, lists.a.test_key), 200)["data"]}
    assert test_ids.isdisjoint(ids)


def test_a_cursor_that_left_its_status_filter_still_pages_on(client: Client, runtime: Runtime) -> None:
    """Approving each page of ``status=disabled`` makes its last affiliate leave the list; the
    next page must still come (it was ``400 invalid_starting_after``), as a Stripe cursor marks
    a place in the list, not a member of it."""
    tenant = new_tenant(client, runtime, "gamma")
    disabled = []
    for n in range(5):
        body = {"program_id": tenant.program_id, "email": f"a{n}@gamma.example", "name": f"A{n}"}
        affiliate = expect(client.post("/v1/program-affiliates", tenant.session, body), 201)
        expect(client.post(f"/v1/program-affiliates/{affiliate['id']}/disable", tenant.session, {}), 200)
        disabled.append(affiliate["id"])
    enabled: list[str] = []
    cursor: str | None = None
    while True:
        query = {"program_id": tenant.program_id, "status": "disabled", "limit": "2"}
        if cursor is not None:
            query["starting_after"] = cursor
        page = expect(client.get("/v1/program-affiliates", tenant.session, **query), 200)
        for affiliate in page["data"]:
            expect(client.post(f"/v1/program-affiliates/{affiliate['id']}/enable", tenant.session, {}), 200)
            enabled.append(affiliate["id"])
        if not page["has_more"]:
            break
        cursor = page["data"][-1]["id"]
    assert enabled == sorted(disabled, reverse=True)
    # The status no longer decides, the program still does: another program's affiliate is no cursor.
    other = new_tenant(client, runtime, "gamma-other")
    _cursor_error(
        client, tenant.session, "/v1/program-affiliates", other.affiliate_id, program_id=tenant.program_id
    )


def test_the_status_of_a_cursor_is_not_checked_even_one_never_in_the_list(
    client: Client, runtime: Runtime
) -> None:
    """docs/api.md, Pagination: refcore keeps no record of the states an object passed through, so
    an affiliate added ``active`` (never ``disabled``) is a cursor of ``status=disabled`` too, and
    the page is the disabled affiliates created before it (probe AL read the docs as narrower)."""
    tenant = new_tenant(client, runtime, "epsilon")

    def add(name: str) -> dict[str, Any]:
        body = {"program_id": tenant.program_id, "email": f"{name}@epsilon.example", "name": name}
        return expect(client.post("/v1/program-affiliates", tenant.session, body), 201)

    first = add("p")
    expect(client.post(f"/v1/program-affiliates/{first['id']}/disable", tenant.session, {}), 200)
    added = add("q")
    assert added["status"] == "active"
    query = {"program_id": tenant.program_id, "status": "disabled", "starting_after": added["id"]}
    page = expect(client.get("/v1/program-affiliates", tenant.session, **query), 200)
    assert [a["id"] for a in page["data"]] == [first["id"]]


def test_a_deleted_link_is_still_a_cursor_of_its_affiliates_links(client: Client, runtime: Runtime) -> None:
    tenant = new_tenant(client, runtime, "delta")
    path = f"/v1/program-affiliates/{tenant.affiliate_id}/links"
    made = [expect(client.post(path, tenant.session, {}), 201)["id"] for _ in range(3)]
    expect(client.delete(f"{path}/{made[-1]}", tenant.session), 200)
    after = expect(client.get(path, tenant.session, starting_after=made[-1]), 200)
    assert [link["id"] for link in after["data"]] == [made[1], made[0], tenant.link_id]


def test_a_user_of_no_organization_lists_no_apps_and_the_query_is_still_checked(
    client: Client, runtime: Runtime
) -> None:
    """``GET /v1/apps`` without ``organization_id`` answered ``400`` ("when you belong to several
    organizations") to a user of none (probe AK), while their organization list was empty."""
    a = new_tenant(client, runtime, "alpha")
    newcomer = new_session(runtime, "newcomer@example.com")

    assert expect(client.get("/v1/organizations", newcomer), 200)["data"] == []
    listed = expect(client.get("/v1/apps", newcomer), 200)
    assert (listed["data"], listed["has_more"]) == ([], False)
    expect(client.get("/v1/apps", newcomer, limit="0"), 400, "validation_error")
    expect(client.get("/v1/apps", newcomer, starting_after=a.app_id), 400, "invalid_starting_after")
    expect(client.get("/v1/apps", newcomer, organization_id=a.organization_id), 404, "organization_not_found")
