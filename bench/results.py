"""What a run measured, kept as plain records and saved as JSON next to the report.

The JSON of an earlier run can be given back with ``--compare`` to print "before" figures
beside this run's (how the optimisations of issue 9 are reported).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from attrs import asdict, define, field

from bench.wrk import Measured


@define
class Row:
    """One scenario on one server (``store`` is ``ceiling``, ``sqlite`` or ``postgresql``)."""

    store: str
    scenario: str
    title: str
    measured: Measured | None
    rss_mb: float | None = None
    #: Rows found carrying this run's label, and 2xx answers wrk counted (writes only).
    committed: int | None = None
    acknowledged: int | None = None
    note: str = ""
    #: Server CPU time per answered request (robust to other work on the machine), and the
    #: 1-minute load average right after the run.
    cpu_ms_per_request: float | None = None
    load1: float | None = None
    #: The kernel's part of that CPU time (system calls: the log's writes, ``fsync``, sockets,
    #: thread hand-offs), which a request's instruction count leaves out. Runs saved before the
    #: harness recorded it (revision 4a1dfb2) have none.
    kernel_share: float | None = None
    #: The event loop's part of that CPU time (the server's main thread: HTTP, routing,
    #: rendering answers); the rest is the worker threads running the core and the database
    #: driver. Runs saved before the harness recorded it (the forty-sixth session) have none.
    loop_share: float | None = None


@define
class ScaleRow:
    store: str
    scenario: str
    entries: int
    measured: Measured | None
    rss_mb: float | None = None
    note: str = ""
    cpu_ms_per_request: float | None = None
    load1: float | None = None
    kernel_share: float | None = None
    loop_share: float | None = None


@define
class Results:
    command: str
    mode: str
    facts: dict[str, str]
    method: dict[str, str]
    rows: list[Row] = field(factory=list)
    scaling: list[ScaleRow] = field(factory=list)
    #: Single-caller, in-process timings of the service functions (no HTTP), per store and scale.
    service: list[dict[str, Any]] = field(factory=list)
    #: The core's writes in-process (``bench.core_cost``): store, scenario, threads, calls, cpu_ms.
    core: list[dict[str, Any]] = field(factory=list)
    #: The ceiling measured again once everything else has run: a machine whose speed changed
    #: during the run shows here (runs saved before it was measured have none).
    ceiling_after: Row | None = None

    def ceiling_rps(self) -> float | None:
        for row in self.rows:
            if row.store == "ceiling" and row.measured is not None:
                return row.measured.rps
        return None

    def row(self, store: str, scenario: str) -> Row | None:
        return next((r for r in self.rows if r.store == store and r.scenario == scenario), None)

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(asdict(self), indent=1) + "\n")

    @classmethod
    def load(cls, path: Path) -> Results:
        data = json.loads(path.read_text())

        def measured(value: dict[str, Any] | None) -> Measured | None:
            return Measured(**value) if value else None

        def row(value: dict[str, Any]) -> Row:
            return Row(**{**value, "measured": measured(value["measured"])})

        return cls(
            command=data["command"],
            mode=data["mode"],
            facts=data["facts"],
            method=data["method"],
            rows=[row(r) for r in data["rows"]],
            scaling=[ScaleRow(**{**r, "measured": measured(r["measured"])}) for r in data["scaling"]],
            service=data.get("service", []),
            core=data.get("core", []),
            ceiling_after=row(data["ceiling_after"]) if data.get("ceiling_after") else None,
        )


def earlier_figures(path: str | None, records: str, figure: str) -> dict[str, float] | None:
    """From the JSON a tool saved at ``path`` (its ``--compare``), each scenario's ``figure`` in
    the list ``records``: the "before" column of ``bench.instructions`` and ``bench.wal``."""
    if not path:
        return None
    saved = json.loads(Path(path).read_text())[records]
    return {record["scenario"]: float(record[figure]) for record in saved}
