"""Setup status and overview against a scenario whose answers were worked out by hand.

The scenario (program: 20 % commission, hold 30 days, USD; the clock starts 2026-01-01 00:00 UTC):

=====================  =======================================================================
2026-01-02 10:00 Live  3 clicks on the link; A identified from click 1 (attributed); B identified
                       from click 2 with the affiliate's own e-mail (self-referral: unattributed);
                       payments A1 = 10000 (earns floor(10000 * 0.2) = 2000) and B1 = 5000 (0).
2026-01-02 10:00 Test  1 click; D identified (attributed); payment D1 = 7000 (earns 1400).
2026-01-10 12:00 Live  1 click; C identified from click 3 (attributed); payment C1 = 2500 (earns
                       500); refund of 2000 on A1: the target becomes
                       2000 - floor(2000 * 2000 / 10000) = 1600, so a reversal of -400;
                       payment B2 = 3000 (unattributed, 0).
2026-02-15 00:00 Live  mark-paid: available = 2000 - 400 (A1's entries, available 2026-02-01)
                       + 500 (C1's, available 2026-02-09) = 2100, paid in one payout.
=====================  =======================================================================
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from attrs import evolve

from refcore.clocks import ManualClock
from refcore.models import RevenueSource
from refcore.services.runtime import Runtime, Tx
from refcore_http.settings import MAX_SESSION_TTL_HOURS, Settings
from tests.http.world import JSON, Client, Tenant, expect, new_tenant

JAN_2 = datetime(2026, 1, 2, 10, tzinfo=UTC)
JAN_10 = datetime(2026, 1, 10, 12, tzinfo=UTC)
FEB_15 = datetime(2026, 2, 15, tzinfo=UTC)


def _click(client: Client, tenant: Tenant, key: str | None = None) -> str:
    return str(expect(client.post("/v1/capture", key, {"via": tenant.link_code}), 201)["click_id"])


def _identify(client: Client, key: str, click_id: str, customer: str, email: str | None = None) -> JSON:
    body = {"click_id": click_id, "external_customer_id": customer}
    if email is not None:
        body["email"] = email
    return expect(client.post("/v1/identify", key, body), 201)


def _pay(client: Client, tenant: Tenant, key: str, customer_id: str, payment_id: str, amount: int) -> JSON:
    body = {
        "payment_id": payment_id,
        "customer_id": customer_id,
        "program_id": tenant.program_id,
        "amount": amount,
        "currency": "usd",
    }
    return expect(client.post("/v1/transactions", key, body), 201)


@pytest.fixture
def settings(settings: Settings) -> Settings:
    """The scenario runs from January into mid-February on the session it began with. Sessions
    last 30 days by default (``REFCORE_SESSION_TTL_HOURS``), so here they get the longest
    lifetime the setting allows."""
    return evolve(settings, session_ttl_hours=MAX_SESSION_TTL_HOURS)


@pytest.fixture
def acme(client: Client, runtime: Runtime) -> Tenant:
    return new_tenant(client, runtime, "acme")


def _scenario(client: Client, clock: ManualClock, acme: Tenant) -> None:
    live, test = acme.live_key, acme.test_key
    clock.set(JAN_2)
    clicks = [_click(client, acme) for _ in range(3)]
    a = _identify(client, live, clicks[0], "A")
    b = _identify(client, live, clicks[1], "B", email="ally@acme.example")
    assert (a["attributed"], b["attributed"]) == (True, False)
    _pay(client, acme, live, a["customer_id"], "A1", 10000)
    _pay(client, acme, live, b["customer_id"], "B1", 5000)
    d = _identify(client, test, _click(client, acme, test), "D")
    _pay(client, acme, test, d["customer_id"], "D1", 7000)

    clock.set(JAN_10)
    _click(client, acme)
    c = _identify(client, live, clicks[2], "C")
    assert c["attributed"] is True
    _pay(client, acme, live, c["customer_id"], "C1", 2500)
    expect(
        client.post(
            "/v1/transactions/refunds", live, {"refund_id": "R1", "payment_id": "A1", "amount": 2000}
        ),
        201,
    )
    _pay(client, acme, live, b["customer_id"], "B2", 3000)

    clock.set(FEB_15)
    paid = expect(client.post(f"/v1/ready-payouts/{acme.affiliate_id}/mark-paid", acme.session), 200)
    assert paid["amount"] == 2100


def _overview(client: Client, tenant: Tenant, **query: str) -> JSON:
    return expect(client.get(f"/v1/apps/{tenant.app_id}/overview", tenant.session, **query), 200)


def _money(body: JSON) -> dict[str, int]:
    (usd,) = body["currencies"]
    assert usd["currency"] == "usd"
    return {k: v for k, v in usd.items() if k != "currency"}


def test_overview_of_january_live(client: Client, clock: ManualClock, acme: Tenant) -> None:
    _scenario(client, clock, acme)
    body = _overview(client, acme, **{"from": "2026-01-01T00:00:00Z", "to": "2026-02-01T00:00:00Z"})
    assert (body["object"], body["livemode"]) == ("app_overview", True)
    assert (body["from"], body["to"]) == ("2026-01-01T00:00:00.000Z", "2026-02-01T00:00:00.000Z")
    # 3 + 1 clicks; A, B, C identified, of whom A and C are attributed.
    assert (body["clicks"], body["referrals"], body["attributed_customers"]) == (4, 3, 2)
    assert _money(body) == {
        "revenue": 20500,  # 10000 + 5000 + 2500 + 3000
        "attributed_revenue": 12500,  # 10000 + 2500
        "commissions_earned": 2500,  # 2000 + 500
        "commissions_reversed": 400,  # the refund's reversal
        "commissions_reinstated": 0,
        "commissions_paid": 0,  # paid on Feb 15, after this period
    }


def test_overview_of_a_later_window_live(client: Client, clock: ManualClock, acme: Tenant) -> None:
    _scenario(client, clock, acme)
    body = _overview(client, acme, environment="live", **{"from": "2026-01-05", "to": "2026-03-01"})
    # Only the Jan 10 activity and the Feb 15 payout fall in [Jan 5, Mar 1).
    assert (body["clicks"], body["referrals"], body["attributed_customers"]) == (1, 1, 1)
    assert _money(body) == {
        "revenue": 5500,  # 2500 + 3000
        "attributed_revenue": 2500,
        "commissions_earned": 500,
        "commissions_reversed": 400,  # the refund is in this window though A1 was not
        "commissions_reinstated": 0,
        "commissions_paid": 2100,  # 2000 - 400 + 500
    }


def test_the_period_includes_its_start_and_excludes_its_end(
    client: Client, clock: ManualClock, acme: Tenant
) -> None:
    _scenario(client, clock, acme)
    before = _overview(client, acme, **{"from": "2026-01-01T00:00:00Z", "to": "2026-01-10T12:00:00Z"})
    assert (before["clicks"], before["referrals"]) == (3, 2)  # the Jan 10 12:00 events are excluded
    assert _money(before)["revenue"] == 15000 and _money(before)["commissions_reversed"] == 0
    after = _overview(client, acme, **{"from": "2026-01-10T12:00:00Z", "to": "2026-01-10T12:00:00.001Z"})
    assert (after["clicks"], after["referrals"]) == (1, 1)  # and included from their own moment
    assert _money(after)["revenue"] == 5500


def test_the_period_is_taken_at_the_millisecond_precision_it_is_echoed_at(
    client: Client, clock: ManualClock, acme: Tenant
) -> None:
    """A click at 10:00:00.000300 is shown at .000Z; a period sent as ``from=…00.0005`` is
    echoed as .000Z, so it must count that click, and one ending at ``to=…00.0009`` must not."""
    clock.set(datetime(2026, 1, 2, 10, 0, 0, 300, tzinfo=UTC))
    _click(client, acme)
    starting = _overview(client, acme, **{"from": "2026-01-02T10:00:00.0005Z", "to": "2026-01-03"})
    assert (starting["from"], starting["clicks"]) == ("2026-01-02T10:00:00.000Z", 1)
    ending = _overview(client, acme, **{"from": "2026-01-02", "to": "2026-01-02T10:00:00.0009Z"})
    assert (ending["to"], ending["clicks"]) == ("2026-01-02T10:00:00.000Z", 0)
    # Two moments within one millisecond are one moment: the period between them is empty.
    expect(
        client.get(
            f"/v1/apps/{acme.app_id}/overview",
            acme.session,
            **{"from": "2026-01-02T10:00:00.0001Z", "to": "2026-01-02T10:00:00.0009Z"},
        ),
        400,
        "validation_error",
    )


def test_overview_of_test_mode(client: Client, clock: ManualClock, acme: Tenant) -> None:
    _scenario(client, clock, acme)
    body = _overview(client, acme, environment="test", **{"from": "2026-01-01", "to": "2026-02-01"})
    assert body["livemode"] is False
    assert (body["clicks"], body["referrals"], body["attributed_customers"]) == (1, 1, 1)
    assert _money(body) == {
        "revenue": 7000,
        "attributed_revenue": 7000,
        "commissions_earned": 1400,  # floor(7000 * 0.2)
        "commissions_reversed": 0,
        "commissions_reinstated": 0,
        "commissions_paid": 0,  # Test mode never pays out
    }
    # A Test key reads its own mode without saying so, and may not ask for the other.
    by_key = expect(
        client.get(
            f"/v1/apps/{acme.app_id}/overview", acme.test_key, **{"from": "2026-01-01", "to": "2026-02-01"}
        ),
        200,
    )
    assert by_key == body
    expect(
        client.get(f"/v1/apps/{acme.app_id}/overview", acme.test_key, environment="live"),
        409,
        "mode_mismatch",
    )


def test_the_default_period_is_the_last_30_days_up_to_now(
    client: Client, clock: ManualClock, acme: Tenant
) -> None:
    _scenario(client, clock, acme)
    body = _overview(client, acme)
    # Now is Feb 15 00:00: the default period starts Jan 16 00:00 and includes this moment, so
    # it holds the payout made just now and none of the January activity.
    assert (body["from"], body["to"]) == ("2026-01-16T00:00:00.000Z", "2026-02-15T00:00:00.000Z")
    assert (body["clicks"], body["referrals"], body["attributed_customers"]) == (0, 0, 0)
    assert _money(body)["commissions_paid"] == 2100
    assert _money(body)["revenue"] == 0


def test_the_default_period_starts_no_earlier_than_1970(client: Client, acme: Tenant) -> None:
    """A period may start no earlier than 1970-01-01 (docs/api.md); nor does the default one,
    whose start had been 30 days before any ``to`` (probe H: a ``from`` in December 1969)."""
    body = _overview(client, acme, to="1970-01-02")
    assert (body["from"], body["to"]) == ("1970-01-01T00:00:00.000Z", "1970-01-02T00:00:00.000Z")


def test_overview_refuses_a_bad_period(client: Client, acme: Tenant) -> None:
    path = f"/v1/apps/{acme.app_id}/overview"
    expect(client.get(path, acme.session, **{"from": "yesterday"}), 400, "validation_error")
    expect(
        client.get(path, acme.session, **{"from": "2026-02-01", "to": "2026-01-01"}), 400, "validation_error"
    )
    expect(client.get(path, acme.session, environment="staging"), 400, "validation_error")


def test_an_empty_period_is_refused_naming_only_what_was_sent(client: Client, acme: Tenant) -> None:
    """Probe AK: a ``to`` alone at the very start of 1970 was told "from must be before to"."""
    path = f"/v1/apps/{acme.app_id}/overview"
    for query, param, message in (
        ({"to": "1970-01-01T00:00:00.000Z"}, "to", "to must be after 1970-01-01T00:00:00.000Z"),
        ({"from": "2999-01-01"}, "from", "from must be before now, the default to"),
        ({"from": "2026-02-01", "to": "2026-02-01"}, "from", "from must be before to"),
    ):
        error = expect(client.get(path, acme.session, **query), 400, "validation_error")["error"]
        assert error["param"] == param and error["message"].startswith(message), (query, error)


def test_setup_status_before_anything_happened(client: Client, acme: Tenant) -> None:
    body = expect(client.get(f"/v1/apps/{acme.app_id}/setup-status", acme.session), 200)
    assert (body["object"], body["app_id"]) == ("setup_status", acme.app_id)
    for mode, livemode in (("test", False), ("live", True)):
        status = body[mode]
        assert status == {
            "livemode": livemode,
            "complete": False,
            "revenue_source": {"source": None, "locked": False},
            "processor": {"connected": False},
            "webhook": {"configured": False, "disabled": False},
            "first_click_at": None,
            "first_identify_at": None,
            "first_attributed_payment_at": None,
            "unattributed_payments": 0,
            "alarms": [],
        }


def test_setup_status_after_the_scenario(client: Client, clock: ManualClock, acme: Tenant) -> None:
    _scenario(client, clock, acme)
    expect(
        client.request(
            "PUT", f"/v1/apps/{acme.app_id}/webhook", acme.session, json={"url": "https://hooks.example/in"}
        ),
        201,
    )
    body = expect(client.get(f"/v1/apps/{acme.app_id}/setup-status", acme.session), 200)
    live, test = body["live"], body["test"]
    assert live["revenue_source"] == {
        "source": "api",
        "locked": True,
    }  # locked by A1, a positive Live payment
    assert test["revenue_source"] == {"source": "api", "locked": False}  # Test activity never locks
    for status in (live, test):
        assert status["processor"] == {"connected": False}
        assert status["webhook"] == {"configured": True, "disabled": False}
        assert status["first_click_at"] == "2026-01-02T10:00:00.000Z"
        assert status["first_identify_at"] == "2026-01-02T10:00:00.000Z"
        assert status["first_attributed_payment_at"] == "2026-01-02T10:00:00.000Z"
        assert status["complete"] is True
    # B1 and B2 are B's payments, and B is a self-referral: 2 unattributed Live payments.
    assert live["unattributed_payments"] == 2
    (alarm,) = live["alarms"]
    assert (alarm["code"], alarm["count"]) == ("unattributed_payments", 2)
    assert test["unattributed_payments"] == 0 and test["alarms"] == []


def test_an_app_key_sees_the_setup_status_of_its_own_mode(
    client: Client, clock: ManualClock, acme: Tenant
) -> None:
    _scenario(client, clock, acme)
    by_live = expect(client.get(f"/v1/apps/{acme.app_id}/setup-status", acme.live_key), 200)
    assert by_live["test"] is None and by_live["live"]["unattributed_payments"] == 2
    by_test = expect(client.get(f"/v1/apps/{acme.app_id}/setup-status", acme.test_key), 200)
    assert by_test["live"] is None and by_test["test"]["complete"] is True


def test_another_tenant_sees_neither(client: Client, runtime: Runtime, acme: Tenant) -> None:
    beta = new_tenant(client, runtime, "beta")
    for path in (f"/v1/apps/{acme.app_id}/setup-status", f"/v1/apps/{acme.app_id}/overview"):
        expect(client.get(path, beta.session), 404, "app_not_found")
        expect(client.get(path, beta.live_key), 404, "app_not_found")


def _set_app(runtime: Runtime, app_id: str, **changes: object) -> None:
    """The processor integration (issue 8) keeps these App fields; here they are set directly."""

    def work(tx: Tx) -> None:
        app = tx.uow.apps.get(app_id, for_update=True)
        assert app is not None
        tx.uow.apps.replace(evolve(app, **changes))  # type: ignore[arg-type]

    runtime.transaction(work)


def _live_status(client: Client, tenant: Tenant) -> JSON:
    return dict(expect(client.get(f"/v1/apps/{tenant.app_id}/setup-status", tenant.session), 200)["live"])


def test_a_connected_processor_is_the_revenue_source_before_any_payment(
    client: Client, runtime: Runtime, acme: Tenant
) -> None:
    _set_app(runtime, acme.app_id, processor_connected_live=True)
    status = _live_status(client, acme)
    assert status["processor"] == {"connected": True}
    assert status["revenue_source"] == {"source": "processor", "locked": False}
    assert status["alarms"] == []


def test_revenue_locked_to_a_disconnected_processor_raises_an_alarm(
    client: Client, runtime: Runtime, acme: Tenant
) -> None:
    _set_app(
        runtime, acme.app_id, live_revenue_source=RevenueSource.PROCESSOR, processor_connected_live=False
    )
    status = _live_status(client, acme)
    assert status["revenue_source"] == {"source": "processor", "locked": True}
    assert [a["code"] for a in status["alarms"]] == ["processor_disconnected"]


def test_a_processor_connected_after_api_revenue_locked_raises_an_alarm(
    client: Client, runtime: Runtime, acme: Tenant
) -> None:
    _set_app(runtime, acme.app_id, live_revenue_source=RevenueSource.API, processor_connected_live=True)
    status = _live_status(client, acme)
    assert status["revenue_source"] == {"source": "api", "locked": True}
    assert [a["code"] for a in status["alarms"]] == ["processor_unused"]
