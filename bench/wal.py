"""``python -m bench.wal``: the PostgreSQL WAL each write request costs, by scenario.

Every PostgreSQL row of a full run that missed the p99 target did so inside a checkpoint that
the WAL called for (``bench/notes.md``): the server starts one each time ``max_wal_size``'s worth
of WAL has been written since the last, so the WAL a request writes decides how often that
happens under load, and it is work for the database's CPU besides. This measures it, on the
scenarios' own requests against ``refcore serve`` on a fresh PostgreSQL database:

1. the scenario's requests warm the server up for 2 s;
2. once the server is idle, a ``CHECKPOINT``, then the WAL position and ``pg_stat_wal``;
3. wrk sends the scenario's load for ``--seconds`` (32 connections, as a full run);
4. once the server is idle again (its webhook dispatcher has done its part too), the same
   counters again: their difference divided by the requests wrk counted is the figure.

Both readings wait :data:`STATS_SETTLE_SECONDS` for ``pg_stat_wal``; the bytes are the WAL
position's own difference, exact. Both count the whole PostgreSQL server, so nothing else
should write to it during a run. ``--by-relation`` also reads the WAL between the two positions
with ``pg_waldump`` (which reads the server's data directory: run it as root or as ``postgres``,
on the database's machine) and lists the tables and indexes that wrote most.

With nothing else writing to the PostgreSQL server, two runs of one revision gave its captures
1,224 and 1,225 bytes a request (forty-fifth session); runs while another program wrote to the
same server were up to 70 % higher, since the counters are the server's. The figures also depend
on the server's settings (``full_page_writes``, ``wal_compression``).
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import psycopg
from attrs import asdict, frozen

from bench.cli import database
from bench.instructions import revision
from bench.results import earlier_figures
from bench.scenarios import by_key
from bench.servers import ROOT, Server, refcore_server
from bench.world import build_world, prepare_database
from bench.wrk import Load, run_wrk

WRITES = ("public_capture", "server_capture", "identify", "payment", "refund")
WARMUP_SECONDS = 2.0
#: How long the server's connections must have been idle for ``pg_stat_wal`` to hold all they
#: wrote: PostgreSQL 15's backends report their counters at most once a second while busy, and
#: what is left 10 s after they go idle. Read sooner, a window's last second lands in the next.
STATS_SETTLE_SECONDS = 11.0
#: As in a full run: the server on one CPU, wrk on the other (PostgreSQL's processes on either).
SERVER_CPU, LOAD_CPU = 0, 1
#: ``pg_waldump``'s line: the record's total length, and the first block's relation file.
_RECORD = re.compile(r"len \(rec/tot\):\s+\d+/\s*(\d+).*?desc: (\w+)(?:.*?blkref #0: rel \d+/\d+/(\d+))?")


@frozen
class Counters:
    lsn: str
    records: int
    full_page_images: int
    bytes: int


@frozen
class Written:
    scenario: str
    requests: int
    bytes_per_request: float
    records_per_request: float
    full_page_images_per_request: float
    #: ``(relation, record kind, bytes a request)``, largest first, with ``--by-relation``.
    relations: tuple[tuple[str, str, float], ...] = ()


def counters(url: str) -> Counters:
    """The WAL's position (``bytes`` is its offset, exact) and ``pg_stat_wal``'s records and full
    page images, which lag: see :data:`STATS_SETTLE_SECONDS`."""
    with psycopg.connect(url, autocommit=True) as connection:
        row = connection.execute(
            "SELECT pg_current_wal_lsn()::text, pg_current_wal_lsn() - '0/0'::pg_lsn, wal_records, wal_fpi"
            " FROM pg_stat_wal"
        ).fetchone()
    assert row is not None
    return Counters(lsn=row[0], bytes=int(row[1]), records=int(row[2]), full_page_images=int(row[3]))


def _waldump() -> str | None:
    found = shutil.which("pg_waldump")
    if found:
        return found
    bindirs = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_waldump"), reverse=True)
    return str(bindirs[0]) if bindirs else None


def by_relation(
    url: str, start: str, end: str, requests: int, top: int = 12
) -> tuple[tuple[str, str, float], ...]:
    """The WAL between ``start`` and ``end`` by relation and record kind (``pg_waldump``)."""
    waldump = _waldump()
    if waldump is None:
        raise SystemExit("--by-relation needs pg_waldump (Debian: postgresql-<version>)")
    with psycopg.connect(url, autocommit=True) as connection:
        directory = connection.execute("SHOW data_directory").fetchone()
        rows = connection.execute("SELECT relfilenode::text, relname FROM pg_class WHERE relfilenode <> 0")
        names: dict[str, str] = {str(file): str(name) for file, name in rows}
    assert directory is not None
    dumped = subprocess.run(
        [waldump, "-p", str(Path(directory[0]) / "pg_wal"), "-s", start, "-e", end],
        capture_output=True,
        text=True,
        check=False,
    )
    return relation_totals(dumped.stdout.splitlines(), names, requests, top)


def relation_totals(
    lines: Iterable[str], names: Mapping[str, str], requests: int, top: int
) -> tuple[tuple[str, str, float], ...]:
    """``pg_waldump``'s records summed by relation (named from its file number by ``names``;
    ``-`` for a record of no relation, such as a commit) and record kind, in bytes a request."""
    totals: collections.Counter[tuple[str, str]] = collections.Counter()
    for line in lines:
        match = _RECORD.search(line)
        if match is not None:
            length, kind, relation = match.group(1), match.group(2), match.group(3) or "-"
            totals[(names.get(relation, relation), kind)] += int(length)
    return tuple((name, kind, size / requests) for (name, kind), size in totals.most_common(top))


def measure(
    server: Server, url: str, load: Load, key: str, *, seconds: float, run_dir: Path, relations: bool
) -> Written:
    """One scenario's WAL a request (steps 1 to 4 above)."""
    run_wrk(server.url, load, seconds=WARMUP_SECONDS, run=f"w{key[:2]}", cpu=LOAD_CPU, script_dir=run_dir)
    server.wait_idle()
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute("CHECKPOINT")
    time.sleep(STATS_SETTLE_SECONDS)
    before = counters(url)
    measured = run_wrk(server.url, load, seconds=seconds, run=f"m{key[:2]}", cpu=LOAD_CPU, script_dir=run_dir)
    server.wait_idle()
    time.sleep(STATS_SETTLE_SECONDS)
    after = counters(url)
    requests = max(measured.requests, 1)
    return Written(
        scenario=key,
        requests=measured.requests,
        bytes_per_request=(after.bytes - before.bytes) / requests,
        records_per_request=(after.records - before.records) / requests,
        full_page_images_per_request=(after.full_page_images - before.full_page_images) / requests,
        relations=by_relation(url, before.lsn, after.lsn, requests) if relations else (),
    )


