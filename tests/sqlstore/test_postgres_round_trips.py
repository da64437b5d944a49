"""PostgreSQL round trips (refcore_sqlstore.postgres_round_trips): no liveness ping, inserts
sent with the next statement or the ``COMMIT``, a transaction's ``BEGIN`` with its first statement.

A round trip is counted in libpq's trace of the pool's one connection as a turn from what the
client sent to what the server answered: the client waits there (in a pipeline it sends on
without waiting between statements).
"""

from __future__ import annotations

import itertools
import logging
import select
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from attrs import evolve
from sqlalchemy import event

from refcore.clocks import ManualClock
from refcore.errors import ConcurrentWrite, InternalError, Unauthenticated
from refcore.models import EventType, Mode, User
from refcore.ports.lookups import Lookup
from refcore.ports.unit_of_work import UnitOfWork
from refcore.services.runtime import Tx
from refcore_sqlstore import SqlStore
from refcore_sqlstore.postgres_round_trips import collected_pipeline
from tests.contract.scenario import build_world
from tests.sqlstore.raw import count, terminate_backend
from tests.stores import psycopg_connect

NOW = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture
def store(one_connection_postgres_store: SqlStore) -> SqlStore:
    return one_connection_postgres_store


def _driver(store: SqlStore) -> psycopg.Connection[object]:
    """The pool's one psycopg connection (checked out and straight back)."""
    with store._engine.connect() as connection:
        driver = connection.connection.dbapi_connection
    assert isinstance(driver, psycopg.Connection)
    return driver


@contextmanager
def traced(driver: psycopg.Connection[object]) -> Iterator[list[str]]:
    """The protocol messages the connection exchanges inside the block (filled in after it)."""
    messages: list[str] = []
    with tempfile.TemporaryFile("w+") as trace:
        driver.pgconn.trace(trace.fileno())
        driver.pgconn.set_trace_flags(psycopg.pq.Trace.SUPPRESS_TIMESTAMPS | psycopg.pq.Trace.REGRESS_MODE)
        try:
            yield messages
        finally:
            driver.pgconn.untrace()
            trace.seek(0)
            messages.extend(trace.read().splitlines())


def round_trips(messages: list[str]) -> int:
    sides = [line[0] for line in messages if line[:1] in ("F", "B")]
    return sum(1 for pair in itertools.pairwise(sides) if pair == ("F", "B"))


def sent(messages: list[str], kind: str) -> list[str]:
    return [line for line in messages if line.startswith("F\t") and line.split("\t")[2] == kind]


def parsed(messages: list[str]) -> list[str]:
    """The first word of each statement the client parsed, in order."""
    return [line.split('"')[3].split()[0] for line in sent(messages, "Parse")]


def statuses(messages: list[str]) -> list[str]:
    """The transaction status of each ``ReadyForQuery``: ``I`` idle, ``T`` in a transaction."""
    return [line.split()[-1] for line in messages if "ReadyForQuery" in line]


def user(number: int) -> User:
    return User(id=f"usr_{number}", email=f"dev{number}@example.com", created_at=NOW)


def stored(store: SqlStore, *numbers: int) -> None:
    """The users of ``numbers`` committed, before what a test traces."""
    with store.unit_of_work() as uow:
        uow.users.add_all([user(number) for number in numbers])
        uow.commit()


def locked(uow: UnitOfWork, user_id: str) -> User:
    """The user of ``user_id`` read ``for_update``: its row locked until the transaction ends."""
    found = uow.users.get(user_id, for_update=True)
    assert found is not None
    return found


def test_a_unit_of_work_sends_no_liveness_ping(store: SqlStore) -> None:
    with traced(_driver(store)) as messages, store.read_unit_of_work() as uow:
        assert uow.users.get("usr_none") is None

    assert round_trips(messages) == 1  # the SELECT alone: no ping, and no BEGIN or COMMIT (autocommit)
    assert not [query for query in sent(messages, "Query") if '";"' in query]  # no liveness ping
    assert not [line for line in messages if "BEGIN" in line]


