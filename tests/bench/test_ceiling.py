"""The ceiling runs under the uvicorn options ``refcore serve`` runs under (issue 9: "same
uvicorn settings"), so its ratio measures refcore and nothing else."""

from __future__ import annotations

import sys
from typing import Any

import pytest
import uvicorn

from bench import ceiling
from refcore_http import cli

#: Options that differ by nature: what is served, where, and refcore's own loggers' handlers.
OWN_OPTIONS = {"host", "port", "log_config"}


@pytest.mark.usefixtures("collector_restored")
@pytest.mark.parametrize("level", ["info", "warning"])
def test_the_ceiling_runs_under_refcore_serves_uvicorn_options(
    monkeypatch: pytest.MonkeyPatch, level: str
) -> None:
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **options: calls.append(options))
    assert cli.main(["serve", "--database-url", "memory://", "--log-level", level]) == 0
    monkeypatch.setattr(sys, "argv", ["bench.ceiling", "--port", "1", "--log-level", level])
    ceiling.main()

    refcore_options, ceiling_options = ({k: v for k, v in o.items() if k not in OWN_OPTIONS} for o in calls)
    assert ceiling_options == refcore_options
    assert refcore_options["access_log"] is (level == "info")
