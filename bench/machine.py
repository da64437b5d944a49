"""Facts about the machine and the software a run measured, for the report's header."""

from __future__ import annotations

import importlib.util
import os
import platform
import sqlite3
import subprocess
import time
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path

import psycopg

import refcore
from bench.databases import PG_ADMIN


def _run(command: list[str]) -> str:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=10, check=False)
    except OSError:
        return ""
    return (done.stdout or done.stderr).strip()


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def memory_gib() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) / 1024 / 1024
    return 0.0


def postgres_version() -> str:
    try:
        with psycopg.connect(PG_ADMIN, connect_timeout=3) as conn:
            row = conn.execute("SHOW server_version").fetchone()
            sync = conn.execute("SHOW synchronous_commit").fetchone()
            buffers = conn.execute("SHOW shared_buffers").fetchone()
            autovacuum = conn.execute("SHOW autovacuum").fetchone()
    except psycopg.Error:
        return "not reachable"
    assert row is not None and sync is not None and buffers is not None and autovacuum is not None
    return f"{row[0]} (synchronous_commit={sync[0]}, shared_buffers={buffers[0]}, autovacuum={autovacuum[0]})"


def uvicorn_stack() -> str:
    """What uvicorn's ``auto`` settings resolve to here (the same for both servers)."""
    loop = "uvloop" if importlib.util.find_spec("uvloop") else "asyncio"
    http = "httptools" if importlib.util.find_spec("httptools") else "h11"
    return (
        f"uvicorn {version('uvicorn')} (1 worker, loop={loop}, http={http}), starlette {version('starlette')}"
    )


def filesystem_of(path: Path) -> str:
    out = _run(["df", "-T", str(path)]).splitlines()
    if len(out) >= 2:
        fields = out[1].split()
        return f"{fields[1]} ({fields[0]})"
    return "unknown"


def git_revision() -> str:
    """The revision of the refcore code measured: the checkout refcore was imported from. With
    another revision's worktree first on ``PYTHONPATH`` that is the worktree, not this harness's
    checkout (a before run had been saved under the after's revision: ``bench/history.md``,
    thirty-seventh session)."""
    root = Path(refcore.__file__).resolve().parent.parent.parent
    head = _run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"])
    dirty = _run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no", "--", "src"])
    return f"{head}{' + uncommitted changes in src/' if dirty else ''}"


def sqlite_synchronous(run_dir: Path) -> str:
    """``PRAGMA synchronous`` on a WAL connection as the store opens it (2 = FULL: fsync per commit)."""
    path = run_dir / "pragma-probe.db"
    connection = sqlite3.connect(path)
    try:
        connection.execute("PRAGMA journal_mode = WAL")
        row = connection.execute("PRAGMA synchronous").fetchone()
    finally:
        connection.close()
    for leftover in run_dir.glob("pragma-probe.db*"):
        leftover.unlink()
    return {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}.get(row[0], str(row[0]))


#: Bytes a probe write makes durable, about what one group commit of 32 captures appends to
#: SQLite's log (31 pages of 4 KiB; ``bench/history.md``, thirty-second session).
SYNC_PROBE_BYTES = 128 * 1024
#: A durable write slower than this is counted apart: alone it is the p99 target.
SYNC_STALL_SECONDS = 0.050


def sync_latency(directory: Path, seconds: float) -> str:
    """How long this disk takes to make a commit durable, written for the report's header.

    A write is answered after its commit's ``fdatasync`` (SQLite's ``synchronous=FULL``,
    PostgreSQL's ``synchronous_commit=on``), and a group commit's stall holds every request
    waiting in it. On the thirty-second session's machine a loop like this one took 0.14 ms at
    p50 and 1,443 ms at worst, and every SQLite write row missed p99 while its reads did not; the
    ceiling, which writes nothing, cannot show such a disk. The loop overwrites one region of a
    file in ``directory`` (the run's SQLite file's file system) for ``seconds``, as a log that is
    reused after its checkpoints is overwritten."""
    path = directory / "sync-probe.bin"
    block = os.urandom(SYNC_PROBE_BYTES)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    latencies: list[float] = []
    try:
        os.pwrite(fd, block, 0)
        os.fsync(fd)
        ends = time.monotonic() + seconds
        while time.monotonic() < ends:
            started = time.perf_counter()
            os.pwrite(fd, block, 0)
            os.fdatasync(fd)
            latencies.append(time.perf_counter() - started)
    finally:
        os.close(fd)
        path.unlink()
    return describe_sync(latencies, seconds)


def describe_sync(latencies: list[float], seconds: float) -> str:
    """``latencies`` (seconds each) as the report's line: p50, p99, the longest, the stalls."""
    if not latencies:
        return "not measured"
    ordered = sorted(latencies)
    count = len(ordered)
    stalls = sum(1 for latency in ordered if latency > SYNC_STALL_SECONDS)
    return (
        f"`pwrite` of {SYNC_PROBE_BYTES // 1024} KiB and `fdatasync`, {count:,} times in {seconds:g} s"
        f": p50 {ordered[count // 2] * 1000:.2f} ms, p99"
        f" {ordered[min(count - 1, count * 99 // 100)] * 1000:.2f} ms, longest"
        f" {ordered[-1] * 1000:,.1f} ms; {stalls:,} over {SYNC_STALL_SECONDS * 1000:g} ms"
    )


def facts(run_dir: Path, *, sync_seconds: float = 0.0) -> dict[str, str]:
    """The report's header. With ``sync_seconds``, also how the disk made writes durable then."""
    disk = {"Disk sync before the run": sync_latency(run_dir, sync_seconds)} if sync_seconds > 0 else {}
    return {
        "Date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "Revision": git_revision(),
        "CPU": f"{cpu_model()}, nproc {os.cpu_count()}",
        "Memory": f"{memory_gib():.1f} GiB",
        "Kernel": platform.release(),
        "Python": platform.python_version(),
        "SQLite": f"{sqlite3.sqlite_version} (WAL, synchronous={sqlite_synchronous(run_dir)}, "
        f"file on {filesystem_of(run_dir)})",
        "PostgreSQL": postgres_version(),
        "Server stack": uvicorn_stack(),
        "Drivers": f"SQLAlchemy {version('sqlalchemy')}, psycopg {version('psycopg')}",
        "Load average at start": Path("/proc/loadavg").read_text().split()[0]
        + " (1 min; other work shares this machine)",
        "Load generator": _run(["wrk", "-v"]).splitlines()[0] if _run(["wrk", "-v"]) else "wrk",
        **disk,
    }
