"""The benchmark harness (``bench/``): its pure parts, and one smoke run end to end.

No timing is asserted anywhere: the smoke run only checks that the harness starts the servers,
drives them with wrk, finds every acknowledged write in the database and writes its report.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import bench.cli
import psycopg
import pytest
from bench.cli import (
    Plan,
    Runner,
    analyzes_after_warmup,
    checkpoint_seeded_file,
    checkpoint_set_up,
    prune_seeded,
    scenarios_after_writes,
)
from bench.machine import describe_sync, sync_latency
from bench.report import render, verdicts
from bench.results import Results, Row
from bench.scenarios import SCENARIOS
from bench.wrk import Load, Measured, lua_concat, lua_script

from refcore_sqlstore import SqlStore
from tests.stores import fresh_postgres_database, libpq_url

ROOT = Path(__file__).resolve().parents[2]


def _measured(requests: int, p99_ms: float) -> Measured:
    return Measured(
        requests=requests,
        seconds=1.0,
        p50_ms=p99_ms / 2,
        p90_ms=p99_ms,
        p99_ms=p99_ms,
        max_ms=p99_ms,
        non2xx=0,
        socket_errors=0,
        sample="",
    )


def test_placeholders_become_lua_concatenations_of_the_unique_id_and_pool_picks() -> None:
    expression = lua_concat('{"id":"pay-{uid}","customer":"{pool:customers}"}')
    assert (
        expression == '"{\\"id\\":\\"pay-" .. uid .. "\\",\\"customer\\":\\"" .. pick("customers") .. "\\"}"'
    )


def test_a_template_without_placeholders_is_one_lua_string() -> None:
    assert lua_concat("/v1/commissions?limit=25") == '"/v1/commissions?limit=25"'


def test_the_script_counts_non_2xx_answers_and_reports_one_json_line() -> None:
    script = lua_script(Load("GET", "/v1", {"Authorization": "Bearer key_x"}), run="abc123")
    assert "status < 200 or status > 299" in script
    assert "BENCH_JSON" in script and "latency:percentile(99)" in script
    assert 'local run = "abc123"' in script


def test_a_scenario_that_got_no_answer_misses_the_p99_target() -> None:
    results = Results(command="python -m bench", mode="smoke", facts={}, method={})
    results.rows = [
        Row("ceiling", "ceiling", "ceiling", _measured(1000, 5.0)),
        Row("sqlite", "public_capture", "capture", _measured(500, 20.0)),
        Row("sqlite", "payout_balance", "balance", _measured(0, 0.0)),
    ]
    p99 = next(v for v in verdicts(results) if v.target.startswith("p99"))
    assert p99.met is False
    assert "payout_balance" in p99.result


def test_an_acknowledged_write_missing_from_the_database_misses_the_commit_target() -> None:
    results = Results(command="python -m bench", mode="smoke", facts={}, method={})
    results.rows = [
        Row("ceiling", "ceiling", "ceiling", _measured(1000, 5.0)),
        Row("sqlite", "payment", "payment", _measured(100, 20.0), committed=99, acknowledged=100),
    ]
    committed = next(v for v in verdicts(results) if v.target.startswith("every acknowledged write"))
    assert committed.met is False


#: End-to-end runs of the harness: real servers driven by wrk, pinned with taskset.
runs_the_harness = pytest.mark.skipif(
    shutil.which("wrk") is None or shutil.which("taskset") is None, reason="needs wrk and taskset"
)


def _run_bench(tmp_path: Path, *options: str) -> tuple[subprocess.CompletedProcess[str], Path, Path]:
    """``python -m bench`` with ``options``, its report and JSON in ``tmp_path``; it must succeed."""
    output, raw = tmp_path / "performance.md", tmp_path / "results.json"
    command = [sys.executable, "-m", "bench", *options, "--output", str(output), "--json", str(raw)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return done, output, raw


@pytest.mark.slow
@runs_the_harness
def test_a_smoke_run_measures_writes_that_all_reached_the_database(tmp_path: Path) -> None:
    # The run is compared with an earlier one saved where its own results go: the report's
    # "before" must be that earlier run, read before this one wrote over it.
    earlier = Results(command="python -m bench (the earlier run)", mode="smoke", facts={}, method={})
    earlier.rows = [Row("ceiling", "ceiling", "ceiling", _measured(1000, 5.0))]
    earlier.save(tmp_path / "results.json")
    _done, output, raw = _run_bench(
        tmp_path,
        "--compare",
        str(tmp_path / "results.json"),
        "--smoke",
        "--stores",
        "sqlite",
        "--scenarios",
        "public_capture,payment,payout_balance",
        "--scales",
        "1000",
    )
    rows = {(r["store"], r["scenario"]): r for r in json.loads(raw.read_text())["rows"]}
    for key in ("public_capture", "payment"):
        row = rows[("sqlite", key)]
        assert row["measured"]["requests"] > 0
        assert row["committed"] >= row["acknowledged"] > 0
    # The server's CPU is split into its own and the kernel's: a share, not a duration.
    assert all(0 <= row["kernel_share"] <= 1 for row in rows.values())
    # And the event loop's (main thread's) part of it: all of the ceiling's work, a small part
    # of a payment's, whose core runs in a worker thread.
    assert all(0 <= row["loop_share"] <= 1 for row in rows.values())
    assert rows[("ceiling", "ceiling")]["loop_share"] > 0.8
    assert rows[("sqlite", "payment")]["loop_share"] < rows[("ceiling", "ceiling")]["loop_share"]
    assert rows[("sqlite", "payout_balance")]["measured"]["requests"] > 0
    core = json.loads(raw.read_text())["core"]
    # The core's cost is measured for the write scenarios run, at one and eight threads, and on
    # SQLite by one thread in write batches, as the server runs payments there.
    assert {(c["scenario"], c["threads"], c.get("batch")) for c in core} == {
        ("payment", 1, None),
        ("payment", 8, None),
        ("payment", 1, 32),
    }
    assert all(c["cpu_ms"] > 0 for c in core)
    report = output.read_text()
    assert "| SQLite | payment (POST /v1/transactions) |" in report
    assert "| SQLite | payment | 8 |" in report
    assert "## Scaling" in report and "## Targets" in report
    # The ceiling is measured again once everything else has run, and the report compares the two.
    again = json.loads(raw.read_text())["ceiling_after"]
    assert again["store"] == "ceiling" and again["measured"]["requests"] > 0
    assert "The ceiling measured again at the end of the run" in report
    assert "Before: `python -m bench (the earlier run)`" in report
    # How the disk made writes durable just before the run, in the machine's facts.
    assert "| Disk sync before the run | `pwrite` of 128 KiB and `fdatasync`," in report


def test_instruction_counts_fill_placeholders_as_the_wrk_script_does(tmp_path: Path) -> None:
    from bench.instructions import fill

    pools = {"customers": ["rcus_a", "rcus_b"]}
    template = '{"payment_id":"pay-{uid}","customer_id":"{pool:customers}"}'
    assert fill(template, uid="r1-7", pools=pools, n=7) == '{"payment_id":"pay-r1-7","customer_id":"rcus_b"}'
    assert fill(template, uid="r1-8", pools=pools, n=8) == '{"payment_id":"pay-r1-8","customer_id":"rcus_a"}'
    assert fill("/v1/commissions?limit=25", uid="x", pools={}, n=0) == "/v1/commissions?limit=25"


def test_instruction_counts_read_the_totals_line_of_a_callgrind_dump(tmp_path: Path) -> None:
    from bench.instructions import callgrind_totals

    dump = tmp_path / "cg.out.3"
    dump.write_text("# callgrind format\nversion: 1\nevents: Ir\nfn=(1) main\n5 10\n\ntotals: 1234567\n")
    assert callgrind_totals(dump) == 1234567
    (tmp_path / "empty").write_text("events: Ir\n")
    with pytest.raises(ValueError, match="no totals"):
        callgrind_totals(tmp_path / "empty")


def test_instruction_counts_keep_their_dumps_only_when_asked(capsys: pytest.CaptureFixture[str]) -> None:
    from bench.instructions import _work_directory

    with _work_directory(keep=False) as removed:
        (removed / "refcore-sqlite.callgrind.1").write_text("totals: 1\n")
    assert not removed.exists()
    with _work_directory(keep=True) as kept:
        (kept / "refcore-sqlite.callgrind.1").write_text("totals: 1\n")
    try:
        assert (kept / "refcore-sqlite.callgrind.1").read_text() == "totals: 1\n"
        assert str(kept) in capsys.readouterr().out
    finally:
        shutil.rmtree(kept)


def test_postgresql_reads_that_follow_writes_are_the_ones_run_after_a_vacuum() -> None:
    every = [
        "public_capture",
        "server_capture",
        "identify",
        "payment",
        "refund",
        "commissions_page",
        "payout_balance",
    ]
    assert scenarios_after_writes(every) == {"commissions_page"}
    assert scenarios_after_writes(["commissions_page", "payment", "payout_balance"]) == {"payout_balance"}
    assert scenarios_after_writes(["commissions_page", "payout_balance"]) == frozenset()
    assert scenarios_after_writes(["payment", "refund"]) == frozenset()


def test_the_core_table_bounds_the_ratio_by_the_cores_cost_alone() -> None:
    results = Results(command="python -m bench", mode="smoke", facts={}, method={})
    results.rows = [
        Row("ceiling", "ceiling", "ceiling", _measured(1000, 5.0), cpu_ms_per_request=0.2),
        Row("sqlite", "payment", "payment", _measured(100, 20.0), cpu_ms_per_request=1.6),
    ]
    results.core = [
        {"store": "sqlite", "scenario": "payment", "threads": 8, "calls": 10, "cpu_ms": 0.8},
        {"store": "sqlite", "scenario": "payment", "threads": 1, "batch": 32, "calls": 10, "cpu_ms": 0.4},
    ]
    page = render(results, plan_scales=(), before=None)
    assert "| SQLite | payment | 8 | 10 | 0.80 | 1.60 | 50% | 0.25 |" in page
    assert "| SQLite | payment | 1, batches of 32 | 10 | 0.40 | 1.60 | 25% | 0.50 |" in page


def test_postgresql_write_scenarios_are_analyzed_after_their_warm_up_and_nothing_else_is() -> None:
    analyzed = {
        (store, scenario.key)
        for store in ("sqlite", "postgresql")
        for scenario in SCENARIOS
        if analyzes_after_warmup(store, scenario)
    }

    writes = {scenario.key for scenario in SCENARIOS if scenario.written is not None}
    assert {"payment", "refund", "identify"} <= writes
    assert analyzed == {("postgresql", key) for key in writes}


def _ceiling_run(rps_start: float, rps_end: float | None) -> Results:
    results = Results(command="python -m bench", mode="smoke", facts={}, method={})
    results.rows = [
        Row("ceiling", "ceiling", "ceiling", _measured(round(rps_start), 3.0), cpu_ms_per_request=0.05),
        Row("sqlite", "payment", "payment", _measured(800, 60.0), cpu_ms_per_request=1.2),
    ]
    if rps_end is not None:
        results.ceiling_after = Row(
            "ceiling", "ceiling", "ceiling", _measured(round(rps_end), 3.0), cpu_ms_per_request=0.1
        )
    return results


def test_the_report_says_when_the_ceiling_at_the_end_shows_the_machine_slowed_during_the_run() -> None:
    page = render(_ceiling_run(20_000, 9_500), plan_scales=(), before=None)
    assert "The ceiling measured again at the end of the run: 9,500 req/s against 20,000" in page
    assert "-52%" in page and "0.050 → 0.100 ms a request" in page
    assert "speed changed by more than 25% during the run" in page
    # Ratios stay taken to the first measurement.
    assert "0.040 x (800 / 20,000)" in page


def test_a_ratio_just_under_its_target_is_not_printed_as_the_target() -> None:
    results = _ceiling_run(32_271, None)
    results.rows.append(Row("sqlite", "public_capture", "public capture", _measured(16_020, 4.2)))
    (capture,) = [verdict for verdict in verdicts(results) if verdict.target.startswith("public capture")]
    assert capture.met is False
    assert capture.result.startswith("0.496 x")


def test_the_report_warns_of_nothing_when_both_ceilings_agree_within_the_limit() -> None:
    page = render(_ceiling_run(20_000, 19_000), plan_scales=(), before=None)
    assert "19,000 req/s against 20,000 at the start, -5%" in page
    assert "Within 25%, the spread this report allows" in page and "speed changed by more" not in page


def test_the_ceiling_at_the_end_is_saved_with_the_run_and_older_runs_load_without_it(tmp_path: Path) -> None:
    saved = tmp_path / "run.json"
    _ceiling_run(20_000, 9_500).save(saved)
    loaded = Results.load(saved)
    assert loaded.ceiling_after is not None and loaded.ceiling_after.measured is not None
    assert loaded.ceiling_after.measured.requests == 9_500
    older = Results.load(ROOT / "bench" / "results" / "session20-full-9d2af33.json")
    assert older.ceiling_after is None
    assert "measured again at the end" not in render(older, plan_scales=(), before=None)


@pytest.mark.slow
@runs_the_harness
def test_a_probe_measures_the_ceiling_alone_and_writes_nothing(tmp_path: Path) -> None:
    done, output, raw = _run_bench(tmp_path, "--probe", "--smoke")
    assert "ceiling:" in done.stdout and "req/s" in done.stdout
    assert "migrating" not in done.stdout  # no refcore server was started
    assert "disk: `pwrite` of 128 KiB and `fdatasync`" in done.stdout
    assert not output.exists() and not raw.exists()


def _file_with_a_held_log(tmp_path: Path) -> tuple[Path, sqlite3.Connection]:
    """A WAL-mode file whose log holds committed pages, and a reader whose open snapshot
    includes them: a ``TRUNCATE`` checkpoint cannot empty the log until that reader ends."""
    path = tmp_path / "seeded.db"
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("PRAGMA journal_mode = WAL")
    writer.execute("PRAGMA wal_autocheckpoint = 0")
    writer.execute("CREATE TABLE entries (amount INTEGER)")
    writer.executemany("INSERT INTO entries VALUES (?)", [(n,) for n in range(1000)])
    reader = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    reader.execute("BEGIN")
    assert reader.execute("SELECT count(*) FROM entries").fetchone() == (1000,)
    # Closed only now: the last connection to close checkpoints and empties the log itself.
    writer.close()
    return path, reader


def test_the_seeded_file_is_checkpointed_once_a_passing_reader_lets_go(tmp_path: Path) -> None:
    path, reader = _file_with_a_held_log(tmp_path)
    wal = Path(f"{path}-wal")
    assert wal.stat().st_size > 0
    # Each try waits 0.05 s at most, so only trying again outlasts a reader that holds the log
    # for 0.5 s (as the server's own checkpoint holds off a second checkpointer).
    release = threading.Timer(0.5, reader.rollback)
    release.start()
    try:
        checkpoint_seeded_file(f"sqlite:///{path}", patience=10.0, pause=0.05)
        emptied = wal.stat().st_size  # read before the last connection closes and removes it
    finally:
        release.join()
        reader.close()
    assert emptied == 0


def test_a_seeded_history_is_pruned_as_a_running_server_would_before_the_scaling_reads(
    tmp_path: Path,
) -> None:
    """The seeder writes a year in minutes; a production server would have pruned the past day,
    hour and minute rows of the balance projection as it went (refcore_sqlstore.bucket_pruning)."""
    url = f"sqlite:///{tmp_path / 'seeded.db'}"
    store = SqlStore(url)
    store.migrate()
    store.dispose()
    rows = [
        ("month", "2025-01"),
        ("day", "2025-01-05"),
        ("hour", "2025-01-05 10"),
        ("minute", "2025-01-05 10:07"),
    ]
    rows.append(("minute", "2999-01-01 00:00"))  # an entry still on hold: kept
    with sqlite3.connect(tmp_path / "seeded.db") as connection:
        connection.executemany(
            "INSERT INTO affiliate_balance_buckets VALUES ('pa_x', 'live', ?, ?, 1, 0)", rows
        )
    assert prune_seeded(url) == 3
    with sqlite3.connect(tmp_path / "seeded.db") as connection:
        left = connection.execute(
            "SELECT grain, bucket FROM affiliate_balance_buckets ORDER BY grain"
        ).fetchall()
    assert left == [("minute", "2999-01-01 00:00"), ("month", "2025-01")]


def test_a_log_held_longer_than_the_patience_stops_the_run(tmp_path: Path) -> None:
    path, reader = _file_with_a_held_log(tmp_path)
    try:
        with pytest.raises(RuntimeError, match=r"could not be checkpointed within 0\.3 s"):
            checkpoint_seeded_file(f"sqlite:///{path}", patience=0.3, pause=0.05)
    finally:
        reader.close()


def test_the_kernels_and_the_loops_shares_are_shown_beside_the_cpu_and_older_runs_show_none(
    tmp_path: Path,
) -> None:
    results = Results(command="python -m bench", mode="smoke", facts={}, method={})
    ceiling, payment = _measured(1000, 5.0), _measured(100, 20.0)
    results.rows = [
        Row("ceiling", "ceiling", "ceiling", ceiling, cpu_ms_per_request=0.04, kernel_share=0.31),
        Row("sqlite", "payment", "payment", payment, cpu_ms_per_request=0.95, kernel_share=0.174),
        Row(
            "sqlite",
            "identify",
            "identify",
            payment,
            cpu_ms_per_request=0.61,
            kernel_share=0.12,
            loop_share=0.213,
        ),
    ]
    saved = tmp_path / "run.json"
    results.save(saved)
    page = render(Results.load(saved), plan_scales=(), before=None)
    assert "| 0.95 (17% kernel) |" in page and "| 0.04 (31% kernel) |" in page
    assert "| 0.61 (12% kernel, 21% loop) |" in page
    older = Results.load(ROOT / "bench" / "results" / "session23-full-b49a997.json")
    assert all(row.kernel_share is None and row.loop_share is None for row in older.rows)
    table_lines = [
        line for line in render(older, plan_scales=(), before=None).splitlines() if line.startswith("| ")
    ]
    assert table_lines and not any("% kernel" in line or "% loop" in line for line in table_lines)


@pytest.mark.parametrize(
    ("store", "expected"),
    [
        ("postgresql", ["migrate", "tenant", "checkpoint", "commissions_page"]),
        ("sqlite", ["migrate", "tenant", "commissions_page"]),
    ],
)
def test_postgresql_is_checkpointed_between_its_set_up_and_its_first_measured_scenario(
    store: str, expected: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The order in which a store's scenarios are run: the database, the server and the tenant
    stand in for themselves, and each step says when it ran."""
    ran: list[str] = []

    @contextlib.contextmanager
    def stand_in(*_: Any, **__: Any) -> Iterator[Any]:
        yield SimpleNamespace(url="http://stand-in")

    def step(name: str, answer: Any = None) -> Any:
        return lambda *_, **__: ran.append(name) or answer

    monkeypatch.setattr(bench.cli, "database", stand_in)
    monkeypatch.setattr(bench.cli, "refcore_server", stand_in)
    monkeypatch.setattr(bench.cli, "prepare_database", step("migrate", "token"))
    monkeypatch.setattr(bench.cli, "build_world", step("tenant"))
    monkeypatch.setattr(bench.cli, "checkpoint_set_up", step("checkpoint"))
    monkeypatch.setattr(
        Runner, "scenario", lambda _self, _store, _server, _world, scenario, _url: ran.append(scenario.key)
    )
    plan = Plan("stand-in", 0, 1, (), (store,), ("commissions_page",), 0, 1)
    Runner(plan, tmp_path, lambda _: None).store(store)
    assert ran == expected


