"""The affiliate's side of payouts: payout details, balance and payout requests (affiliate keys)."""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest

from refcore.clocks import ManualClock
from refcore.errors import RefcoreError
from refcore.models.payout import PayoutMethod, PayoutRequestStatus
from refcore.services import payout_accounts, payout_requests, payouts
from refcore.services.principal import Principal
from refcore.services.runtime import Runtime
from tests.contract.scenario import build_world
from tests.payouts.world import PayoutWorld, affiliate_key, build_payout_world


@pytest.fixture
def key(pw: PayoutWorld) -> Principal:
    return affiliate_key(pw.rt, pw.world.affiliate)[0]


def _fails(call: Any) -> tuple[str, str | None]:
    with pytest.raises(RefcoreError) as caught:
        call()
    return caught.value.code, caught.value.param


# -- payout details --------------------------------------------------------------------------


def test_an_affiliate_saves_and_reads_its_payout_details(pw: PayoutWorld, key: Principal) -> None:
    program = pw.world.program.id
    saved = payout_accounts.save_payout_details(
        pw.rt, key, program, {"method": "paypal", "email": "pat@paypal.example"}
    )
    assert payout_accounts.get_payout_details(pw.rt, key, program) == saved
    again = payout_accounts.save_payout_details(
        pw.rt,
        key,
        program,
        {"method": "bank_transfer", "account_holder": "Pat Partner", "iban": "DE89 3704 0044 0532 0130 00"},
    )
    assert (again.id, again.method, again.email, again.iban) == (
        saved.id,
        PayoutMethod.BANK_TRANSFER,
        None,
        "DE89370400440532013000",
    )


def test_payout_details_are_not_found_until_saved(pw: PayoutWorld, key: Principal) -> None:
    call = lambda: payout_accounts.get_payout_details(pw.rt, key, pw.world.program.id)  # noqa: E731
    assert _fails(call) == ("payout_details_not_found", None)


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"method": "paypal"}, "email"),
        ({"method": "paypal", "email": "not-an-email"}, "email"),
        ({"method": "bank_transfer", "account_holder": "Pat"}, "iban"),
        ({"method": "bank_transfer", "account_holder": "Pat", "iban": "123"}, "iban"),
        ({"method": "other"}, "notes"),
        ({"method": "cheque"}, "method"),
        ({"method": "paypal", "email": "p@example.com", "swift": "X"}, "swift"),
    ],
)
def test_payout_details_are_validated_per_method(
    pw: PayoutWorld, key: Principal, body: dict[str, Any], param: str
) -> None:
    call = lambda: payout_accounts.save_payout_details(pw.rt, key, pw.world.program.id, body)  # noqa: E731
    assert _fails(call) == ("validation_error", param)


def test_an_affiliate_key_sees_only_its_own_program(pw: PayoutWorld, key: Principal) -> None:
    other_program = pw.world.add_program()
    call = lambda: payout_accounts.get_payout_balance(pw.rt, key, other_program.id)  # noqa: E731
    assert _fails(call) == ("program_not_found", None)


def test_only_the_affiliate_saves_payout_details(pw: PayoutWorld) -> None:
    call = lambda: payout_accounts.save_payout_details(  # noqa: E731
        pw.rt, pw.world.session, pw.world.program.id, {"method": "other", "notes": "cash"}
    )
    assert _fails(call)[0] == "forbidden"


def test_the_affiliate_reads_its_balance_with_its_key(pw: PayoutWorld, key: Principal) -> None:
    pw.earn(10_000)
    view = payout_accounts.get_payout_balance(pw.rt, key, pw.world.program.id)
    assert (view.currency, view.balance.pending, view.balance.available) == ("usd", 2000, 0)


# -- payout requests -------------------------------------------------------------------------


def test_a_request_asks_for_the_current_available_balance(pw: PayoutWorld, key: Principal) -> None:
    pw.earn(10_000)
    assert _fails(lambda: pw.request(key)) == ("state_conflict", None)
    pw.past_hold()
    request = pw.request(key)
    assert (request.amount, request.status) == (2000, PayoutRequestStatus.OPEN)
    assert _fails(lambda: pw.request(key)) == ("state_conflict", None)


