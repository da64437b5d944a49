"""Timing a payout batch and the ready-payouts CSV of a program of many affiliates, in-process.

``python -m bench.payout_batch --database-url postgresql://… --affiliates 2000 --ready-every 20``
builds a program of that many affiliates through the services (one in ``--ready-every`` earns
a payout), then times ``prepare_batch`` and ``ready_payouts_csv`` and counts the statements
each sends (SQLAlchemy's ``before_cursor_execute``, which the store's driver path announces
too). The forty-first session's figures (bench/history.md) came from this. Then one more
affiliate earns ``--entries`` commissions: a batch holding its payout of that many entries is
prepared and canceled (timed), and the affiliate is marked paid (timed): the forty-second
session's figures. The database must be empty: a new SQLite path, or a new
PostgreSQL database.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

from sqlalchemy import event
from tests.payouts.world import build_payout_world

from refcore.clocks import ManualClock
from refcore.services import payouts
from refcore_sqlstore import SqlStore

T = TypeVar("T")


def _counted(store: SqlStore, work: Callable[[], T]) -> tuple[T, float, int]:
    """``work``'s result, its seconds and the statements it sent."""
    sent = 0

    def count(*_args: Any) -> None:
        nonlocal sent
        sent += 1

    engine = store._engine
    event.listen(engine, "before_cursor_execute", count)
    try:
        start = time.perf_counter()
        result = work()
        seconds = time.perf_counter() - start
    finally:
        event.remove(engine, "before_cursor_execute", count)
    return result, seconds, sent


def run(database_url: str, affiliates: int, ready_every: int, repeats: int, entries: int = 0) -> list[str]:
    """One line per measurement."""
    store = SqlStore(database_url)
    try:
        store.migrate()
        clock = ManualClock(datetime(2026, 1, 1, tzinfo=UTC))
        pw = build_payout_world(store.runtime(clock=clock), clock, hold_days=0)
        world = pw.world
        made = [world.affiliate] + [world.add_affiliate() for _ in range(affiliates - 1)]
        for number, affiliate in enumerate(made):
            if number % ready_every == 0:
                pw.earn(10_000, affiliate)
        pw.past_hold()
        lines = []
        for _ in range(repeats):
            batch, seconds, sent = _counted(store, pw.prepare)
            lines.append(
                f"{store.dialect} prepare_batch: {affiliates} affiliates, {batch.execution_count} paid, "
                f"{seconds:.3f} s, {sent} statements"
            )
            payouts.cancel_batch(pw.rt, world.session, batch.id)
        csv, seconds, sent = _counted(
            store, lambda: payouts.ready_payouts_csv(pw.rt, world.session, world.program.id)
        )
        lines.append(
            f"{store.dialect} ready_payouts_csv: {csv.count(chr(10)) - 1} rows, {seconds:.3f} s, "
            f"{sent} statements"
        )
        if entries:
            earner = world.add_affiliate()
            for _ in range(entries):
                pw.earn(10_000, earner)
            pw.past_hold()
            batch = pw.prepare()  # the earner's payout beside the ready affiliates' one-entry ones
            held = entries + batch.execution_count - 1
            _, seconds, sent = _counted(store, lambda: payouts.cancel_batch(pw.rt, world.session, batch.id))
            lines.append(
                f"{store.dialect} cancel_batch: {batch.execution_count} payouts, {held} entries, "
                f"{seconds:.3f} s, {sent} statements"
            )
            execution, seconds, sent = _counted(store, lambda: pw.mark_paid(earner))
            lines.append(
                f"{store.dialect} mark_paid: {entries} entries, {execution.amount} paid, {seconds:.3f} s, "
                f"{sent} statements"
            )
        return lines
    finally:
        store.dispose()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.payout_batch", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--database-url", required=True, help="an empty database: sqlite:///new.db or postgresql://…"
    )
    parser.add_argument("--affiliates", type=int, default=2000)
    parser.add_argument(
        "--ready-every", type=int, default=20, help="one affiliate in this many earns a payout"
    )
    parser.add_argument("--repeats", type=int, default=3, help="batches prepared (each canceled after)")
    parser.add_argument(
        "--entries", type=int, default=1000, help="entries of the one payout marked paid at the end (0: none)"
    )
    args = parser.parse_args(argv)
    for line in run(args.database_url, args.affiliates, args.ready_every, args.repeats, args.entries):
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