def test_a_set_up_checkpoint_leaves_nothing_of_the_set_up_to_a_later_checkpoint() -> None:
    """After ``checkpoint_set_up``, PostgreSQL's last checkpoint starts (its redo point) after
    the set-up's last change. In the thirty-first session's full runs, the first checkpoint that
    the captures' WAL started wrote and synced the new database's files inside a measured
    scenario (``bench/history.md``)."""
    with fresh_postgres_database() as url:
        plain = libpq_url(url)
        with psycopg.connect(plain, autocommit=True) as conn:
            conn.execute("CREATE TABLE set_up (n integer)")
            conn.execute("INSERT INTO set_up SELECT generate_series(1, 10000)")
            changed = conn.execute("SELECT pg_current_wal_insert_lsn()").fetchone()
            assert changed is not None
            checkpoint_set_up(plain)
            redo = conn.execute(
                "SELECT redo_lsn >= %s::pg_lsn FROM pg_control_checkpoint()", (str(changed[0]),)
            ).fetchone()
        assert redo == (True,)


def test_the_disks_sync_line_gives_its_median_its_tail_and_its_stalls() -> None:
    """A disk whose durable writes mostly take 0.1 ms but once stalled for 1.4 s: the stall is
    the longest and is counted over 50 ms, and the median does not hide it."""
    latencies = [0.0001] * 198 + [0.0003, 1.443]
    line = describe_sync(latencies, 2.0)
    assert "200 times in 2 s" in line
    assert "p50 0.10 ms" in line and "p99 0.30 ms" in line
    assert "longest 1,443.0 ms; 1 over 50 ms" in line
    assert describe_sync([], 2.0) == "not measured"


