"""Migration 0011: an open payout request names the payout in flight that froze its money.

Code before 7adc370 named no request when it prepared a batch, and closed any open request when
a payout succeeded; the code since closes only the request the payout names. A database upgraded
with a batch in flight had its open request left ``open`` by that payout's success, for money
already paid (found by a probe that upgraded a database). Here the current code makes the
payouts, the link is taken away as earlier code would have left it, and the migration is run
again from 0010: the request made before its affiliate's payout is named by it and closed by its
success; the one made after its affiliate's payout was in flight is not; and a request declined
with its batch's payout named names none, as a decline now leaves it.
"""

from __future__ import annotations

from alembic import command
from sqlalchemy import update

from refcore.clocks import ManualClock
from refcore.models.payout import PayoutRequestStatus
from refcore.services import payout_requests as payout_requests_service
from refcore_sqlstore import SqlStore
from refcore_sqlstore.migrate import alembic_config
from refcore_sqlstore.tables import payout_requests
from tests.payouts.world import affiliate_key, build_payout_world
from tests.sqlstore.raw import engine_of


def test_migration_0011_names_the_payout_in_flight_that_froze_an_open_requests_money(
    sql_store: SqlStore, clock: ManualClock
) -> None:
    runtime = sql_store.runtime(clock=clock)
    pw = build_payout_world(runtime, clock, hold_days=0)
    early = pw.world.affiliate
    late = pw.world.add_affiliate("late@example.com")
    early_key, _ = affiliate_key(runtime, early)
    late_key, _ = affiliate_key(runtime, late)
    pw.earn(10_000, early)
    pw.earn(10_000, late)
    pw.past_hold()
    early_request = pw.request(early_key)  # before the batch: the batch froze its money
    executions = {e.program_affiliate_id: e for e in pw.dispatch(pw.prepare().id).executions}
    pw.earn(5_000, late)
    pw.past_hold()
    late_request = pw.request(late_key)  # while late's payout is in flight: for the new money
    declined = pw.world.add_affiliate("declined@example.com")
    declined_key, _ = affiliate_key(runtime, declined)
    pw.earn(10_000, declined)
    pw.past_hold()
    declined_request = pw.request(declined_key)
    [declined_payout] = pw.dispatch(pw.prepare().id).executions  # the others have theirs in flight
    payout_requests_service.decline_payout_request(runtime, pw.world.session, declined_request.id)

    with engine_of(sql_store).begin() as connection:
        connection.execute(update(payout_requests).values(payout_execution_id=None))
        # A request declined by earlier code kept the payout its batch had named.
        connection.execute(
            update(payout_requests)
            .where(payout_requests.c.id == declined_request.id)
            .values(payout_execution_id=declined_payout.id)
        )
        command.downgrade(alembic_config(connection), "0010_payout_report_keys")
        command.upgrade(alembic_config(connection), "head")

    def stored(request_id: str) -> tuple[PayoutRequestStatus, str | None]:
        request = runtime.read(lambda tx: tx.uow.payout_requests.get(request_id))
        assert request is not None
        return request.status, request.payout_execution_id

    assert stored(early_request.id) == (PayoutRequestStatus.OPEN, executions[early.id].id)
    assert stored(late_request.id) == (PayoutRequestStatus.OPEN, None)
    assert stored(declined_request.id) == (PayoutRequestStatus.DECLINED, None)
    for n, execution in enumerate(executions.values()):
        pw.report(execution.id, "succeeded", f"run-{n}")
    assert stored(early_request.id) == (PayoutRequestStatus.PAID, executions[early.id].id)
    assert stored(late_request.id) == (PayoutRequestStatus.OPEN, None)
