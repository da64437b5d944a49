"""Without a reachable PostgreSQL its tests skip with the reason locally and fail in CI
(``REFCORE_REQUIRE_POSTGRES=1``), so a CI run can never pass by silently skipping them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
UNREACHABLE = "postgresql://postgres@127.0.0.1:1/postgres"
TARGET = "tests/sqlstore/test_unit_of_work.py::test_writes_after_a_commit_need_their_own_commit[postgres]"
PLUGINS_OFF = ("-p", "no:xdist")


def _run(require: bool) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "REFCORE_REQUIRE_POSTGRES"}
    env["REFCORE_TEST_POSTGRES_URL"] = UNREACHABLE
    if require:
        env["REFCORE_REQUIRE_POSTGRES"] = "1"
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-rsf", "-q", "-p", "no:cacheprovider", *PLUGINS_OFF, TARGET],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.parametrize("require", [False, True])
def test_an_unreachable_postgres_skips_locally_and_fails_when_required(require: bool) -> None:
    outcome = _run(require)
    assert "127.0.0.1:1" in outcome.stdout and "cannot be reached" in outcome.stdout
    if require:
        assert outcome.returncode != 0
        assert "1 error" in outcome.stdout or "1 failed" in outcome.stdout
    else:
        assert outcome.returncode == 0
        assert "1 skipped" in outcome.stdout