def test_inserts_wait_for_the_commit_and_go_in_its_round_trip(store: SqlStore) -> None:
    with traced(_driver(store)) as messages, store.unit_of_work() as uow:
        assert uow.users.get("usr_1") is None
        uow.users.add(user(1))
        uow.users.add_all([user(2), user(3)])
        uow.commit()

    # The SELECT alone, before the BEGIN; then BEGIN, the two INSERTs (one of a row, one of
    # two rows: not joined) and COMMIT in one round trip.
    assert round_trips(messages) == 2
    assert parsed(messages) == ["SELECT", "BEGIN", "INSERT", "INSERT", "COMMIT"]
    assert count(store, "users") == 3


def test_reads_before_a_transactions_only_write_run_without_begin_or_commit(store: SqlStore) -> None:
    """A plain read first runs in autocommit; the one statement left at the COMMIT (three joined
    inserts) goes alone, a transaction of its own: two statements, no BEGIN, no COMMIT."""
    with traced(_driver(store)) as messages, store.unit_of_work() as uow:
        assert uow.users.get("usr_1") is None
        for number in (1, 2, 3):
            uow.users.add(user(number))
        uow.commit()

    assert parsed(messages) == ["SELECT", "WITH"]  # WITH: the joined inserts (one statement)
    assert statuses(messages) == ["I", "I"]  # no transaction left open after either
    assert round_trips(messages) == 2
    assert count(store, "users") == 3


def test_a_locking_read_carries_the_begin_and_holds_its_lock_to_the_commit(store: SqlStore) -> None:
    """A locking ``SELECT`` (``FOR NO KEY UPDATE``) needs its transaction: its row lock lasts
    until the COMMIT."""
    with store.unit_of_work() as uow:
        uow.users.add(user(1))
        uow.commit()

    with traced(_driver(store)) as messages, store.unit_of_work() as uow:
        assert uow.users.get("usr_1", for_update=True) == user(1)
        uow.users.add(user(2))
        uow.commit()

    assert parsed(messages) == ["BEGIN", "SELECT", "INSERT", "COMMIT"]
    assert statuses(messages)[0] == "T"  # the lock's transaction stays open after the read
    assert count(store, "users") == 2


def test_a_write_that_needs_its_result_carries_the_begin(store: SqlStore) -> None:
    """An ``UPDATE`` (its row count is read at once) after a plain read begins the transaction;
    the insert after it goes with the COMMIT, and a rollback undoes both."""
    with store.unit_of_work() as uow:
        uow.users.add(user(1))
        uow.commit()

    with traced(_driver(store)) as messages, store.unit_of_work() as uow:
        found = uow.users.get("usr_1")
        assert found is not None
        uow.users.replace(evolve(found, email="new@example.com"))
        uow.users.add(user(2))
        uow.rollback()

    assert parsed(messages) == ["SELECT", "BEGIN", "UPDATE"]  # then psycopg's own ROLLBACK
    assert statuses(messages)[:2] == ["I", "T"]
    with store.read_unit_of_work() as uow:
        assert uow.users.get("usr_1") == user(1)
        assert uow.users.get("usr_2") is None


def test_an_update_of_a_locked_row_goes_with_the_commit_joined_with_the_inserts(store: SqlStore) -> None:
    """``refcore_sqlstore.joined_writes``: a row read ``for_update`` is there until the commit,
    so its ``UPDATE`` needs no round trip of its own (a refund's update of its payment)."""
    stored(store, 1)

    with traced(_driver(store)) as messages, store.unit_of_work() as uow:
        uow.users.replace(evolve(locked(uow, "usr_1"), email="new@example.com"))
        uow.users.add(user(2))
        uow.commit()

    assert parsed(messages) == ["BEGIN", "SELECT", "WITH", "COMMIT"]
    assert round_trips(messages) == 2
    assert "UPDATE users" in sent(messages, "Parse")[2]
    with store.read_unit_of_work() as uow:
        assert uow.users.get("usr_1") == evolve(user(1), email="new@example.com")
        assert uow.users.get("usr_2") == user(2)


