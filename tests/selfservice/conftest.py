"""Fixtures of the self-service tests: an app over the memory store, a manual clock, and the
``file:`` mailer writing into a temporary directory the tests read like a mailbox."""

from __future__ import annotations

from pathlib import Path

import pytest

from refcore.clocks import ManualClock
from refcore.services.runtime import Runtime
from refcore_http.app import create_app
from refcore_http.settings import Settings
from refcore_memstore import memory_runtime
from tests.http.world import Client

CONFIRM_URL = "https://partners.example/join/{slug}/confirm?lang=en"


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def runtime(clock: ManualClock) -> Runtime:
    return memory_runtime(clock=clock)


@pytest.fixture
def mail_dir(tmp_path: Path) -> Path:
    return tmp_path / "mail"


@pytest.fixture
def settings(mail_dir: Path) -> Settings:
    return Settings(database_url="memory://", mailer=f"file:{mail_dir}", join_confirm_url=CONFIRM_URL)


@pytest.fixture
def client(runtime: Runtime, settings: Settings) -> Client:
    return Client(create_app(runtime, settings))
