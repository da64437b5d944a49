"""Real ``refcore serve`` processes on one database.

- Several servers (four on PostgreSQL, two on one SQLite file) take a few hundred concurrent
  requests that replay the same payment, refund and dispute IDs and race refunds and disputes on
  the same payments. Afterwards: exactly one record per ID, consumption within every payment,
  the ledger formula for every payment, and every ``200``/``201`` answered is in the database.
- A server is killed with ``SIGKILL`` in the middle of a stream of payments and restarted: every
  acknowledged payment is there exactly once, and no payment has half its ledger.

The organization, App, key, program, affiliate and customers are created through the services
on the same database URL before the servers start; the servers are then driven over HTTP only.
"""

from __future__ import annotations

import itertools
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from attrs import frozen

from refcore.clocks import ManualClock
from refcore.models import EventType
from refcore.rules.commission import ledger_target
from refcore.services import tenancy
from refcore_sqlstore import SqlStore
from tests.contract.scenario import build_world
from tests.sqlstore.raw import rows, scalar
from tests.stores import fresh_postgres_database

pytestmark = pytest.mark.slow

REFCORE = Path(sys.executable).with_name("refcore")
AMOUNT = 10_000


# -- databases and servers -------------------------------------------------------------------


@contextmanager
def database(backend: str, directory: Path) -> Iterator[str]:
    """A new, empty database: a PostgreSQL database (dropped afterwards) or an SQLite file."""
    if backend == "postgres":
        with fresh_postgres_database() as url:
            yield url
    else:
        yield f"sqlite:///{directory / 'refcore.db'}"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


_SECRET_KEY = "multiprocess-test-key-" + "0" * 16


class Server:
    """One ``refcore serve`` process on a free loopback port."""

    def __init__(self, database_url: str, log: Path) -> None:
        self.port = _free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self._log = log.open("ab")
        self.process = subprocess.Popen(
            [
                REFCORE,
                "serve",
                "--database-url",
                database_url,
                "--port",
                str(self.port),
                "--log-level",
                "warning",
            ],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            # One key for every server on the database, as deployment.md asks (PostgreSQL refuses
            # to start without one).
            env={**os.environ, "REFCORE_SECRET_KEY": _SECRET_KEY},
        )
        self._wait_until_ready(log)

    def _wait_until_ready(self, log: Path) -> None:
        with httpx.Client(timeout=2) as client:
            for _ in range(600):  # bounded: a start-up that never answers fails the test
                if self.process.poll() is not None:
                    pytest.fail(f"refcore serve exited with {self.process.returncode}:\n{log.read_text()}")
                try:
                    if client.get(f"{self.base}/v1").status_code == 200:
                        return
                except httpx.TransportError:
                    pass
                time.sleep(0.05)
        pytest.fail(f"refcore serve did not answer on {self.base}:\n{log.read_text()}")

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()
        self._log.close()


@contextmanager
def servers(database_url: str, count: int, logs: Path) -> Iterator[list[Server]]:
    with ExitStack() as stack:
        started = []
        for number in range(count):
            server = Server(database_url, logs / f"server-{number}.log")
            stack.callback(server.stop)
            started.append(server)
        yield started


# -- set-up through the services -------------------------------------------------------------


@frozen
class Setup:
    secret: str
    program_id: str
    customer_ids: tuple[str, ...]


def _set_up(database_url: str, customers: int) -> Setup:
    """Migrate, then create everything the requests need, through the services."""
    store = SqlStore(database_url)
    try:
        store.migrate()
        rt = store.runtime()
        world = build_world(rt, ManualClock())
        issued = tenancy.create_api_key(rt, world.session, world.app.id, "app", "live")
        identified = [world.referred_customer() for _ in range(customers)]
        return Setup(
            secret=issued.secret,
            program_id=world.program.id,
            customer_ids=tuple(i.customer.id for i in identified),
        )
    finally:
        store.dispose()


# -- requests --------------------------------------------------------------------------------


@frozen
class Request:
    path: str
    body: dict[str, Any]


@frozen
class Answer:
    request: Request
    status: int | None  # None: no answer (the connection failed)
    body: dict[str, Any]


def _payment(setup: Setup, number: int) -> Request:
    return Request(
        "/v1/transactions",
        {
            "payment_id": f"pay_{number}",
            "customer_id": setup.customer_ids[number % len(setup.customer_ids)],
            "program_id": setup.program_id,
            "amount": AMOUNT,
            "currency": "usd",
        },
    )