def test_a_locked_row_updated_twice_takes_both_updates_in_order(store: SqlStore) -> None:
    """PostgreSQL applies only one of two updates of a row in one statement, so the second
    starts a statement of its own (still in the commit's round trip)."""
    stored(store, 1)

    with traced(_driver(store)) as messages, store.unit_of_work() as uow:
        first = locked(uow, "usr_1")
        uow.users.replace(evolve(first, email="first@example.com"))
        uow.users.add(user(2))
        uow.users.replace(evolve(first, email="second@example.com"))
        uow.commit()

    assert parsed(messages) == ["BEGIN", "SELECT", "WITH", "UPDATE", "COMMIT"]
    assert round_trips(messages) == 2
    with store.read_unit_of_work() as uow:
        assert uow.users.get("usr_1") == evolve(user(1), email="second@example.com")
        assert uow.users.get("usr_2") == user(2)


def test_a_deferred_update_refused_at_commit_fails_the_unit_of_work_whole(store: SqlStore) -> None:
    """The update's error arrives with the statement that carries it, translated as before (a
    taken unique email: a lost race), and nothing of the unit of work is written."""
    stored(store, 1, 2)

    with pytest.raises(ConcurrentWrite), store.unit_of_work() as uow:
        uow.users.replace(evolve(locked(uow, "usr_2"), email=user(1).email))
        uow.users.add(user(3))
        uow.commit()

    with store.read_unit_of_work() as uow:
        assert [found.email for found in uow.users.find_all({})] == [user(1).email, user(2).email]


def test_a_lock_ends_with_its_transaction_and_a_later_update_reads_its_row_count(store: SqlStore) -> None:
    """After the commit that released its lock, a row may be gone: an update of it in the next
    transaction runs at once and finds that out, as an unlocked one does."""
    stored(store, 1)

    with store.unit_of_work() as uow:
        first = locked(uow, "usr_1")
        uow.users.replace(evolve(first, email="kept@example.com"))
        uow.commit()
        with psycopg_connect(store._engine.url) as other:
            other.execute("DELETE FROM users WHERE id = 'usr_1'")
        with pytest.raises(KeyError):
            uow.users.replace(evolve(first, email="lost@example.com"))
        uow.rollback()

    assert count(store, "users") == 0


def test_an_update_of_a_missing_row_is_still_a_key_error(store: SqlStore) -> None:
    """Only a row this unit of work locked skips its row count: any other update reads it."""
    with pytest.raises(KeyError), store.unit_of_work() as uow:
        uow.users.replace(user(9))


def test_a_commit_of_several_statements_keeps_its_begin_and_fails_whole(store: SqlStore) -> None:
    """Two statements left at the COMMIT (an insert, then a multi-row insert, not joined) still
    go between BEGIN and COMMIT: a duplicate in the second leaves the first unwritten too."""
    with store.unit_of_work() as uow:
        uow.users.add(user(1))
        uow.commit()

    with traced(_driver(store)) as messages, pytest.raises(ConcurrentWrite), store.unit_of_work() as uow:
        assert uow.users.get("usr_5") is None
        uow.users.add(user(5))
        uow.users.add_all([user(6), user(1)])
        uow.commit()

    assert parsed(messages)[:3] == ["SELECT", "BEGIN", "INSERT"]
    with store.read_unit_of_work() as uow:
        assert [found.id for found in uow.users.find_all({})] == ["usr_1"]


def test_consecutive_inserts_leave_as_one_statement_and_all_of_them_are_written(store: SqlStore) -> None:
    """``refcore_sqlstore.joined_inserts``: one statement of ``WITH`` clauses, one Parse."""
    with traced(_driver(store)) as messages, store.unit_of_work() as uow:
        for number in (1, 2, 3):
            uow.users.add(user(number))
        uow.commit()

    inserts = [query for query in sent(messages, "Parse") if "INSERT INTO users" in query]
    assert len(inserts) == 1 and inserts[0].count("INSERT INTO users") == 3
    assert round_trips(messages) == 1
    with store.read_unit_of_work() as uow:
        assert sorted(found.id for found in uow.users.find_all({})) == ["usr_1", "usr_2", "usr_3"]