def test_the_disk_is_measured_in_the_run_directory_and_leaves_nothing_there(tmp_path: Path) -> None:
    line = sync_latency(tmp_path, 0.2)
    assert line.startswith("`pwrite` of 128 KiB and `fdatasync`,") and "p99" in line
    assert list(tmp_path.iterdir()) == []


def test_wal_records_are_summed_by_relation_and_kind_in_bytes_a_request() -> None:
    """``python -m bench.wal --by-relation``: ``pg_waldump``'s lines (as PostgreSQL 15 prints
    them), named by relation file, a commit counted under ``-``."""
    from bench.wal import relation_totals

    lines = [
        "rmgr: Heap        len (rec/tot):    583/   583, tx:      56833, lsn: 0/21551C38, prev 0/21551C10,"
        " desc: INSERT off 7 flags 0x00, blkref #0: rel 1663/18631/18717 blk 1289",
        "rmgr: Btree       len (rec/tot):     88/    88, tx:      56833, lsn: 0/21551E80, prev 0/21551C38,"
        " desc: INSERT_LEAF off 161, blkref #0: rel 1663/18631/18722 blk 87",
        "rmgr: Heap        len (rec/tot):    417/   417, tx:      56834, lsn: 0/21551ED8, prev 0/21551E80,"
        " desc: INSERT off 8 flags 0x00, blkref #0: rel 1663/18631/18717 blk 1289",
        "rmgr: Transaction len (rec/tot):     34/    34, tx:      56833, lsn: 0/21551F30, prev 0/21551ED8,"
        " desc: COMMIT 2026-11-28 10:06:11.123456 UTC",
        "pg_waldump: error: error in WAL record at 0/21551F58: invalid record length",
    ]
    names = {"18717": "events", "18722": "pk_events"}

    assert relation_totals(lines, names, requests=2, top=5) == (
        ("events", "INSERT", 500.0),
        ("pk_events", "INSERT_LEAF", 44.0),
        ("-", "COMMIT", 17.0),
    )
    assert relation_totals(lines, names, requests=2, top=1) == (("events", "INSERT", 500.0),)