def render(written: Sequence[Written], before: Mapping[str, float] | None = None) -> str:
    head = "| Scenario | requests | WAL bytes / request | records / request | full pages / request |"
    rule = "|---|---:|---:|---:|---:|"
    if before is not None:
        head, rule = head + " before |", rule + "---:|"
    lines = [head, rule]
    for w in written:
        line = (
            f"| {w.scenario} | {w.requests:,} | {w.bytes_per_request:,.0f} | {w.records_per_request:.1f} |"
            f" {w.full_page_images_per_request:.2f} |"
        )
        if before is not None:
            earlier = before.get(w.scenario)
            line += f" {earlier:,.0f} |" if earlier is not None else " |"
        lines.append(line)
        for name, kind, size in w.relations:
            lines.append(f"|   {name} {kind} | | {size:,.0f} | | |" + (" |" if before is not None else ""))
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.wal", description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenarios", default=",".join(WRITES), help="comma-separated write scenarios")
    parser.add_argument("--seconds", type=float, default=8.0, help="measured seconds a scenario")
    parser.add_argument("--by-relation", action="store_true", help="also list the WAL by table and index")
    parser.add_argument("--json", help="where to save the figures (default bench/results/wal.json)")
    parser.add_argument("--compare", help="an earlier run's JSON: its bytes a request as 'before'")
    args = parser.parse_args(argv)
    keys = [key.strip() for key in args.scenarios.split(",") if key.strip()]
    run_dir = Path(tempfile.mkdtemp(prefix="refcore-wal-"))
    written: list[Written] = []
    with database("postgresql", "wal", run_dir) as url:
        token = prepare_database(url)
        with refcore_server("refcore-postgresql", url, cpu=SERVER_CPU, log_dir=run_dir) as server:
            world = build_world(server.url, url, token)
            for key in keys:
                load = by_key(key).load(world)
                if load is None:
                    continue
                written.append(
                    measure(
                        server,
                        url,
                        load,
                        key,
                        seconds=args.seconds,
                        run_dir=run_dir,
                        relations=args.by_relation,
                    )
                )
                print(f"  {key}: {written[-1].bytes_per_request:,.0f} bytes of WAL a request", flush=True)
    out = Path(args.json or ROOT / "bench" / "results" / "wal.json")
    out.write_text(
        json.dumps({"revision": revision(), "written": [asdict(w) for w in written]}, indent=2) + "\n"
    )
    print(render(written, earlier_figures(args.compare, "written", "bytes_per_request")))
    print(f"saved {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