def test_a_duplicate_among_joined_inserts_fails_them_all_as_a_lost_race(store: SqlStore) -> None:
    with store.unit_of_work() as uow:
        uow.users.add(user(2))
        uow.commit()

    with pytest.raises(ConcurrentWrite), store.unit_of_work() as uow:
        for number in (1, 2, 3):
            uow.users.add(user(number))
        uow.commit()

    with store.read_unit_of_work() as uow:
        assert [found.id for found in uow.users.find_all({})] == ["usr_2"]


def test_a_select_after_an_insert_carries_it_and_sees_it(store: SqlStore) -> None:
    driver = _driver(store)
    with store.unit_of_work() as uow:
        uow.users.add(user(1))
        with traced(driver) as messages:
            found = uow.users.get("usr_1")
        uow.commit()

    assert found == user(1)
    assert round_trips(messages) == 1  # BEGIN, the INSERT and the SELECT together


def test_a_unit_of_work_that_sends_nothing_never_reaches_the_server(store: SqlStore) -> None:
    with traced(_driver(store)) as messages, store.unit_of_work() as uow:
        uow.commit()

    assert round_trips(messages) == 0
    assert not sent(messages, "Parse") and not sent(messages, "Query")


def test_a_snapshot_read_sends_its_begin_with_its_first_statement_and_ends_in_commit(store: SqlStore) -> None:
    """``Runtime.read(snapshot=True)``: one ``REPEATABLE READ READ ONLY`` transaction, whose
    ``BEGIN`` costs no round trip and whose ``COMMIT`` (not a rollback, which would drop the
    connection's prepared statements) costs one; a balance's plan setting is put back in it."""
    stored(store, 1)
    driver = _driver(store)
    with traced(driver) as messages, store.snapshot_unit_of_work() as uow:
        assert uow.users.get("usr_1") == user(1)
        assert uow.users.get("usr_2") is None
        uow.ledger().status_sums("aff_0", Mode.LIVE, NOW)

    assert parsed(messages)[:3] == ["BEGIN", "SELECT", "SELECT"]
    assert "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY" in "".join(sent(messages, "Parse"))
    assert round_trips(messages) == 4  # BEGIN with the first SELECT, the second, the balance, COMMIT
    assert "COMMIT" in "".join(sent(messages, "Parse") + sent(messages, "Query"))
    assert "ROLLBACK" not in "".join(messages)
    assert statuses(messages)[-1] == "I"  # nothing left open on the connection
    with store._engine.connect() as connection:  # the pool's one connection, back as it was
        assert connection.exec_driver_sql("SHOW plan_cache_mode").scalar() == "auto"


def test_a_snapshot_read_is_repeatable_read_read_only_and_refuses_writes(store: SqlStore) -> None:
    with store.snapshot_unit_of_work() as uow:
        connection = uow._require_connection()
        assert connection.exec_driver_sql("SHOW transaction_isolation").scalar() == "repeatable read"
        assert connection.exec_driver_sql("SHOW transaction_read_only").scalar() == "on"
        with pytest.raises(InternalError):
            uow.users.add(user(1))
    assert count(store, "users") == 0


def test_a_snapshot_read_that_sends_nothing_never_reaches_the_server(store: SqlStore) -> None:
    with traced(_driver(store)) as messages, store.snapshot_unit_of_work():
        pass

    assert round_trips(messages) == 0


def test_writes_after_a_commit_begin_a_new_transaction(store: SqlStore) -> None:
    """The unit of work's promise: the driver's autocommit never commits a write by itself."""
    with store.unit_of_work() as uow:
        uow.users.add(user(1))
        uow.commit()
        uow.users.add(user(2))
        assert uow.users.get("usr_2") == user(2)  # the INSERT has reached the server
        uow.rollback()

    assert count(store, "users") == 1


def test_a_write_unit_of_work_is_read_committed_whatever_the_server_default(store: SqlStore) -> None:
    driver = _driver(store)  # the pool's one connection: a session setting stays on it
    driver.execute("SET default_transaction_isolation = 'serializable'")
    try:
        with store.unit_of_work() as uow:
            uow.users.add(user(1))
            isolation = uow._require_connection().exec_driver_sql("SHOW transaction_isolation").scalar()
            uow.commit()
    finally:
        driver.execute("RESET default_transaction_isolation")

    assert isolation == "read committed"
    assert count(store, "users") == 1