def _send_all(requests: list[Request], bases: list[str], secret: str, workers: int = 24) -> list[Answer]:
    """Send every request once, ``workers`` at a time, spread over the servers."""
    local = threading.local()
    headers = {"Authorization": f"Bearer {secret}"}

    def send(indexed: tuple[int, Request]) -> Answer:
        index, request = indexed
        if not hasattr(local, "client"):
            local.client = httpx.Client(timeout=60, headers=headers)
        response = local.client.post(bases[index % len(bases)] + request.path, json=request.body)
        return Answer(request, response.status_code, response.json())

    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(send, enumerate(requests)))


# -- checks in the database ------------------------------------------------------------------


def _ids_per_caller_id(store: SqlStore, table: str, column: str) -> Counter[str]:
    return Counter(str(value) for (value,) in rows(store, f"SELECT {column} FROM {table}"))


def _check_every_payment(store: SqlStore) -> int:
    """For every stored payment: its totals equal its refunds and disputes, consumption is within
    the amount, its entries meet the ledger formula with exactly one earned entry, and its
    ``transaction.created`` event exists. Returns the number of payments checked."""
    refunds: Counter[str] = Counter()
    for transaction_id, amount in rows(store, "SELECT transaction_id, amount FROM refunds"):
        refunds[transaction_id] += amount
    consuming: Counter[str] = Counter()
    lost: Counter[str] = Counter()
    for transaction_id, status, amount in rows(store, "SELECT transaction_id, status, amount FROM disputes"):
        if status in ("opened", "lost"):
            consuming[transaction_id] += amount
        if status == "lost":
            lost[transaction_id] += amount
    entries: Counter[str] = Counter()
    earned: Counter[str] = Counter()
    for transaction_id, kind, amount in rows(
        store, "SELECT transaction_id, kind, amount FROM commission_entries"
    ):
        entries[transaction_id] += amount
        earned[transaction_id] += kind == "earned"
    with store.unit_of_work() as uow:
        events = uow.events.find_all({"type": EventType.TRANSACTION_CREATED})
    announced = Counter(str(e.data["id"]) for e in events)
    payments = rows(
        store,
        "SELECT id, amount, commission_amount, refunded_amount, disputed_amount, lost_amount FROM payments",
    )
    for id, amount, commission, refunded, disputed, lost_amount in payments:
        assert (refunded, disputed, lost_amount) == (refunds[id], consuming[id], lost[id]), id
        assert refunded + disputed <= amount, id
        assert entries[id] == ledger_target(commission, amount, refunded, lost_amount), id
        assert earned[id] == (1 if commission > 0 else 0), id
        assert announced[id] == 1, id
    return len(payments)


def _check_answers_are_stored(store: SqlStore, answers: list[Answer]) -> None:
    """Every 200/201 answered names a record that is in the database with the caller's ID."""
    tables = {
        "/v1/transactions": ("payments", "payment_id"),
        "/v1/transactions/refunds": ("refunds", "refund_id"),
        "/v1/transactions/disputes": ("disputes", "dispute_id"),
    }
    for answer in answers:
        if answer.status in (200, 201):
            table, caller_id = tables[answer.request.path]
            stored = scalar(store, f"SELECT {caller_id} FROM {table} WHERE id = ?", answer.body["id"])
            assert stored == answer.request.body[caller_id]


# -- the tests -------------------------------------------------------------------------------


