"""Two server processes on one PostgreSQL deliver every event exactly once.

Each process has its own ``SqlStore`` (its own connection pool) and its own dispatcher, as two
``refcore serve`` processes would; they race for the same outbox, and ``FOR UPDATE SKIP LOCKED``
must hand each event to exactly one of them.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import multiprocessing.synchronize
from datetime import UTC, datetime

import pytest

from refcore.clocks import ManualClock
from refcore.crypto import SecretBox
from refcore.models import Event
from refcore_http.webhooks.delivery import Deliverer
from refcore_http.webhooks.dispatcher import WebhookDispatcher
from refcore_sqlstore import SqlStore
from tests.contract.scenario import build_world
from tests.stores import fresh_postgres_database
from tests.webhooks.conftest import SECRET_KEY, TEST_BUDGET
from tests.webhooks.pki import Pki
from tests.webhooks.receiver import Receiver
from tests.webhooks.world import configure, deliveries, produce_every_event

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


def _serve_dispatcher(database_url: str, ca_bundle: str, start: multiprocessing.synchronize.Event) -> None:
    """One server process's dispatcher: drain the outbox until nothing is claimable."""
    store = SqlStore(database_url)
    dispatcher = WebhookDispatcher(
        store.runtime(),
        store.outbox,
        SecretBox(SECRET_KEY),
        Deliverer(allow_private_networks=True, ca_bundle=ca_bundle, timeout_seconds=TEST_BUDGET),
        concurrency=4,
        per_app_concurrency=4,  # one App: 64 claimed events, 16 rounds of 3 s, within the lease
    )
    start.wait(30)
    try:
        asyncio.run(dispatcher.drain())
    finally:
        store.dispose()


def test_two_server_processes_on_one_postgresql_deliver_every_event_exactly_once(
    receiver: Receiver, pki: Pki
) -> None:
    with fresh_postgres_database() as url:  # skips (or fails in CI) without a server
        store = SqlStore(url)
        store.migrate()
        try:
            clock = ManualClock(datetime.now(UTC))
            world = build_world(store.runtime(clock=clock), clock, hold_days=0)
            configured = configure(world, SecretBox(SECRET_KEY), receiver.url("/ok"))
            receiver.secret = configured.secret
            for _ in range(3):
                produce_every_event(world)
            due = sorted(
                e.id
                for e in world.rt.read(lambda tx: tx.uow.events.find_all({}))
                if e.created_at >= configured.endpoint.created_at
            )

            context = multiprocessing.get_context("spawn")
            start = context.Event()
            processes = [
                context.Process(target=_serve_dispatcher, args=(url, str(pki.ca_path), start))
                for _ in range(2)
            ]
            for process in processes:
                process.start()
            start.set()
            for process in processes:
                process.join(120)
            assert [p.exitcode for p in processes] == [0, 0]

            sent = sorted(h.payload["id"] for h in receiver.hits("/ok"))
            assert len(sent) == len(set(sent)), "an event was sent twice"
            assert sent == due
            assert sorted(d.event_id for d in deliveries(world)) == due
            events: list[Event] = world.rt.read(lambda tx: tx.uow.events.find_all({}))
            assert all(e.delivered_at is not None for e in events)
            assert [h.problems for h in receiver.received if h.problems] == []
        finally:
            store.dispose()