def test_a_request_below_the_programs_minimum_payout_is_refused(rt: Runtime, clock: ManualClock) -> None:
    """No payout could pay it (batches and mark-paid need the minimum): it had stayed open
    until the Developer declined it."""
    pw = build_payout_world(rt, clock, minimum_payout=2001)
    key = affiliate_key(pw.rt, pw.world.affiliate)[0]
    pw.earn(10_000)
    pw.past_hold()
    code, _ = _fails(lambda: pw.request(key))
    assert code == "state_conflict"
    assert payout_requests.list_payout_requests(pw.rt, key).data == []
    pw.earn(5)  # 2001 available: enough
    pw.past_hold()
    assert pw.request(key).amount == 2001


def test_a_developer_declines_an_open_request_once(pw: PayoutWorld, key: Principal) -> None:
    pw.earn(10_000)
    pw.past_hold()
    request = pw.request(key)
    declined = payout_requests.decline_payout_request(pw.rt, pw.world.session, request.id)
    assert declined.status is PayoutRequestStatus.DECLINED and declined.decided_at is not None
    again = lambda: payout_requests.decline_payout_request(pw.rt, pw.world.session, request.id)  # noqa: E731
    assert _fails(again) == ("state_conflict", None)
    assert _fails(lambda: payout_requests.decline_payout_request(pw.rt, key, request.id))[0] == "forbidden"
    assert pw.request(key).status is PayoutRequestStatus.OPEN  # a new one may be opened


@pytest.mark.parametrize("end", ["cancel", "failed", "succeeded"])
def test_a_request_declined_while_a_batch_holds_its_money_names_no_payout_whatever_that_payout_becomes(
    pw: PayoutWorld, key: Principal, end: str
) -> None:
    """``payout_execution_id`` says which payout pays a request; a declined one is paid by none.
    It had kept the batch's payout named at its decline, and then named a payout that failed or
    was canceled (found by a probe racing declines with batches)."""
    pw.earn(10_000)
    pw.past_hold()
    request = pw.request(key)
    batch = pw.prepare()
    declined = payout_requests.decline_payout_request(pw.rt, pw.world.session, request.id)
    assert (declined.status, declined.payout_execution_id) == (PayoutRequestStatus.DECLINED, None)
    if end == "cancel":
        payouts.cancel_batch(pw.rt, pw.world.session, batch.id)
    else:
        [execution] = pw.dispatch(batch.id).executions
        pw.report(execution.id, end, "run-1")
    [stored] = payout_requests.list_payout_requests(pw.rt, key).data
    assert (stored.status, stored.payout_execution_id) == (PayoutRequestStatus.DECLINED, None)


def test_the_next_succeeded_payout_closes_the_open_request_as_paid(pw: PayoutWorld, key: Principal) -> None:
    pw.earn(10_000)
    pw.past_hold()
    request = pw.request(key)
    execution = pw.mark_paid()
    [listed] = payout_requests.list_payout_requests(pw.rt, key).data
    assert (listed.id, listed.status, listed.payout_execution_id) == (
        request.id,
        PayoutRequestStatus.PAID,
        execution.id,
    )


def _request_of(pw: PayoutWorld, key: Principal, request_id: str) -> Any:
    return next(r for r in payout_requests.list_payout_requests(pw.rt, key).data if r.id == request_id)


def test_a_batch_pays_the_request_made_before_it_and_only_that_one(pw: PayoutWorld, key: Principal) -> None:
    """A request made while a payout is in flight asks for money that came later: that payout's
    success had closed it as paid, and the money it asked for stayed unpaid, out of the queue."""
    pw.earn(10_000)
    pw.past_hold()
    before = pw.request(key)
    batch = pw.prepare()
    [execution] = pw.dispatch(batch.id).executions
    assert _request_of(pw, key, before.id).payout_execution_id == execution.id  # promised, still open
    pw.report(execution.id, "succeeded", "first")
    assert _request_of(pw, key, before.id).status is PayoutRequestStatus.PAID

    pw.earn(5_000)
    pw.past_hold()
    second_batch = pw.prepare()  # freezes those 1,000
    pw.earn(5_000)
    pw.past_hold()
    during = pw.request(key)  # for the 1,000 earned since
    assert (during.amount, during.payout_execution_id) == (1000, None)
    [in_flight] = pw.dispatch(second_batch.id).executions
    pw.report(in_flight.id, "succeeded", "second")
    assert _request_of(pw, key, during.id).status is PayoutRequestStatus.OPEN
    paid_later = pw.mark_paid()
    closed = _request_of(pw, key, during.id)
    assert (closed.status, closed.payout_execution_id) == (PayoutRequestStatus.PAID, paid_later.id)


