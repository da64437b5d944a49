"""``python -m bench.instructions``: CPU instructions per request, counted by callgrind.

Requests per second and CPU milliseconds move with whatever else shares the machine: on this
workplace two identical runs minutes apart have differed by a factor of two, more than most
single changes. The instructions a server executes per request do not. So each server here (the
ceiling and ``refcore serve`` on SQLite, or with ``--store postgresql`` on PostgreSQL, where only
refcore's own process is counted, not the database server's) runs under
``valgrind --tool=callgrind``, and for each scenario of :mod:`bench.scenarios`:

1. the scenario's own requests warm it up (caches, compiled statements, pooled connections);
2. once the server is idle, ``callgrind_control --zero`` clears its counters;
3. a client outside valgrind sends ``--requests`` requests over 32 connections, as wrk does, so
   that the batching that concurrency brings (capture batches, group commit) happens as under
   load;
4. once the server is idle again (the webhook dispatcher has closed the events too),
   ``callgrind_control --dump`` writes the counts, and their total divided by the requests
   answered is the figure.

Every thread of the server is counted, the event loop's and the workers' alike. What is not a
request's own work but runs in the window is counted with it: the dispatcher's 2-second poll
(under valgrind a window lasts tens of seconds, so a few polls, about 1 % of a payment's count).
The world is built by a normal server first (:func:`bench.world.build_world`), which then stops,
so set-up costs no valgrind time. The ceiling's count, divided by a scenario's, is the
machine-independent twin of the ratio targets ("x ceiling" in ``docs/performance.md``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import httpx
from attrs import asdict, frozen

import refcore
from bench.cli import database
from bench.results import earlier_figures
from bench.scenarios import SCENARIOS, by_key
from bench.servers import (
    ROOT,
    Server,
    ceiling_command,
    refcore_server,
    serve_arguments,
    throwaway_secret_key,
)
from bench.world import build_world, prepare_database
from bench.wrk import CONNECTIONS, PLACEHOLDER, Load

CEILING_BODY = '{"via":"ceiling","page":"https://shop.example/pricing?via=x&n={uid}"}'
#: Under callgrind a server answers 30 to 100 times slower: starting one takes minutes.
START_TIMEOUT_S = 900.0
WARMUP_REQUESTS = 64


def fill(template: str, *, uid: str, pools: Mapping[str, Sequence[str]], n: int) -> str:
    """``template`` with ``{uid}`` and ``{pool:name}`` filled in for the ``n``-th request, as the
    wrk script does: the unique ID as given, pools walked round-robin."""

    def value(match: object) -> str:
        name: str = match.group(1)  # type: ignore[attr-defined]
        if name == "uid":
            return uid
        pool = pools[name.split(":", 1)[1]]
        return pool[n % len(pool)]

    return PLACEHOLDER.sub(value, template)


def revision() -> str:
    """The revision of the code measured: where refcore was imported from (a worktree first on
    PYTHONPATH measures another revision's code with this harness); empty outside a checkout."""
    return subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        cwd=Path(refcore.__file__).parent,
        check=False,
    ).stdout.strip()


def callgrind_totals(dump: Path) -> int:
    """The instruction count (``Ir``) of one callgrind dump: its ``totals:`` line."""
    for line in dump.read_text(errors="replace").splitlines():
        if line.startswith(("totals:", "summary:")):
            return int(line.split()[1])
    raise ValueError(f"{dump} has no totals line")


@frozen
class Count:
    scenario: str
    requests: int
    failed: int
    instructions: int

    @property
    def per_request(self) -> float:
        return self.instructions / self.requests if self.requests else float("nan")