def test_a_statement_through_sqlalchemy_sees_the_inserts_before_it(store: SqlStore) -> None:
    """The metrics' counts run through SQLAlchemy's own execution path."""
    with store.unit_of_work() as uow:
        uow.users.add(user(1))
        assert uow.metrics().count("users", {}) == 1
        uow.rollback()

    assert count(store, "users") == 0


def test_a_rollback_discards_the_inserts_never_sent_and_the_pool_keeps_none(store: SqlStore) -> None:
    with store.unit_of_work() as uow:
        uow.users.add(user(1))
        uow.rollback()
    with store.unit_of_work() as uow:  # the same pooled connection
        uow.users.add(user(2))
    with store.unit_of_work() as uow:
        uow.users.add(user(3))
        uow.commit()

    assert count(store, "users") == 1
    with store.read_unit_of_work() as uow:
        assert [found.id for found in uow.users.find_all({})] == ["usr_3"]


def test_an_insert_refused_at_commit_fails_the_unit_of_work_and_frees_the_connection(store: SqlStore) -> None:
    with store.unit_of_work() as uow:
        uow.users.add(user(1))
        uow.commit()

    with pytest.raises(ConcurrentWrite), store.unit_of_work() as uow:
        uow.users.add(user(2))
        uow.users.add(user(1))  # the ID is taken: refused when the COMMIT carries it
        uow.commit()

    with store.unit_of_work() as uow:  # the pool's one connection is back, outside a transaction
        uow.users.add(user(3))
        uow.commit()
    with store.read_unit_of_work() as uow:
        assert sorted(found.id for found in uow.users.find_all({})) == ["usr_1", "usr_3"]


def test_a_connection_the_server_closed_while_pooled_is_replaced_at_checkout(store: SqlStore) -> None:
    driver = _driver(store)
    terminate_backend(store, driver)

    with store.unit_of_work() as uow:  # no error: a new connection
        uow.users.add(user(1))
        uow.commit()

    assert _driver(store) is not driver
    assert count(store, "users") == 1


def test_a_read_then_write_block_shares_one_checkout_and_holds_no_transaction_open(store: SqlStore) -> None:
    """``Runtime.read_then_write`` (a keyed write's credential, then the write): the read and
    the write share one checkout of the pooled connection, where apart each is a unit of work of
    its own. Either way the read runs in autocommit and the write's lone insert goes without
    ``BEGIN`` or ``COMMIT``: no transaction is open between them."""
    runtime = store.runtime()
    assert runtime.reads_join_writes
    checkouts: list[object] = []
    event.listen(store._engine.pool, "checkout", lambda *args: checkouts.append(args))

    def read_then_add(number: int) -> list[str]:
        with traced(_driver(store)) as messages:
            checkouts.clear()
            assert runtime.read(lambda tx: tx.uow.users.get(f"usr_{number}")) is None
            runtime.transaction(lambda tx: tx.uow.users.add(user(number)))
        return messages

    with runtime.read_then_write():
        joined = read_then_add(1)
        joined_checkouts = len(checkouts)
    apart = read_then_add(2)

    assert (joined_checkouts, len(checkouts)) == (1, 2)
    for messages in (joined, apart):
        assert parsed(messages) == ["SELECT", "INSERT"]
        assert statuses(messages) == ["I", "I"]
        assert round_trips(messages) == 2
    assert count(store, "users") == 2


