"""Fixtures of the HTTP tests: an app over the memory store with a manual clock."""

from __future__ import annotations

import pytest

from refcore.clocks import ManualClock
from refcore.services.runtime import Runtime
from refcore_http.app import create_app
from refcore_http.settings import Settings, parse_networks
from refcore_memstore import memory_runtime
from tests.http.world import Client

#: The test client connects from this address; the proxy tests trust this network.
PROXY_NETWORK = "10.0.0.0/8"


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def runtime(clock: ManualClock) -> Runtime:
    return memory_runtime(clock=clock)


@pytest.fixture
def settings() -> Settings:
    return Settings(database_url="memory://", trusted_proxies=parse_networks(PROXY_NETWORK, name="test"))


@pytest.fixture
def client(runtime: Runtime, settings: Settings) -> Client:
    return Client(create_app(runtime, settings))
