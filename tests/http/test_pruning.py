"""The server prunes its store while it runs (``refcore_http.pruning``, ``lifespan``).

Every ``REFCORE_PRUNE_INTERVAL_SECONDS`` and once at start, off the event loop, with the
runtime's clock; a failed pruning is logged and tried again; ``0`` turns it off; the memory store
has nothing to prune; the SQL store's pruning deletes its past balance buckets.
"""

from __future__ import annotations

import asyncio
import logging
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

import pytest
from sqlalchemy import insert, select
from starlette.exceptions import StarletteDeprecationWarning
from starlette.testclient import TestClient

from refcore.clocks import ManualClock
from refcore_http.app import create_app
from refcore_http.pruning import Pruner
from refcore_http.settings import Settings, SettingsError
from refcore_http.store import open_store
from refcore_memstore import memory_runtime
from refcore_sqlstore.tables import affiliate_balance_buckets
from tests.sqlstore.raw import engine_of
from tests.stores import fresh_sqlite_store

SECRET_KEY = "test-only server secret key, 32+ characters long"
NOW = datetime(2026, 2, 10, 5, 30, tzinfo=UTC)


class Recorder:
    """A pruning function that records the moments it was called with."""

    def __init__(self, fail: bool = False) -> None:
        self.moments: list[datetime] = []
        self.fail = fail

    def __call__(self, now: datetime) -> int:
        self.moments.append(now)
        if self.fail:
            raise RuntimeError("the database went away")
        return 3


def _wait_until(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 10
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_a_pass_prunes_at_the_clocks_now_and_counts_what_went() -> None:
    recorder = Recorder()
    pruner = Pruner(recorder, ManualClock(NOW), interval_seconds=60)
    assert asyncio.run(pruner.run_once()) == 3
    assert recorder.moments == [NOW]
    assert (pruner.passes, pruner.pruned) == (1, 3)


def test_a_failed_pass_is_logged_and_the_next_one_still_runs(caplog: pytest.LogCaptureFixture) -> None:
    recorder = Recorder(fail=True)
    pruner = Pruner(recorder, ManualClock(NOW), interval_seconds=0.01)

    async def two_passes() -> None:
        await pruner.start()
        while pruner.passes < 2:
            await asyncio.sleep(0.005)
        await pruner.stop()

    with caplog.at_level(logging.ERROR, logger="refcore.pruning"):
        asyncio.run(two_passes())
    assert len(recorder.moments) >= 2 and pruner.pruned == 0
    assert "pruning the store failed" in caplog.text


def test_the_interval_must_be_positive() -> None:
    with pytest.raises(ValueError):
        Pruner(Recorder(), ManualClock(NOW), interval_seconds=0)


@contextmanager
def _serving(prune: Recorder, **settings: object) -> Iterator[TestClient]:
    """An app over the memory store with its lifespan running (the pruning started)."""
    app = create_app(
        memory_runtime(clock=ManualClock(NOW)),
        Settings(database_url="memory://", secret_key=SECRET_KEY).with_overrides(**settings),
        prune=prune,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StarletteDeprecationWarning)
        with TestClient(app) as client:
            yield client


def test_the_server_prunes_at_start_and_at_every_interval() -> None:
    recorder = Recorder()
    with _serving(recorder, prune_interval_seconds=1) as client:
        _wait_until(lambda: len(recorder.moments) >= 2)
        assert client.get("/v1").status_code == 200
    assert recorder.moments[0] == NOW
    calls = len(recorder.moments)
    time.sleep(1.2)
    assert len(recorder.moments) == calls  # stopped with the server


def test_an_interval_of_zero_never_prunes() -> None:
    recorder = Recorder()
    with _serving(recorder, prune_interval_seconds=0) as client:
        assert client.get("/v1").status_code == 200
    assert recorder.moments == []


@pytest.mark.parametrize(
    ("value", "expected"), [("0", 0), ("3600", 3600), (" 60 ", 60), ("-1", None), ("1.5", None), ("x", None)]
)
def test_refcore_prune_interval_seconds(value: str, expected: int | None) -> None:
    environ = {"REFCORE_PRUNE_INTERVAL_SECONDS": value}
    if expected is None:
        with pytest.raises(SettingsError, match="REFCORE_PRUNE_INTERVAL_SECONDS"):
            Settings.from_env(environ)
    else:
        assert Settings.from_env(environ).prune_interval_seconds == expected
    assert Settings.from_env({}).prune_interval_seconds == 600


def test_the_memory_store_has_nothing_to_prune() -> None:
    assert open_store("memory://").prune(NOW) == 0


def test_the_sql_stores_pruning_deletes_its_past_balance_buckets() -> None:
    b = affiliate_balance_buckets
    with fresh_sqlite_store() as store:
        opened = open_store(str(engine_of(store).url))
        try:
            with engine_of(store).begin() as connection:
                connection.execute(
                    insert(b),
                    [
                        {
                            "program_affiliate_id": "pa_x",
                            "mode": "live",
                            "grain": grain,
                            "bucket": bucket,
                            "open_amount": 1,
                            "held_amount": 0,
                        }
                        for grain, bucket in (
                            ("month", "2025-12"),
                            ("day", "2025-12-31"),
                            ("minute", "2026-02-10 05:29"),
                        )
                    ],
                )
            assert opened.prune(NOW) == 1
            with engine_of(store).connect() as connection:
                assert sorted(connection.execute(select(b.c.grain)).scalars()) == ["minute", "month"]
        finally:
            opened.dispose()