def test_a_first_read_check_goes_in_the_statement_of_the_works_lookup(store: SqlStore) -> None:
    """``Runtime.check_with_first_read`` (a known key's "still not revoked?"): the check is a
    join of the write's own lookup, so the write sends its lookup and its insert, nothing more;
    without a lookup the check is a statement of its own before the commit."""
    runtime = store.runtime()
    with store.unit_of_work() as uow:
        uow.users.add(user(1))
        uow.commit()
    check = Lookup("users", User, {"id": "usr_1", "email": user(1).email})

    def look_up_then_add(tx: Tx) -> None:
        wanted = Lookup("users", User, {"id": "usr_2"})
        assert tx.uow.look_up(wanted)[wanted] is None
        tx.uow.users.add(user(2))

    with traced(_driver(store)) as messages, runtime.read_then_write():
        assert runtime.check_with_first_read(check, lambda: Unauthenticated("revoked"))
        runtime.transaction(look_up_then_add)
    assert parsed(messages) == ["SELECT", "INSERT"]
    # One SELECT of two lookups' columns: the check's (refcore_l0) and the work's (refcore_l1).
    assert "refcore_l1.id" in sent(messages, "Parse")[0]

    with traced(_driver(store)) as messages, runtime.read_then_write():
        assert runtime.check_with_first_read(check, lambda: Unauthenticated("revoked"))
        runtime.transaction(lambda tx: tx.uow.users.add(user(3)))
    assert parsed(messages) == ["SELECT", "INSERT"]  # the check alone, then the insert
    assert count(store, "users") == 3


def test_the_outbox_claims_in_one_statement_and_closes_in_another_each_a_transaction_of_its_own(
    store: SqlStore,
) -> None:
    """A claim is one ``WITH claimable AS MATERIALIZED (…) UPDATE … RETURNING`` and closing events
    one ``UPDATE``, each alone in autocommit: one round trip each, no ``BEGIN`` or ``COMMIT``,
    nothing left open."""
    clock = ManualClock()
    runtime = store.runtime(clock=clock)
    world = build_world(runtime, clock)
    for _ in range(3):
        runtime.transaction(
            lambda tx: tx.emit(EventType.WEBHOOK_TEST, app_id=world.app.id, livemode=False, data={"id": "t"})
        )
    waiting = sorted(found.id for found in world.events())

    with traced(_driver(store)) as messages:
        claimed = store.outbox.claim(now=clock.now(), limit=100, lease_seconds=60)
    assert [found.id for found in claimed] == waiting  # oldest first, whatever RETURNING's order
    assert all(found.claimed_at == clock.now() for found in claimed)
    assert parsed(messages) == ["WITH"]
    assert (round_trips(messages), statuses(messages)) == (1, ["I"])

    with traced(_driver(store)) as messages:
        store.outbox.mark_all_delivered(waiting, now=clock.now())
    assert parsed(messages) == ["UPDATE"]
    assert (round_trips(messages), statuses(messages)) == (1, ["I"])
    assert store.outbox.claim(now=clock.now() + timedelta(hours=1), limit=100, lease_seconds=60) == []


#: Executions after which psycopg has prepared a statement (its ``prepare_threshold`` is 5, and
#: the execution that prepares takes a round trip more).
WARM = 6


@pytest.mark.parametrize("kind", ["payment", "refund", "identify"])
def test_a_write_of_the_servers_runtime_reads_the_webhook_endpoint_in_its_lookup(
    store: SqlStore, kind: str
) -> None:
    """The server's runtime judges each event against the App's webhook endpoint as it writes
    it (``Runtime.outbox_for_webhooks``): a payment, a refund and an identify read the endpoint
    in the statement of their own lookup, so they take as many round trips as the library's
    runtime, which reads no endpoint, and their events are written closed."""
    clock = ManualClock()
    runtime = store.runtime(clock=clock)
    world = build_world(runtime, clock)
    customers = iter([world.referred_customer() for _ in range(2 * WARM + 2)])
    payments = iter([world.pay(world.referred_customer(), 10_000).record for _ in range(2 * WARM + 2)])

    def write() -> None:
        if kind == "payment":
            world.pay(next(customers), 10_000)
        elif kind == "refund":
            world.refund(next(payments).payment_id, 100)
        else:
            world.referred_customer()

    trips = {}
    for for_webhooks in (False, True):
        runtime.outbox_for_webhooks = for_webhooks
        for _ in range(WARM):
            write()
        before = {found.id for found in world.events()}
        with traced(_driver(store)) as messages:
            write()
        trips[for_webhooks] = round_trips(messages)
        written = [found for found in world.events() if found.id not in before]
        assert written and all((found.delivered_at is not None) is for_webhooks for found in written)
    assert trips[True] == trips[False]