class CountedServer:
    """A server running under callgrind, whose counters can be cleared and read."""

    def __init__(
        self, name: str, command: Sequence[str], *, work_dir: Path, ready_path: str, env: dict[str, str]
    ):
        self.dumps = work_dir / f"{name}.callgrind"
        valgrind = [
            "valgrind",
            "--tool=callgrind",
            f"--callgrind-out-file={self.dumps}",
            *command,
        ]
        self.server = Server(name, valgrind, cpu=None, log_dir=work_dir, ready_path=ready_path, env=env)
        self._seen: set[Path] = set()

    def __enter__(self) -> CountedServer:
        self.server.start(timeout=START_TIMEOUT_S)
        return self

    def __exit__(self, *_exc: object) -> None:
        self.server.stop()

    def _control(self, option: str) -> None:
        subprocess.run(
            ["callgrind_control", option, str(self.server.pid)],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=120,
        )

    def wait_idle(self) -> None:
        """Until the server's CPU time stops moving: queued work and the dispatcher are done."""
        last = self.server.cpu_seconds()
        quiet = 0
        while quiet < 2:
            time.sleep(1.0)
            now = self.server.cpu_seconds()
            quiet = quiet + 1 if now - last < 0.15 else 0
            last = now

    def zero(self) -> None:
        self.wait_idle()
        self._control("--zero")

    def read(self) -> int:
        """The instructions since the last :meth:`zero`, once the server is idle."""
        self.wait_idle()
        self._control("--dump")
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            new = [p for p in self.dumps.parent.glob(self.dumps.name + ".*") if p not in self._seen]
            if new:
                dump = max(new, key=lambda p: int(p.suffix[1:]))
                time.sleep(0.5)  # callgrind writes the file before it answers; be safe
                self._seen.add(dump)
                return callgrind_totals(dump)
            time.sleep(0.2)
        raise RuntimeError(f"callgrind wrote no dump for {self.server.name}")


async def _send(base_url: str, load: Load, *, count: int, run: str, concurrency: int) -> tuple[int, int]:
    """``count`` requests of ``load`` over ``concurrency`` connections; (answered 2xx, others)."""
    numbers = itertools.count()
    ok = failed = 0
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(base_url=base_url, limits=limits, timeout=600.0) as client:

        async def connection() -> None:
            nonlocal ok, failed
            while (n := next(numbers)) < count:
                uid = f"{run}-{n}"
                path = fill(load.path, uid=uid, pools=load.pools, n=n)
                body = None if load.body is None else fill(load.body, uid=uid, pools=load.pools, n=n)
                response = await client.request(load.method, path, headers=dict(load.headers), content=body)
                if 200 <= response.status_code < 300:
                    ok += 1
                else:
                    failed += 1
                    if failed == 1:
                        print(f"    first failure: {response.status_code} {response.text[:200]}", flush=True)

        await asyncio.gather(*(connection() for _ in range(concurrency)))
    return ok, failed


def count(server: CountedServer, key: str, load: Load, *, requests: int) -> Count:
    run = secrets.token_hex(3)
    asyncio.run(_send(server.server.url, load, count=WARMUP_REQUESTS, run=f"w{run}", concurrency=CONNECTIONS))
    server.zero()
    ok, failed = asyncio.run(
        _send(server.server.url, load, count=requests, run=f"m{run}", concurrency=CONNECTIONS)
    )
    result = Count(key, ok, failed, server.read())
    print(
        f"  {key}: {result.per_request / 1e6:.3f} million instructions a request ({ok} answered)", flush=True
    )
    return result


def ceiling_counted(work_dir: Path) -> CountedServer:
    return CountedServer("ceiling", ceiling_command(), work_dir=work_dir, ready_path="/", env={})


def refcore_counted(store: str, database_url: str, work_dir: Path) -> CountedServer:
    # The interpreter named directly, rather than the ``refcore`` script's shebang.
    command = [
        sys.executable,
        "-c",
        "import sys; from refcore_http.cli import main; sys.exit(main())",
        *serve_arguments(database_url),
    ]
    return CountedServer(
        f"refcore-{store}", command, work_dir=work_dir, ready_path="/v1", env=throwaway_secret_key()
    )


