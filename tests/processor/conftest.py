"""Fixtures of the processor tests: the API over the memory store with a manual clock, a server
key and a processor install URL; a tenant ``acme`` and its connected Test ``installation``.
Tests that must hold on every store take ``store_client``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from refcore.clocks import ManualClock
from refcore.services.runtime import Runtime
from refcore_http.app import create_app
from refcore_http.settings import Settings
from refcore_memstore import memory_runtime
from tests.http.world import Client, Tenant, new_tenant
from tests.processor.world import CONNECT_URL, SECRET_KEY, Installation, connect, new_installation
from tests.stores import STORES


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def runtime(clock: ManualClock) -> Runtime:
    return memory_runtime(clock=clock)


@pytest.fixture
def settings() -> Settings:
    return Settings(database_url="memory://", secret_key=SECRET_KEY, processor_connect_url=CONNECT_URL)


@pytest.fixture
def client(runtime: Runtime, settings: Settings) -> Client:
    return Client(create_app(runtime, settings))


@pytest.fixture(params=sorted(STORES))
def store_runtime(request: pytest.FixtureRequest, clock: ManualClock) -> Iterator[Runtime]:
    with STORES[request.param](clock) as rt:
        yield rt


@pytest.fixture
def store_client(store_runtime: Runtime, settings: Settings) -> Client:
    return Client(create_app(store_runtime, settings))


@pytest.fixture
def acme(client: Client, runtime: Runtime) -> Tenant:
    return new_tenant(client, runtime, "acme")


@pytest.fixture
def installation(client: Client, acme: Tenant) -> Installation:
    """acme's Test-mode processor connection."""
    installation = new_installation()
    connect(client, acme, installation)
    return installation