def _refused_while_the_pipeline_is_open(driver: psycopg.Connection[Any], pipeline: Any) -> None:
    """A duplicate key in a pipeline whose error is read before the next statement is queued:
    what a race lost on a unique key does when the winner commits at that moment."""
    driver.execute("CREATE TEMPORARY TABLE IF NOT EXISTS pipelined (id integer PRIMARY KEY)")
    driver.execute("INSERT INTO pipelined VALUES (1) ON CONFLICT DO NOTHING")
    with pytest.raises(psycopg.errors.UniqueViolation), pipeline(driver):
        driver.execute("BEGIN")
        driver.execute("INSERT INTO pipelined VALUES (1)")
        driver.pgconn.send_flush_request()
        driver.pgconn.flush()
        assert select.select([driver.fileno()], [], [], 10)[0], "the server never answered"
        driver.execute("SELECT 1")  # reads the refusal: raised here, inside the pipeline
        driver.execute("COMMIT")
    driver.rollback()


def test_a_statement_refused_while_its_pipeline_is_open_raises_alone_and_psycopg_logs_nothing(
    store: SqlStore, caplog: pytest.LogCaptureFixture
) -> None:
    """``postgres_round_trips.collected_pipeline``: psycopg's own pipeline, left with the
    aborted statements uncollected, logs "error ignored terminating Pipeline … pipeline
    aborted" as a warning, once for every race lost on a unique key (a replayed payment among
    them); refcore's collects them first and logs nothing, and the connection works on."""
    with psycopg_connect(store._engine.url) as driver:
        with caplog.at_level(logging.WARNING, logger="psycopg"):
            _refused_while_the_pipeline_is_open(driver, psycopg.Connection.pipeline)
        assert ["pipeline aborted" in record.getMessage() for record in caplog.records] == [True]
        caplog.clear()

        with caplog.at_level(logging.DEBUG, logger="psycopg"):
            _refused_while_the_pipeline_is_open(driver, collected_pipeline)
        assert caplog.records == []
        assert driver.execute("SELECT count(*) FROM pipelined").fetchone() == (1,)


def test_balances_read_together_set_and_reset_the_plan_mode_once(store: SqlStore) -> None:
    """``ledger._generic_plan``: the ``SET`` rides with the balances' statement and a read's
    ``RESET`` follows it; the balances of a list of affiliates are one statement
    (``ledger._listed_status_sums_statement``), so ten balances cost two round trips, not
    thirty (a page of ready payouts had paid three round trips an affiliate, then one). In a
    transaction both settings ride with statements: a balance there costs its own round trip
    only."""
    affiliates = [f"aff_{n}" for n in range(10)]
    driver = _driver(store)
    with store.read_unit_of_work() as uow:  # psycopg prepares the statement at its fifth run,
        uow.ledger().status_sums_of(affiliates, Mode.LIVE, NOW)  # a round trip of its own
    with store.read_unit_of_work() as uow, traced(driver) as read:
        sums = uow.ledger().status_sums_of(affiliates, Mode.LIVE, NOW)
    assert list(sums) == affiliates
    assert round_trips(read) == 2
    with store.read_unit_of_work() as uow, traced(driver) as one:
        uow.ledger().status_sums("aff_0", Mode.LIVE, NOW)
    assert round_trips(one) == 2
    with store.read_unit_of_work() as uow, traced(driver) as nothing:
        assert uow.ledger().status_sums_of([], Mode.LIVE, NOW) == {}
    assert round_trips(nothing) == 0
    with store.unit_of_work() as uow, traced(driver) as written:
        uow.ledger().status_sums("aff_0", Mode.LIVE, NOW)
        uow.commit()
    assert round_trips(written) == 2  # the balance with BEGIN and SET LOCAL; the COMMIT
    with store._engine.connect() as connection:  # the pool's one connection, back as it was
        assert connection.exec_driver_sql("SHOW plan_cache_mode").scalar() == "auto"
