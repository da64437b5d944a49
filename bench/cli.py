"""``python -m bench``: run every measurement of issue 9 and write ``docs/performance.md``.

Modes: the default full run (5 s warm-up, 20 s measured per scenario, 10k/100k/1M entries),
``--quick`` for development (2 s + 5 s, 10k/100k) and ``--smoke`` (SQLite only, 1 s, a tiny
scale: it checks the harness works, its figures mean nothing). Progress goes to stdout.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import secrets
import shlex
import shutil
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import psycopg
from attrs import evolve, frozen
from sqlalchemy import create_engine, make_url

from bench import report
from bench.core_cost import BATCH, THREADS, WRITES, time_writes
from bench.databases import postgres_available, postgres_database, sqlite_url
from bench.machine import facts, sync_latency
from bench.results import Results, Row, ScaleRow
from bench.scenarios import BROWSER_HEADERS, SCALING_READS, SCENARIOS, Scenario, by_key, count_written
from bench.seed import Seeder
from bench.servers import LOG_LEVEL, ROOT, Server, ceiling_server, load_average, refcore_server
from bench.service_timing import time_reads
from bench.world import PROGRAM_BPS, World, build_world, prepare_database
from bench.wrk import CONNECTIONS, Load, Measured, ensure_wrk, run_wrk
from refcore_sqlstore import SqlStore
from refcore_sqlstore.engine import normalise_url

STORES = ("sqlite", "postgresql")


@frozen
class Sample:
    measured: Measured
    rss_mb: float
    label: str
    cpu_ms_per_request: float | None
    load1: float
    #: The kernel's part of the server's CPU time over the run (``None`` when it used none).
    kernel_share: float | None
    #: The event loop's (main thread's) part of it (``None`` when the server used none).
    loop_share: float | None


#: Ten affiliates share the growing history; one more keeps a fixed history (``steady_balance``).
SCALING_AFFILIATES = 10


@frozen
class Plan:
    mode: str
    warmup: float
    duration: float
    scales: tuple[int, ...]
    stores: tuple[str, ...]
    scenarios: tuple[str, ...]
    service_seconds: float
    #: Calls per write and thread count in the in-process measurement of the core (core_cost).
    core_calls: int

    def estimate_seconds(self) -> float:
        per_run = self.warmup + self.duration + 1
        scenario_runs = 2 + len(self.stores) * len(self.scenarios)  # the ceiling twice
        scale_runs = len(self.stores) * len(self.scales) * len(SCALING_READS)
        # Seconds per million entries, measured: the balance projection's triggers run on every
        # seeded row (SQLite about 450 s, PostgreSQL about 1,100 s on this machine kind).
        per_million = {"sqlite": 450, "postgresql": 1100}
        seeding = (
            sum(per_million.get(store, 1100) for store in self.stores)
            * max(self.scales, default=0)
            / 1_000_000
        )
        service = len(self.stores) * len(self.scales) * 2 * self.service_seconds
        return (scenario_runs + scale_runs) * per_run + seeding + service + 20 * len(self.stores)


_ALL = tuple(s.key for s in SCENARIOS)
PLANS = {
    "full": Plan("full", 5, 20, (10_000, 100_000, 1_000_000), STORES, _ALL, 5, 2000),
    "quick": Plan("quick", 2, 5, (10_000, 100_000), STORES, _ALL, 2, 500),
    "smoke": Plan("smoke", 0, 1, (1_000,), ("sqlite",), _ALL, 0.3, 20),
}


class Progress:
    def __init__(self) -> None:
        self.started = time.monotonic()

    def __call__(self, message: str) -> None:
        elapsed = time.monotonic() - self.started
        print(f"[{int(elapsed // 60):02d}:{int(elapsed % 60):02d}] {message}", flush=True)


def label() -> str:
    """A run label for unique IDs: letters and digits only (safe in Lua, in IDs, in LIKE)."""
    return secrets.token_hex(3)


@contextlib.contextmanager
def database(store: str, name: str, run_dir: Path) -> Iterator[str]:
    if store == "sqlite":
        yield sqlite_url(run_dir, name)
    else:
        with postgres_database(name) as url:
            yield url


class Runner:
    def __init__(self, plan: Plan, run_dir: Path, progress: Progress) -> None:
        self.plan = plan
        self.run_dir = run_dir
        self.say = progress
        cpus = os.cpu_count() or 1
        self.server_cpu: int | None = 0 if cpus >= 2 else None
        self.load_cpu: int | None = 1 if cpus >= 2 else None
        #: In-process costs of the core's writes (bench.core_cost), per store.
        self.core: list[dict[str, Any]] = []

    def method(self) -> dict[str, str]:
        pinning = (
            f"server on CPU {self.server_cpu}, wrk on CPU {self.load_cpu} (taskset); "
            "PostgreSQL's own processes are not pinned and share both CPUs"
            if self.server_cpu is not None
            else "not pinned (one CPU)"
        )
        return {
            "Load": f"wrk, 1 thread, {CONNECTIONS} connections, keep-alive, Lua-built requests",
            "Durations": f"{self.plan.warmup:g} s warm-up (discarded), then {self.plan.duration:g} s measured"
            " per scenario",
            "Pinning": pinning,
            "Servers": f"1 uvicorn process each, log level {LOG_LEVEL} (no access log), same uvicorn call",
            "Set-up checkpoint": "on PostgreSQL a `CHECKPOINT` once the fresh database is migrated and"
            " holds its tenant (and once each seeding is done), before the first measured scenario; a"
            " production database was not created a minute before its load, and in earlier full runs"
            " the first checkpoint that the captures' WAL started also wrote and `fsync`ed the files"
            " the set-up had dirtied (555 in one run), inside whichever scenario's window it ended. The"
            " checkpoints that the measured scenarios' own WAL starts still fall inside the measurements",
        }

    def measure(
        self, server: Server, load: Load, tag: str, *, after_warmup: Callable[[], None] | None = None
    ) -> Sample:
        run = f"{tag}{label()}"
        if self.plan.warmup:
            run_wrk(
                server.url,
                load,
                seconds=self.plan.warmup,
                run=f"w{run}",
                cpu=self.load_cpu,
                script_dir=self.run_dir,
            )
        if after_warmup is not None:
            after_warmup()
        user_before, system_before = server.cpu_times()
        loop_before = server.loop_cpu_seconds()
        measured = run_wrk(
            server.url,
            load,
            seconds=self.plan.duration,
            run=f"m{run}",
            cpu=self.load_cpu,
            script_dir=self.run_dir,
        )
        # The main thread's reading falls inside the process's (read after it at the start,
        # before it at the end), so the loop's part never counts time the whole did not: read the
        # other way round, a row of a smoke run in CI had shown a share over 100 %.
        loop = server.loop_cpu_seconds() - loop_before
        user_after, system_after = server.cpu_times()
        system = system_after - system_before
        cpu = user_after - user_before + system
        sample = Sample(
            measured=measured,
            rss_mb=server.rss_mb(),
            label=f"m{run}",
            cpu_ms_per_request=cpu * 1000 / measured.requests if measured.requests else None,
            load1=load_average(),
            kernel_share=system / cpu if cpu > 0 else None,
            # At most the whole: the two readings round to clock ticks apart.
            loop_share=min(1.0, loop / cpu) if cpu > 0 else None,
        )
        if not server.wait_idle():
            # Requests wrk gave up on are still queued in the server: start it afresh so they
            # do not eat into the next measurement.
            self.say(f"  {server.name} still busy with queued requests after the run: restarting it")
            server.restart()
        return sample

    def ceiling(self, *, again: bool = False) -> Row:
        self.say("ceiling again, at the end of the run" if again else "ceiling: bare Starlette endpoint")
        with ceiling_server(cpu=self.server_cpu, log_dir=self.run_dir) as server:
            body = '{"via":"ceiling","page":"https://shop.example/pricing?via=x&n={uid}"}'
            sample = self.measure(server, Load("POST", "/v1/capture", BROWSER_HEADERS, body), "c")
        m = sample.measured
        self.say(
            f"  ceiling: {m.rps:,.0f} req/s, p50 {m.p50_ms:.1f} ms, p99 {m.p99_ms:.1f} ms, {_cpu(sample)}"
        )
        return Row(
            "ceiling",
            "ceiling",
            "bare Starlette JSON endpoint",
            m,
            sample.rss_mb,
            cpu_ms_per_request=sample.cpu_ms_per_request,
            load1=sample.load1,
            kernel_share=sample.kernel_share,
            loop_share=sample.loop_share,
        )

    def scenario(self, store: str, server: Server, world: World, scenario: Scenario, url: str) -> Row:
        load = scenario.load(world)
        if load is None:
            self.say(f"  {scenario.key}: not yet (the server has no such route)")
            return Row(store, scenario.key, scenario.title, None, note="not yet: no route on the server")
        after_warmup = None
        if analyzes_after_warmup(store, scenario):
            self.say(f"  {scenario.key}: VACUUM ANALYZE after the warm-up, as autovacuum would")
            after_warmup = partial(_vacuum_analyze, url)
        sample = self.measure(server, load, scenario.key[:2], after_warmup=after_warmup)
        measured = sample.measured
        row = Row(
            store,
            scenario.key,
            scenario.title,
            measured,
            sample.rss_mb,
            cpu_ms_per_request=sample.cpu_ms_per_request,
            load1=sample.load1,
            kernel_share=sample.kernel_share,
            loop_share=sample.loop_share,
        )
        if scenario.written is not None:
            engine = create_engine(normalise_url(url))
            try:
                with engine.connect() as connection:
                    row.committed = count_written(connection, scenario.written, sample.label)
            finally:
                engine.dispose()
            row.acknowledged = measured.ok
        self.say(
            f"  {scenario.key}: {measured.rps:,.0f} req/s, p50 {measured.p50_ms:.1f} ms, "
            f"p99 {measured.p99_ms:.1f} ms, errors {measured.errors}, RSS {sample.rss_mb:.0f} MB, "
            f"{_cpu(sample)}"
            + (
                f", committed {row.committed}/{row.acknowledged} acknowledged"
                if row.committed is not None
                else ""
            )
            + (f"\n    first error: {measured.sample}" if measured.sample else "")
        )
        return row

    def store(self, store: str) -> list[Row]:
        rows: list[Row] = []
        with database(store, "scenarios", self.run_dir) as url:
            self.say(f"{store}: migrating a fresh database, starting refcore serve")
            token = prepare_database(url)
            with refcore_server(f"refcore-{store}", url, cpu=self.server_cpu, log_dir=self.run_dir) as server:
                world = build_world(server.url, url, token)
                if store == "postgresql":
                    self.say("  CHECKPOINT after the set-up, before the first measured scenario")
                    checkpoint_set_up(url)
                vacuum_before = scenarios_after_writes(self.plan.scenarios) if store == "postgresql" else ()
                for key in self.plan.scenarios:
                    if key in vacuum_before:
                        # The reads run on the tables as autovacuum leaves them after the writes
                        # before them (see _vacuum_analyze): without it, the commissions page
                        # answered 218 req/s instead of 573 (bench/history.md, eighth session).
                        self.say("  VACUUM ANALYZE after the write scenarios, as autovacuum would")
                        _vacuum_analyze(url)
                    rows.append(self.scenario(store, server, world, by_key(key), url))
            writes = [key for key in self.plan.scenarios if key in WRITES]
            if writes:
                self.say(
                    f"  the core alone, in-process: {', '.join(writes)} at {THREADS} threads"
                    + (f", and in write batches of {BATCH}" if store == "sqlite" else "")
                )
                for item in time_writes(
                    url, world, keys=writes, calls=self.plan.core_calls, cpu=self.server_cpu, run=label()
                ):
                    self.core.append({"store": store, **item})
                    cost = f"{item['cpu_ms']:.2f} ms of CPU a call"
                    callers = f"{item['threads']} thread(s)" + (
                        f" in batches of {item['batch']}" if "batch" in item else ""
                    )
                    self.say(f"    {item['scenario']}, {callers}: {cost}")
        return rows

    def scaling(self, store: str, results: Results) -> None:
        with database(store, "scaling", self.run_dir) as url:
            self.say(f"{store} scaling: fresh database, {SCALING_AFFILIATES} affiliates")
            token = prepare_database(url)
            with refcore_server(
                f"refcore-{store}-scaling", url, cpu=self.server_cpu, log_dir=self.run_dir
            ) as server:
                world = build_world(
                    server.url,
                    url,
                    token,
                    name="scale",
                    affiliates=SCALING_AFFILIATES,
                    clicks=2,
                    customers=2,
                    refundable_payments=0,
                )
                seeder = Seeder(
                    url,
                    app_id=world.app_id,
                    program_id=world.program_id,
                    affiliate_ids=world.affiliate_ids[:-1],
                    link_ids=world.link_ids[:-1],
                    steady=(world.affiliate_ids[-1], world.link_ids[-1]),
                    bps=PROGRAM_BPS,
                    now=datetime.now(UTC),
                )
                try:
                    for scale in self.plan.scales:
                        started = time.monotonic()
                        seeder.grow_to(scale, progress=lambda _m: None)
                        self.say(f"  seeded {seeder.entries:,} entries in {time.monotonic() - started:.0f} s")
                        pruned = prune_seeded(url)
                        self.say(f"  pruned {pruned:,} past balance-bucket rows, as the server would")
                        if store == "postgresql":
                            _vacuum_analyze(url)
                            checkpoint_set_up(url)
                        else:
                            checkpoint_seeded_file(url)
                        for key in SCALING_READS:
                            load = by_key(key).load(world)
                            if load is None:
                                results.scaling.append(ScaleRow(store, key, scale, None, note="not yet"))
                                self.say(f"    {key}: not yet (no route)")
                                continue
                            sample = self.measure(server, load, key[:2])
                            m = sample.measured
                            results.scaling.append(
                                ScaleRow(
                                    store,
                                    key,
                                    scale,
                                    m,
                                    sample.rss_mb,
                                    cpu_ms_per_request=sample.cpu_ms_per_request,
                                    load1=sample.load1,
                                    kernel_share=sample.kernel_share,
                                    loop_share=sample.loop_share,
                                )
                            )
                            self.say(
                                f"    {key} @ {scale:,}: {m.rps:,.0f} req/s, p50 {m.p50_ms:.1f} ms,"
                                f" p99 {m.p99_ms:.1f} ms, errors {m.errors}, {_cpu(sample)}"
                            )
                        timings = time_reads(
                            url,
                            app_key=world.live_key,
                            program_id=world.program_id,
                            affiliate_keys={
                                "payout_balance": world.affiliate_keys[0],
                                "steady_balance": world.affiliate_keys[-1],
                            },
                            seconds=self.plan.service_seconds,
                        )
                        for key, timing in timings.items():
                            results.service.append(
                                {"store": store, "scenario": key, "entries": scale, **timing}
                            )
                            self.say(f"    in-process {key} @ {scale:,}: p50 {timing['p50_ms']:.2f} ms")
                finally:
                    seeder.close()


def scenarios_after_writes(keys: Sequence[str]) -> frozenset[str]:
    """The read scenarios that directly follow one or more write scenarios (PostgreSQL vacuums
    and analyzes its database before each of them: see :func:`_vacuum_analyze`)."""
    found: set[str] = set()
    wrote = False
    for key in keys:
        writes = by_key(key).written is not None
        if wrote and not writes:
            found.add(key)
        wrote = writes
    return frozenset(found)


def analyzes_after_warmup(store: str, scenario: Scenario) -> bool:
    """Whether PostgreSQL's tables get ``VACUUM ANALYZE`` between a scenario's warm-up and its
    measurement: on PostgreSQL, for the scenarios that write.

    Each write scenario starts on tables that were nearly empty when the database was last
    analyzed, and its warm-up adds thousands of rows within seconds. Without statistics the
    planner took the payments' (app, mode, attributed, created_at) index for the idempotency
    lookup and filtered every payment of the App, 6,444 rows read for each new payment (1.2 ms
    instead of 0.02; ``EXPLAIN ANALYZE``, ``bench/history.md``). A production server's autovacuum
    (on by default; this machine's is off, see :func:`_vacuum_analyze`) analyzes a table once a
    tenth of it changed; a production table grows from empty like this once in its life."""
    return store == "postgresql" and scenario.written is not None


def _cpu(sample: Sample) -> str:
    cost = sample.cpu_ms_per_request
    if not cost:
        return f"load {sample.load1:.1f}"
    shares = report.cpu_shares(sample.kernel_share, sample.loop_share)
    return f"server CPU {cost:.2f} ms/request{shares}, load {sample.load1:.1f}"


def _vacuum_analyze(url: str) -> None:
    """Do once, now, what PostgreSQL's autovacuum does within a minute of a bulk load.

    The seeder writes history in large transactions, and the balance projection's triggers
    update each affiliate's month, day, hour and minute rows once per seeded entry: inside one
    transaction none of those row versions can be pruned, so each lands on a new page with a
    new index entry. The PostgreSQL server of this machine runs with ``autovacuum = off`` (the
    machine facts say so), so nothing would ever clear them: 10,000 seeded entries left 36,869
    dead versions beside 20,916 live rows, and a balance read visited 762 heap pages for its 13
    month rows. A production server (autovacuum on, PostgreSQL's default) vacuums and analyzes
    such a table within a minute; the scaling reads measure that state, as the SQLite rows
    measure the file after the checkpoint a server's writes would trigger.

    The scenario database gets the same before its first read scenario that follows write
    scenarios: by then the payment and refund runs have written thousands of rows (the refund
    run rewrites its 32 payments thousands of times each), and the reads ran on those dead row
    versions and on plans without statistics."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")


def checkpoint_set_up(url: str) -> None:
    """Write out, now, what the harness's set-up left for PostgreSQL's next checkpoint.

    A run's database is created, migrated and given its tenant (or its seeded history) seconds
    before the first measured scenario. In the thirty-first session's full runs the first
    checkpoint after that (the captures' WAL starts one within minutes) also wrote and
    ``fsync``ed the 555 files the set-up had dirtied, 0.17 to 0.19 s at its end, inside
    whichever scenario's window it fell, and that scenario's p99 went over or near 50 ms in
    three full runs of four; in the thirty-second session's runs of PostgreSQL alone it synced
    9 or 10 files with or without this (``bench/history.md``). A production database was not
    created a minute ago. The checkpoints that the measured scenarios' own WAL starts still
    happen inside the measurements, as on a production server."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CHECKPOINT")


def prune_seeded(url: str) -> int:
    """Do at once what a server's pruning (``REFCORE_PRUNE_INTERVAL_SECONDS``, ten minutes by
    default) does to a history written over a year: delete the balance projection's day, hour and
    minute rows of the past. The seeder writes the year in minutes, so without this the scaling
    reads would run on a table a production server never keeps, and the server's own pruning
    would delete it during a later measurement."""
    store = SqlStore(url)
    try:
        return store.prune_balance_buckets(datetime.now(UTC))
    finally:
        store.dispose()


#: How long the seeded file's checkpoint keeps trying before the run stops. The scaling
#: server runs while the seeder writes, and its first commit after a seeding (the webhook
#: dispatcher closing the world's events, say) starts SQLite's automatic checkpoint of the
#: seeder's large log. SQLite refuses a second checkpointer at once instead of waiting for the
#: first: its busy timeout covers readers and the writer, not that (a 250 MB log checkpointed
#: in one connection made a ``TRUNCATE`` checkpoint in another return busy after 0.0 s with a
#: 5 s timeout). A smoke run failed on it once in the sixteenth session.
CHECKPOINT_PATIENCE_SECONDS = 30.0


def checkpoint_seeded_file(
    url: str, *, patience: float = CHECKPOINT_PATIENCE_SECONDS, pause: float = 0.1
) -> None:
    """Fold the seeding's write-ahead log back into the SQLite file and empty it.

    The seeder writes history in large transactions; the last one leaves a WAL of hundreds of
    thousands of pages that no later write resets, and every read then looks its pages up in
    that WAL's index (at 1M entries the balance read cost four times what it did after a
    checkpoint). A server taking writes resets its WAL after each completed checkpoint within
    seconds; this puts the seeded file in that state, as ``VACUUM ANALYZE`` does for PostgreSQL.

    A refused checkpoint is tried again every ``pause`` seconds (each try also waits up to
    ``pause`` for readers and the writer) until ``patience`` runs out; a reader that holds the
    log all that time still stops the run, since the reads would then measure a full log."""
    path = make_url(url).database
    assert path is not None
    deadline = time.monotonic() + patience
    connection = sqlite3.connect(path, timeout=pause)
    try:
        while True:
            busy, _, _ = connection.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            if not busy:
                return
            if time.monotonic() >= deadline:
                raise RuntimeError(
                    f"the seeded SQLite file could not be checkpointed within {patience:g} s:"
                    " a reader or another checkpoint held it"
                )
            time.sleep(pause)
    finally:
        connection.close()


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="short runs, 10k and 100k entries")
    mode.add_argument("--smoke", action="store_true", help="SQLite only, 1 s runs: checks the harness")
    parser.add_argument("--stores", help=f"comma-separated subset of {','.join(STORES)}")
    parser.add_argument("--scenarios", help="comma-separated scenario keys (default: all)")
    parser.add_argument("--scales", help="comma-separated entry counts for the scaling reads")
    parser.add_argument("--no-scaling", action="store_true", help="skip the scaling reads")
    parser.add_argument("--output", default=str(ROOT / "docs" / "performance.md"), help="the report")
    parser.add_argument("--json", help="where to save the raw results (default bench/results/<mode>.json)")
    parser.add_argument("--compare", help="an earlier run's JSON: its figures appear as 'before'")
    parser.add_argument("--keep", action="store_true", help="keep the run directory (logs, Lua, SQLite)")
    parser.add_argument(
        "--probe",
        action="store_true",
        help="measure the ceiling alone, as the run would, print it and write nothing "
        "(how fast the machine is today, before a long run)",
    )
    parser.add_argument(
        "--render", metavar="JSON", help="measure nothing: write the report again from a run's saved JSON"
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(argv)
    # Read now: a run writes its own results over the file it may be compared with
    # (``--compare bench/results/full.json`` without ``--json``), and only once it is over.
    before = Results.load(Path(args.compare)) if args.compare else None
    if args.render:
        saved = Results.load(Path(args.render))
        scales = tuple(sorted({row.entries for row in saved.scaling}))
        rendered_with = "python -m bench " + " ".join(
            shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:])
        )
        page = report.render(saved, plan_scales=scales, before=before, rendered_with=rendered_with)
        Path(args.output).write_text(page)
        print(report.summary(saved), flush=True)
        return 0
    plan = PLANS["quick" if args.quick else "smoke" if args.smoke else "full"]
    if args.stores:
        plan = evolve(plan, stores=tuple(s for s in args.stores.split(",") if s))
    if args.scenarios:
        plan = evolve(plan, scenarios=tuple(s for s in args.scenarios.split(",") if s))
    if args.scales:
        plan = evolve(plan, scales=tuple(int(s) for s in args.scales.split(",") if s))
    if args.no_scaling:
        plan = evolve(plan, scales=())
    for key in plan.scenarios:
        by_key(key)
    unknown = set(plan.stores) - set(STORES)
    if unknown:
        raise SystemExit(f"unknown store {sorted(unknown)}; choose from {STORES}")
    if "postgresql" in plan.stores and not args.probe and not postgres_available():
        raise SystemExit("PostgreSQL is not reachable on 127.0.0.1:5432; use --stores sqlite")

    command = "python -m bench " + " ".join(
        shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:])
    )
    progress = Progress()
    ensure_wrk()
    run_dir = Path(tempfile.mkdtemp(prefix="refcore-bench-", dir="/var/tmp"))
    runner = Runner(plan, run_dir, progress)
    if args.probe:
        try:
            runner.ceiling()
            progress(f"  disk: {sync_latency(run_dir, plan.duration / 2)}")
        finally:
            shutil.rmtree(run_dir, ignore_errors=True)
        return 0
    progress(f"{plan.mode} run, about {plan.estimate_seconds() / 60:.0f} min; working in {run_dir}")
    results = Results(
        command=command.strip(),
        mode=plan.mode,
        facts=facts(run_dir, sync_seconds=plan.duration / 2),
        method=runner.method(),
    )
    json_path = Path(args.json) if args.json else ROOT / "bench" / "results" / f"{plan.mode}.json"
    json_path.parent.mkdir(parents=True, exist_ok=True)
    try:
        results.rows.append(runner.ceiling())
        results.save(json_path)  # after each step, so a run cut short keeps what it measured
        for store in plan.stores:
            results.rows.extend(runner.store(store))
            results.core = runner.core
            results.save(json_path)
        if plan.scales:
            for store in plan.stores:
                runner.scaling(store, results)
                results.save(json_path)
        if plan.stores:
            results.ceiling_after = runner.ceiling(again=True)
    finally:
        if args.keep:
            progress(f"run directory kept: {run_dir}")
        else:
            shutil.rmtree(run_dir, ignore_errors=True)
    results.save(json_path)
    output = Path(args.output)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(report.render(results, plan_scales=plan.scales, before=before))
    progress(f"wrote {output} and {json_path}")
    print(report.summary(results), flush=True)
    return 0
