"""Shared test configuration: Hypothesis profiles, dropping the test databases at the end, and
the garbage collector given back after a test that ran ``refcore serve``.

``quick`` (default) keeps the local loop fast; ``ci`` (``HYPOTHESIS_PROFILE=ci``, set by
``.ci/run``) runs at least 1,000 examples for the ledger state machine on the memory store.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

from tests.stores import close_stores

settings.register_profile(
    "quick", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "ci", max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "quick"))


@pytest.fixture(scope="session", autouse=True)
def _drop_test_databases() -> Iterator[None]:
    """Drop the session's PostgreSQL database and SQLite template once every test has run."""
    yield
    close_stores()


@pytest.fixture
def collector_restored() -> Iterator[None]:
    """``serve`` tunes this process's garbage collector; the tests after it get it back as it was."""
    threshold = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*threshold)