def test_wal_counters_move_with_what_the_database_writes() -> None:
    """``bench.wal.counters``: the WAL position and ``pg_stat_wal`` (bytes, records) after a write
    are past those before it."""
    from bench.wal import counters

    with fresh_postgres_database() as url:
        plain = libpq_url(url)
        before = counters(plain)
        with psycopg.connect(plain, autocommit=True) as conn:
            conn.execute("CREATE TABLE written (n integer)")
            conn.execute("INSERT INTO written SELECT generate_series(1, 1000)")
            moved = conn.execute("SELECT %s::pg_lsn < pg_current_wal_lsn()", (before.lsn,)).fetchone()
        after = counters(plain)
    assert moved == (True,)
    assert after.bytes - before.bytes > 1000 * 20 and after.records - before.records >= 1000


def test_a_tools_compare_file_gives_each_scenarios_earlier_figure(tmp_path: Path) -> None:
    """``--compare`` of ``bench.instructions`` and ``bench.wal``: the "before" column."""
    from bench.results import earlier_figures

    saved = tmp_path / "wal.json"
    saved.write_text(json.dumps({"written": [{"scenario": "payment", "bytes_per_request": 6149}]}))
    assert earlier_figures(str(saved), "written", "bytes_per_request") == {"payment": 6149.0}
    assert earlier_figures(None, "written", "bytes_per_request") is None