def test_a_failed_payout_leaves_its_request_open_for_the_next(pw: PayoutWorld, key: Principal) -> None:
    pw.earn(10_000)
    pw.past_hold()
    request = pw.request(key)
    batch = pw.prepare()
    [execution] = pw.dispatch(batch.id).executions
    pw.report(execution.id, "failed", "bounced")
    reopened = _request_of(pw, key, request.id)
    assert (reopened.status, reopened.payout_execution_id) == (PayoutRequestStatus.OPEN, None)
    paid = pw.mark_paid()
    assert _request_of(pw, key, request.id).payout_execution_id == paid.id


def test_a_filter_naming_another_tenants_affiliate_is_not_found(pw: PayoutWorld, key: Principal) -> None:
    stranger = build_world(pw.rt, pw.world.clock)
    for named in (stranger.affiliate.id, "aff_00000000000000000000000000"):
        for principal, program in ((pw.world.session, pw.world.program.id), (pw.live_key, None)):
            with pytest.raises(RefcoreError) as refused:
                payout_requests.list_payout_requests(
                    pw.rt, principal, program_id=program, program_affiliate_id=named
                )
            assert refused.value.code == "program_affiliate_not_found"
    own = payout_requests.list_payout_requests(pw.rt, pw.live_key, program_affiliate_id=pw.world.affiliate.id)
    assert own.data == []


def test_requests_are_listed_per_caller(pw: PayoutWorld, key: Principal) -> None:
    other = pw.world.add_affiliate()
    other_key = affiliate_key(pw.rt, other)[0]
    pw.earn(10_000)
    pw.earn(10_000, affiliate=other)
    pw.past_hold()
    mine, theirs = pw.request(key), pw.request(other_key)
    assert [r.id for r in payout_requests.list_payout_requests(pw.rt, key).data] == [mine.id]
    developer = payout_requests.list_payout_requests(pw.rt, pw.world.session, program_id=pw.world.program.id)
    assert [r.id for r in developer.data] == [theirs.id, mine.id]
    session_without_program = lambda: payout_requests.list_payout_requests(pw.rt, pw.world.session)  # noqa: E731
    assert _fails(session_without_program) == ("validation_error", "program_id")
    by_key = payout_requests.list_payout_requests(pw.rt, pw.live_key, status="open")
    assert len(by_key.data) == 2


def test_the_librarys_payout_balance_is_live_only_like_the_route(pw: PayoutWorld) -> None:
    """``commissions.payout_balance`` had let a Test App key read the Live balance, which
    ``GET /v1/payout-balance`` refuses."""
    from refcore.models import KeyKind, Mode
    from refcore.services import commissions

    pw.earn(10_000)
    test_key = pw.world.key(Mode.TEST, KeyKind.APP)
    with pytest.raises(RefcoreError) as refused:
        commissions.payout_balance(pw.rt, test_key, pw.world.affiliate.id)
    assert refused.value.code == "live_key_required"
    assert commissions.payout_balance(pw.rt, pw.live_key, pw.world.affiliate.id).pending == 2000


def test_a_test_key_naming_another_tenants_affiliate_is_404_like_any_key_before_live_key_required(
    pw: PayoutWorld, rt: Runtime, clock: ManualClock
) -> None:
    """payouts.md: Live is "checked after tenancy: another tenant's payout object is 404 whatever
    the key". The program was; an affiliate filter was checked after the key's mode, so a Test
    key got 403 live_key_required for another tenant's affiliate (probe G)."""
    from refcore.models import KeyKind, Mode

    stranger = build_world(rt, clock).affiliate
    test_key = pw.world.key(Mode.TEST, KeyKind.APP)
    program = pw.world.program.id
    reads = {
        "details": lambda key, aff: payout_accounts.get_payout_details(pw.rt, key, program, aff),
        "balance": lambda key, aff: payout_accounts.get_payout_balance(pw.rt, key, program, aff),
        "requests": lambda key, aff: payout_requests.list_payout_requests(
            pw.rt, key, program_id=program, program_affiliate_id=aff
        ),
    }
    for name, read in reads.items():
        for key in (test_key, pw.live_key):
            for affiliate_id in (stranger.id, "aff_01made"):
                assert _fails(partial(read, key, affiliate_id))[0] == "program_affiliate_not_found", name
        # the Test key naming the program's own affiliate is still told to use a Live key
        assert _fails(partial(read, test_key, pw.world.affiliate.id))[0] == "live_key_required", name
    assert _fails(lambda: payout_accounts.get_payout_balance(pw.rt, test_key, program)) == (
        "live_key_required",
        None,
    )
