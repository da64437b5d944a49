"""Fixtures of the webhook tests: a test PKI, a real HTTPS receiver, a memory store, a dispatcher."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import pytest

from refcore.clocks import ManualClock
from refcore.crypto import SecretBox
from refcore.services.runtime import Runtime
from refcore_http.webhooks.delivery import Deliverer
from refcore_http.webhooks.dispatcher import WebhookDispatcher
from refcore_memstore import MemoryDatabase, MemoryOutbox, memory_runtime
from tests.contract.scenario import World, build_world
from tests.webhooks.pki import Pki, make_pki
from tests.webhooks.receiver import Receiver

T = TypeVar("T")

SECRET_KEY = "test-only server secret key, 32+ characters long"
#: The delivery budget of tests that do not test the budget (see :func:`deliverer`).
TEST_BUDGET = 30.0


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coroutine)


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(Path(tmp_path_factory.mktemp("pki")))


@pytest.fixture
def receiver(pki: Pki) -> Iterator[Receiver]:
    with Receiver(pki).running() as running:
        yield running


@pytest.fixture
def clock() -> ManualClock:
    """Manual, but starting at the real time: receivers check the signed timestamp against theirs."""
    return ManualClock(datetime.now(UTC))


@pytest.fixture
def database() -> MemoryDatabase:
    return MemoryDatabase()


@pytest.fixture
def rt(clock: ManualClock, database: MemoryDatabase) -> Runtime:
    return memory_runtime(clock=clock, database=database)


@pytest.fixture
def box() -> SecretBox:
    return SecretBox(SECRET_KEY)


@pytest.fixture
def world(rt: Runtime, clock: ManualClock) -> World:
    return build_world(rt, clock, hold_days=0)


@pytest.fixture
def deliverer(pki: Pki) -> Deliverer:
    """Trusts the test CA (as ``REFCORE_WEBHOOK_CA_BUNDLE`` would) and allows loopback.

    Its time budget is generous so that a loaded test machine cannot turn a check of headers or
    exactly-once into a time-out; the 3 s budget itself is tested with the default deliverer
    (:func:`product_deliverer`).
    """
    return Deliverer(allow_private_networks=True, ca_bundle=str(pki.ca_path), timeout_seconds=TEST_BUDGET)


@pytest.fixture
def product_deliverer(pki: Pki) -> Deliverer:
    """The product's 3 s budget (interface 8), trusting the test CA."""
    return Deliverer(allow_private_networks=True, ca_bundle=str(pki.ca_path))


@pytest.fixture
def dispatcher(
    rt: Runtime, database: MemoryDatabase, box: SecretBox, deliverer: Deliverer
) -> WebhookDispatcher:
    return WebhookDispatcher(rt, MemoryOutbox(database), box, deliverer)
