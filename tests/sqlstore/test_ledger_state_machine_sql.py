"""The ledger state machine of ``tests/property`` on SQLite and PostgreSQL.

The same random sequences of payments, refunds and dispute reports, checked against the same
independent model after every step, with each example on an empty SQL database: a fresh SQLite
file, or the session's PostgreSQL database emptied. A snapshot of every table after every step
costs a few dozen queries, so these run fewer examples than the memory store does (a tenth of the
active profile's, at least 20: 20 locally, 100 with the ``ci`` profile).
"""

from __future__ import annotations

from contextlib import AbstractContextManager

from hypothesis import settings

from refcore.clocks import ManualClock
from refcore.services.runtime import Runtime
from tests.property.test_ledger_state_machine import STEPS, LedgerMachine
from tests.stores import postgres_store, sqlite_store

EXAMPLES = max(20, settings.default.max_examples // 10)


class LedgerOnSqlite(LedgerMachine):
    def open_store(self, clock: ManualClock) -> AbstractContextManager[Runtime]:
        return sqlite_store(clock)


class LedgerOnPostgres(LedgerMachine):
    def open_store(self, clock: ManualClock) -> AbstractContextManager[Runtime]:
        return postgres_store(clock)


TestLedgerOnSqlite = LedgerOnSqlite.TestCase
TestLedgerOnSqlite.settings = settings(max_examples=EXAMPLES, stateful_step_count=STEPS)

TestLedgerOnPostgres = LedgerOnPostgres.TestCase
TestLedgerOnPostgres.settings = settings(max_examples=EXAMPLES, stateful_step_count=STEPS)