@pytest.mark.parametrize(("backend", "server_count"), [("postgres", 4), ("sqlite", 2)])
def test_server_processes_on_one_database_keep_one_record_per_id_and_every_payment_whole(
    backend: str, server_count: int, tmp_path: Path
) -> None:
    shuffle = random.Random(4).shuffle
    with database(backend, tmp_path) as url:
        setup = _set_up(url, customers=8)
        payments = [_payment(setup, n) for n in range(24)]
        first = [p for p in payments for _ in range(4)]  # every payment ID four times
        shuffle(first)
        second: list[Request] = [p for p in payments[:8]]  # late replays
        for n in range(6):  # refunds and disputes racing on six payments
            payment_id = f"pay_{n}"
            for r in range(6):
                refund = Request(
                    "/v1/transactions/refunds",
                    {"refund_id": f"re_{n}_{r}", "payment_id": payment_id, "amount": 2_500},
                )
                second += [refund, refund]
            for d in range(4):
                for status in ("opened", "opened", "lost"):
                    second.append(
                        Request(
                            "/v1/transactions/disputes",
                            {
                                "dispute_id": f"dp_{n}_{d}",
                                "payment_id": payment_id,
                                "status": status,
                                "amount": 2_000,
                            },
                        )
                    )
        shuffle(second)
        with servers(url, server_count, tmp_path) as running:
            bases = [s.base for s in running]
            answers = _send_all(first, bases, setup.secret) + _send_all(second, bases, setup.secret)
        assert len(answers) == len(first) + len(second) == 248  # every request got an answer

        refused = [a for a in answers if a.status not in (200, 201)]
        assert {(a.status, a.body["error"]["code"]) for a in refused} <= {(400, "amount_exceeds_payment")}
        created = Counter(a.request.body["payment_id"] for a in answers[: len(first)] if a.status == 201)
        assert created == Counter({f"pay_{n}": 1 for n in range(24)})

        store = SqlStore(url)
        try:
            assert _ids_per_caller_id(store, "payments", "payment_id") == Counter(
                {f"pay_{n}": 1 for n in range(24)}
            )
            refunds = _ids_per_caller_id(store, "refunds", "refund_id")
            disputes = _ids_per_caller_id(store, "disputes", "dispute_id")
            assert set(refunds.values()) <= {1} and set(disputes.values()) <= {1}
            assert len(refunds) + len(disputes) > 0
            assert _check_every_payment(store) == 24
            _check_answers_are_stored(store, answers)
            consumed = [
                int(
                    scalar(
                        store,
                        "SELECT refunded_amount + disputed_amount FROM payments WHERE payment_id = ?",
                        f"pay_{n}",
                    )
                )
                for n in range(6)
            ]
            # Consumption only grows here (no dispute is won or withdrawn), so each refused report
            # proves the payment had less than that report's amount left: the races filled every
            # raced payment, and never beyond it.
            assert all(AMOUNT - 2_500 < c <= AMOUNT for c in consumed), consumed
        finally:
            store.dispose()


@pytest.mark.parametrize("backend", ["postgres", "sqlite"])
def test_a_server_killed_mid_stream_loses_no_acknowledged_payment_and_leaves_no_half_ledger(
    backend: str, tmp_path: Path
) -> None:
    with database(backend, tmp_path) as url:
        setup = _set_up(url, customers=4)
        acknowledged: dict[str, str] = {}  # payment_id -> txn_ id, from 200/201 answers
        lock = threading.Lock()
        numbers = itertools.count()
        enough = threading.Event()
        stop = threading.Event()

        server = Server(url, tmp_path / "before-kill.log")
        try:

            def stream() -> None:
                with httpx.Client(timeout=30, headers={"Authorization": f"Bearer {setup.secret}"}) as client:
                    for _ in range(400):  # bounded; the kill ends the stream long before
                        if stop.is_set():
                            return
                        request = _payment(setup, next(numbers))
                        try:
                            response = client.post(server.base + request.path, json=request.body)
                        except httpx.TransportError:
                            return  # the server is gone
                        if response.status_code in (200, 201):
                            with lock:
                                acknowledged[request.body["payment_id"]] = response.json()["id"]
                                if len(acknowledged) >= 40:
                                    enough.set()

            threads = [threading.Thread(target=stream) for _ in range(6)]
            for thread in threads:
                thread.start()
            assert enough.wait(timeout=300)
            server.kill()  # SIGKILL while the other requests are in flight
            stop.set()
            for thread in threads:
                thread.join()
        finally:
            server.stop()
        sent = next(numbers)
        assert len(acknowledged) >= 40 and sent > len(acknowledged)

        restarted = Server(url, tmp_path / "after-restart.log")
        try:
            store = SqlStore(url)
            try:
                # Every acknowledged payment exactly once, with the ID it was acknowledged with.
                for payment_id, txn_id in acknowledged.items():
                    assert (
                        scalar(store, "SELECT count(*) FROM payments WHERE payment_id = ?", payment_id) == 1
                    )
                    assert scalar(store, "SELECT id FROM payments WHERE payment_id = ?", payment_id) == txn_id
                # Whatever was committed, acknowledged or not, is whole: entries and event.
                assert _check_every_payment(store) >= len(acknowledged)
            finally:
                store.dispose()
            # Clients retry what was never acknowledged: each ID ends up stored exactly once.
            retries = [_payment(setup, n) for n in range(sent)]
            answers = _send_all(retries, [restarted.base], setup.secret, workers=6)
            assert {a.status for a in answers} <= {200, 201}
            for answer in answers:
                payment_id = answer.request.body["payment_id"]
                if payment_id in acknowledged:
                    assert (answer.status, answer.body["id"]) == (200, acknowledged[payment_id])
            store = SqlStore(url)
            try:
                assert _ids_per_caller_id(store, "payments", "payment_id") == Counter(
                    {f"pay_{n}": 1 for n in range(sent)}
                )
                assert _check_every_payment(store) == sent
            finally:
                store.dispose()
        finally:
            restarted.stop()