def render(counts: Sequence[Count], before: Mapping[str, float] | None) -> str:
    ceiling = next((c.per_request for c in counts if c.scenario == "ceiling"), None)
    head = "| Scenario | requests | million instructions / request | ceiling / this |"
    rule = "|---|---:|---:|---:|"
    if before:
        head += " before → after |"
        rule += "---:|"
    lines = [head, rule]
    for c in counts:
        share = f"{ceiling / c.per_request:.2f}" if ceiling else ""
        line = f"| {c.scenario} | {c.requests:,} | {c.per_request / 1e6:.3f} | {share} |"
        if before:
            old = before.get(c.scenario)
            line += f" {old / 1e6:.3f} → {c.per_request / 1e6:.3f} |" if old else " |"
        lines.append(line)
    return "\n".join(lines)


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.instructions", description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=256, help="requests counted per scenario")
    parser.add_argument(
        "--store",
        choices=("sqlite", "postgresql"),
        default="sqlite",
        help="refcore's database (on PostgreSQL only refcore's own process is counted, not the server's)",
    )
    parser.add_argument("--scenarios", help="comma-separated scenario keys (default: all, and the ceiling)")
    parser.add_argument("--json", help="where to save the counts (default bench/results/instructions.json)")
    parser.add_argument("--compare", help="an earlier counts JSON: adds a before → after column")
    parser.add_argument(
        "--keep",
        action="store_true",
        help="keep the work directory: each scenario's callgrind dump, for callgrind_annotate",
    )
    return parser.parse_args(argv)


@contextlib.contextmanager
def _work_directory(*, keep: bool) -> Iterator[Path]:
    """Where the servers' logs and callgrind dumps go: removed afterwards unless ``keep``."""
    if not keep:
        with tempfile.TemporaryDirectory(prefix="refcore-instructions-", dir="/var/tmp") as tmp:
            yield Path(tmp)
        return
    kept = Path(tempfile.mkdtemp(prefix="refcore-instructions-", dir="/var/tmp"))
    try:
        yield kept
    finally:
        print(f"work directory kept: {kept} (a scenario's dump is the nth .callgrind.* file)", flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(argv)
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        print("valgrind is missing: apt-get install -y valgrind", file=sys.stderr)
        return 2
    keys = [k for k in (args.scenarios or "").split(",") if k] or ["ceiling", *(s.key for s in SCENARIOS)]
    counts: list[Count] = []
    with _work_directory(keep=args.keep) as work_dir:
        if "ceiling" in keys:
            print("ceiling under callgrind", flush=True)
            with ceiling_counted(work_dir) as server:
                load = Load("POST", "/v1/capture", {"Content-Type": "application/json"}, CEILING_BODY)
                counts.append(count(server, "ceiling", load, requests=args.requests))
        scenario_keys = [k for k in keys if k != "ceiling"]
        if scenario_keys:
            with database(args.store, "instructions", work_dir) as url:
                token = prepare_database(url)
                print("building the world on a normal server", flush=True)
                with refcore_server("world", url, cpu=None, log_dir=work_dir) as plain:
                    world = build_world(plain.url, url, token, refundable_payments=32)
                print(f"refcore on {args.store} under callgrind", flush=True)
                with refcore_counted(args.store, url, work_dir) as server:
                    for key in scenario_keys:
                        scenario_load = by_key(key).load(world)
                        if scenario_load is None:
                            continue
                        counts.append(count(server, key, scenario_load, requests=args.requests))
    saved = {
        "revision": revision(),
        "store": args.store,
        "counts": [asdict(c) | {"per_request": c.per_request} for c in counts],
    }
    out = Path(args.json or ROOT / "bench" / "results" / "instructions.json")
    out.write_text(json.dumps(saved, indent=2) + "\n")
    print(render(counts, earlier_figures(args.compare, "counts", "per_request")))
    print(f"saved {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
