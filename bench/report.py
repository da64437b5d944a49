"""Rendering a run as ``docs/performance.md``: machine, method, targets met or missed, tables."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from attrs import frozen

from bench.results import Results, Row, ScaleRow
from bench.scenarios import SCALING_READS, SCENARIOS
from bench.wrk import Measured

P99_LIMIT_MS = 50.0
RSS_LIMIT_MB = 200.0
SCALE_RATIO_LIMIT = 1.5
#: How far the ceiling measured at the end may move from the one at the start before the report
#: says the machine's speed changed during the run. The ceiling's own 20-second measurements
#: have spread by up to about a fifth on this kind of machine (22,712 and 23,043 req/s in two
#: sessions; 18,876, 17,163 and 21,112 within two hours of the thirteenth), and the slowdown
#: this is there to catch halved it (``bench/history.md``, twelfth session).
CEILING_DRIFT_LIMIT = 0.25
STORE_NAMES = {"ceiling": "ceiling", "sqlite": "SQLite", "postgresql": "PostgreSQL"}


@frozen
class Verdict:
    target: str
    result: str
    met: bool | None  # None: not measured

    @property
    def mark(self) -> str:
        return "not measured" if self.met is None else "met" if self.met else "**missed**"


def _f(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def cpu_shares(kernel_share: float | None, loop_share: float | None) -> str:
    """`` (17% kernel, 21% loop)`` after a CPU figure: the kernel's and the event loop's
    parts of it, each left out for a run that did not measure it."""
    parts = [f"{kernel_share:.0%} kernel"] if kernel_share is not None else []
    if loop_share is not None:
        parts.append(f"{loop_share:.0%} loop")
    return f" ({', '.join(parts)})" if parts else ""


def _server_cpu(row: Row | ScaleRow) -> str:
    """The server's CPU milliseconds a request, with the kernel's share when the run measured it."""
    if row.cpu_ms_per_request is None:
        return _f(None)
    return _f(row.cpu_ms_per_request, 2) + cpu_shares(row.kernel_share, row.loop_share)


def _scaling_ratio(results: Results, store: str, scenario: str) -> tuple[float, float, int, int] | None:
    """(p50 ratio, p99 ratio, small scale, large scale) between the largest and smallest scale."""
    rows = sorted(
        (r for r in results.scaling if r.store == store and r.scenario == scenario and r.measured),
        key=lambda r: r.entries,
    )
    if len(rows) < 2:
        return None
    small, large = rows[0], rows[-1]
    assert small.measured is not None and large.measured is not None
    if not small.measured.requests or small.measured.p50_ms <= 0 or small.measured.p99_ms <= 0:
        return None
    if not large.measured.requests:
        return (float("inf"), float("inf"), small.entries, large.entries)
    return (
        large.measured.p50_ms / small.measured.p50_ms,
        large.measured.p99_ms / small.measured.p99_ms,
        small.entries,
        large.entries,
    )


def _p99_or_worse(row: Row) -> float:
    """A run that got no answer at all is worse than any latency it could have shown."""
    if row.measured is None:
        return 0.0
    return row.measured.p99_ms if row.measured.requests else float("inf")


def verdicts(results: Results) -> list[Verdict]:
    out: list[Verdict] = []
    ceiling = results.ceiling_rps()
    for key, share in (("public_capture", 0.5), ("payment", 0.25)):
        row = results.row("sqlite", key)
        if row is None or row.measured is None or not ceiling:
            out.append(Verdict(f"{key} on SQLite ≥ {share} x ceiling req/s", "-", None))
            continue
        ratio = row.measured.rps / ceiling
        out.append(
            Verdict(
                f"{key.replace('_', ' ')} on SQLite ≥ {share} x ceiling req/s",
                # Three decimals: two would print 0.496 as 0.50 beside "missed".
                f"{ratio:.3f} x ({row.measured.rps:,.0f} / {ceiling:,.0f})",
                ratio >= share,
            )
        )
    writes = [r for r in results.rows if r.committed is not None and r.acknowledged is not None]
    lost = [r for r in writes if (r.committed or 0) < (r.acknowledged or 0)]
    out.append(
        Verdict(
            "every acknowledged write committed before the answer",
            f"{sum(r.acknowledged or 0 for r in writes):,} acknowledged writes in {len(writes)} runs, "
            f"{len(lost)} runs missing rows",
            not lost if writes else None,
        )
    )
    measured = [r for r in results.rows if r.store != "ceiling" and r.measured is not None]
    slow = [
        r for r in measured if r.measured and (not r.measured.requests or r.measured.p99_ms >= P99_LIMIT_MS)
    ]
    worst = max(measured, key=_p99_or_worse, default=None)
    out.append(
        Verdict(
            f"p99 < {P99_LIMIT_MS:g} ms for every scenario at 32 connections",
            (
                f"{len(measured) - len(slow)}/{len(measured)} rows under; worst "
                f"{STORE_NAMES[worst.store]} {worst.scenario} "
                f"{_f(worst.measured.p99_ms) + ' ms' if worst.measured.requests else 'no answer'}"
                if worst and worst.measured
                else "-"
            )
            + (
                f" (missed: {', '.join(f'{STORE_NAMES[r.store]} {r.scenario}' for r in slow)})"
                if slow
                else ""
            ),
            not slow if measured else None,
        )
    )
    rss: list[tuple[str, float]] = [
        (f"{STORE_NAMES[r.store]} {r.scenario}", r.rss_mb) for r in measured if r.rss_mb is not None
    ] + [
        (f"{STORE_NAMES[r.store]} {r.scenario} @ {r.entries:,}", r.rss_mb)
        for r in results.scaling
        if r.rss_mb is not None
    ]
    top = max(rss, key=lambda x: x[1], default=None)
    out.append(
        Verdict(
            f"server RSS < {RSS_LIMIT_MB:g} MB after the load",
            f"highest {top[1]:.0f} MB ({top[0]})" if top else "-",
            top[1] < RSS_LIMIT_MB if top else None,
        )
    )
    for store in ("sqlite", "postgresql"):
        for key in SCALING_READS:
            scaled = _scaling_ratio(results, store, key)
            name = f"{STORE_NAMES[store]} {key.replace('_', ' ')}: p50 latency 1M / 10k ≤ {SCALE_RATIO_LIMIT}"
            if scaled is None:
                if any(r.store == store for r in results.scaling) or any(
                    r.store == store for r in results.rows
                ):
                    out.append(Verdict(name, "not measured", None))
                continue
            p50, p99, small, large = scaled
            full = small == 10_000 and large == 1_000_000
            result = f"{p50:.2f} (p99 {p99:.2f}); {large:,} vs {small:,} entries"
            out.append(
                Verdict(
                    name,
                    result if full else result + " (not the full 10k→1M range)",
                    p50 <= SCALE_RATIO_LIMIT if full else None,
                )
            )
    return out


def _scenario_table(results: Results) -> list[str]:
    ceiling = results.ceiling_rps()
    lines = [
        "| Server | Scenario | req/s | x ceiling | p50 ms | p99 ms | errors | RSS MB "
        "| writes committed / acknowledged | server CPU ms / request | load |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    titles = {s.key: s.title for s in SCENARIOS}
    for row in results.rows:
        lines.append(_scenario_line(row, ceiling, titles.get(row.scenario, row.title)))
    return lines


def _ceiling_drift(results: Results) -> list[str]:
    """The ceiling at the start and again at the end: whether the machine kept its speed.

    Every ratio is taken to the first measurement. A machine that slowed down during the run
    (seen here: to half its speed within an hour) makes the later rows look worse than the code
    is, and only a second look at the same bare endpoint tells that apart from a slower refcore.
    """
    start, end = results.row("ceiling", "ceiling"), results.ceiling_after
    if start is None or end is None or not start.measured or not end.measured:
        return []
    if not start.measured.requests or not end.measured.requests:
        return []
    change = end.measured.rps / start.measured.rps - 1
    cpu = (
        f" (server CPU {_f(start.cpu_ms_per_request, 3)} → {_f(end.cpu_ms_per_request, 3)} ms a request)"
        if start.cpu_ms_per_request is not None and end.cpu_ms_per_request is not None
        else ""
    )
    line = (
        f"The ceiling measured again at the end of the run: {end.measured.rps:,.0f} req/s against "
        f"{start.measured.rps:,.0f} at the start, {change:+.0%}{cpu}."
    )
    if abs(change) > CEILING_DRIFT_LIMIT:
        line += (
            f" **The machine's speed changed by more than {CEILING_DRIFT_LIMIT:.0%} during the run:**"
            " rows measured late compare with rows measured early only with care."
        )
    else:
        line += (
            f" Within {CEILING_DRIFT_LIMIT:.0%}, the spread this report allows the bare endpoint"
            " between two runs before it warns that the machine's speed changed."
        )
    return [line, ""]


def _scenario_line(row: Row, ceiling: float | None, title: str) -> str:
    m = row.measured
    if m is None:
        return f"| {STORE_NAMES[row.store]} | {title} | {row.note or 'not measured'} | | | | | | | | |"
    if not m.requests:
        return (
            f"| {STORE_NAMES[row.store]} | {title} | 0 | 0 | no answer within the run | | {m.errors:,} "
            f"| {_f(row.rss_mb, 0)} | | | {_f(row.load1)} |"
        )
    share = f"{m.rps / ceiling:.2f}" if ceiling else "-"
    writes = (
        f"{row.committed:,} / {row.acknowledged:,}"
        if row.committed is not None and row.acknowledged is not None
        else ""
    )
    return (
        f"| {STORE_NAMES[row.store]} | {title} | {m.rps:,.0f} | {share} | {_f(m.p50_ms)} | {_f(m.p99_ms)} "
        f"| {m.errors:,} | {_f(row.rss_mb, 0)} | {writes} | {_server_cpu(row)} "
        f"| {_f(row.load1)} |"
    )


def _scaling_table(results: Results) -> list[str]:
    lines = [
        "| Server | Read | entries | req/s | p50 ms | p99 ms | errors | RSS MB "
        "| server CPU ms / request | load |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in results.scaling:
        lines.append(_scale_line(row))
    return lines


def _scale_line(row: ScaleRow) -> str:
    m = row.measured
    if m is None:
        note = row.note or "not measured"
        return f"| {STORE_NAMES[row.store]} | {row.scenario} | {row.entries:,} | {note} | | | | | | |"
    if not m.requests:
        return (
            f"| {STORE_NAMES[row.store]} | {row.scenario} | {row.entries:,} | 0 | no answer within the run | "
            f"| {m.errors:,} | {_f(row.rss_mb, 0)} | | {_f(row.load1)} |"
        )
    return (
        f"| {STORE_NAMES[row.store]} | {row.scenario} | {row.entries:,} | {m.rps:,.0f} | {_f(m.p50_ms)} "
        f"| {_f(m.p99_ms)} | {m.errors:,} | {_f(row.rss_mb, 0)} | {_server_cpu(row)} "
        f"| {_f(row.load1)} |"
    )


def _service_table(results: Results) -> list[str]:
    lines = [
        "| Store | Read (service function, in-process, 1 caller) | entries | calls | p50 ms | p99 ms |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for item in results.service:
        lines.append(
            f"| {STORE_NAMES[item['store']]} | {item['scenario']} | {item['entries']:,} | {item['calls']:,} "
            f"| {item['p50_ms']:.2f} | {item['p99_ms']:.2f} |"
        )
    return lines


def _core_table(results: Results) -> list[str]:
    """The core's in-process cost per write beside the whole request's, and the ratio to the
    ceiling the write could reach if everything but the core were free."""
    ceiling = results.row("ceiling", "ceiling")
    ceiling_cpu = ceiling.cpu_ms_per_request if ceiling is not None else None
    lines = [
        "| Store | Write | threads | calls | core CPU ms / call | server CPU ms / request "
        "| core's share | x ceiling at most |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for item in results.core:
        row = results.row(item["store"], item["scenario"])
        server_cpu = row.cpu_ms_per_request if row is not None else None
        share = f"{item['cpu_ms'] / server_cpu:.0%}" if server_cpu else ""
        bound = _f(ceiling_cpu / item["cpu_ms"], 2) if ceiling_cpu else ""
        lines.append(
            f"| {STORE_NAMES[item['store']]} | {item['scenario']} | {_callers(item)} | {item['calls']:,} "
            f"| {item['cpu_ms']:.2f} | {_f(server_cpu, 2)} | {share} | {bound} |"
        )
    return lines


def _callers(item: dict[str, Any]) -> str:
    """How the core's calls ran: on threads, or by one thread in write batches."""
    batch = item.get("batch")
    return f"{item['threads']}, batches of {batch}" if batch else str(item["threads"])


def _latency(m: Measured, field: str) -> str:
    return _f(getattr(m, field)) if m.requests else "no answer"


def _compare_line(
    label: str,
    a: Measured,
    b: Measured,
    cpu: tuple[float | None, float | None],
    load: tuple[float | None, ...],
) -> str:
    return (
        f"| {label} | {a.rps:,.0f} → {b.rps:,.0f} "
        f"| {_latency(a, 'p50_ms')} → {_latency(b, 'p50_ms')} "
        f"| {_latency(a, 'p99_ms')} → {_latency(b, 'p99_ms')} "
        f"| {a.errors:,} → {b.errors:,} | {_f(cpu[0], 2)} → {_f(cpu[1], 2)} | {_f(load[0])} → {_f(load[1])} |"
    )


def _compare_table(results: Results, before: Results) -> list[str]:
    lines = [
        "| Server | Scenario | req/s before → after | p50 ms before → after | p99 ms before → after "
        "| errors before → after | server CPU ms / request before → after | load before → after |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for row in results.rows:
        old = before.row(row.store, row.scenario)
        if old is None or old.measured is None or row.measured is None:
            continue
        label = f"{STORE_NAMES[row.store]} | {row.scenario}"
        cpu = (old.cpu_ms_per_request, row.cpu_ms_per_request)
        lines.append(_compare_line(label, old.measured, row.measured, cpu, (old.load1, row.load1)))
    for scale in results.scaling:
        key = (scale.store, scale.scenario, scale.entries)
        old_scale = next((r for r in before.scaling if (r.store, r.scenario, r.entries) == key), None)
        if old_scale is None or old_scale.measured is None or scale.measured is None:
            continue
        label = f"{STORE_NAMES[scale.store]} | {scale.scenario} @ {scale.entries:,} entries"
        cpu = (old_scale.cpu_ms_per_request, scale.cpu_ms_per_request)
        loads = (old_scale.load1, scale.load1)
        lines.append(_compare_line(label, old_scale.measured, scale.measured, cpu, loads))
    return lines


def _compare_service_table(results: Results, before: Results) -> list[str]:
    lines = [
        "| Store | Read (in-process, 1 caller) | entries | p50 ms before → after | p99 ms before → after |",
        "|---|---|---:|---:|---:|",
    ]
    for item in results.service:
        key = (item["store"], item["scenario"], item["entries"])
        old = next((o for o in before.service if (o["store"], o["scenario"], o["entries"]) == key), None)
        if old is None:
            continue
        lines.append(
            f"| {STORE_NAMES[item['store']]} | {item['scenario']} | {item['entries']:,} "
            f"| {old['p50_ms']:.2f} → {item['p50_ms']:.2f} | {old['p99_ms']:.2f} → {item['p99_ms']:.2f} |"
        )
    return lines if len(lines) > 2 else []  # nothing to compare (a "before" without the reads)


def render(
    results: Results,
    *,
    plan_scales: tuple[int, ...],
    before: Results | None = None,
    rendered_with: str | None = None,
) -> str:
    origin = f"Measured by `{results.command}` ({results.mode} run)"
    if rendered_with:
        origin += f" and written from its saved results by `{rendered_with}`"
    lines = [
        "# Performance",
        "",
        f"{origin}. Do not edit by hand: run `.venv/bin/python -m bench` again (about 45 minutes;",
        "`--quick` about 6). The harness is `bench/` (see `bench/README.md`).",
        "",
        "## Machine and software",
        "",
        "| | |",
        "|---|---|",
        *[f"| {k} | {v} |" for k, v in results.facts.items()],
        "",
        "## Method",
        "",
        *[f"- **{k}**: {v}." for k, v in results.method.items()],
        "- **Ceiling**: a bare Starlette endpoint returning a small JSON object, run by the same",
        "  `uvicorn.run(...)` call as `refcore serve`; wrk sends it the public capture request.",
        "- **refcore**: `refcore serve --database-url … --no-migrate --log-level warning` on a fresh",
        "  SQLite file and a fresh PostgreSQL database (created for the run and dropped after). The",
        "  tenant (organization, App, Live key, program at 20 %, affiliate, link) is made through the",
        "  API; the affiliate key through the library, as a confirmed hosted signup would issue it.",
        "- **Writes** carry a unique ID per request (wrk run label, thread, counter), so none is a",
        "  replay. After each write run the rows with that run's label are counted in the database:",
        "  every 2xx answer must have its row (commit before answer; SQLite runs WAL with the default",
        "  `synchronous=FULL`, PostgreSQL `synchronous_commit=on`).",
        "- **errors** are non-2xx answers plus socket errors and timeouts (30 s). **RSS** is the",
        "  server's `VmRSS` right after the run; one server serves all its scenarios in the order",
        "  shown, so later rows include what earlier ones left behind (e.g. the list and balance",
        "  read the entries the payment and refund runs wrote). On PostgreSQL the first read",
        "  scenario after the write scenarios runs after a `VACUUM ANALYZE` of the database, which",
        "  autovacuum would have done by then on a production server (this machine's runs with",
        "  autovacuum off): without it the reads walked thousands of dead row versions and planned",
        "  without statistics. Each PostgreSQL write scenario gets the same between its warm-up",
        "  and its measurement: its warm-up grows tables from nearly empty, and without statistics",
        "  the planner filtered every payment of the App for the idempotency lookup instead of",
        "  using its unique key.",
        "- **Scaling**: a fresh database per store with a program of 10 affiliates and a year of",
        "  history seeded by bulk `INSERT`s into the store's tables (built by the store's own row",
        "  mappers; see `bench/seed.py`): subscribers paying every 30 days, 1 in 10 payments half",
        "  refunded (reversal entries), recent payments occasionally disputed (held), and every",
        "  30 days a succeeded payout with one item per paid entry. Three reads: the App's newest",
        "  commissions page (`commissions_page`); the balance of the first of the 10 affiliates,",
        "  which holds a tenth of all entries, so its own history grows 100-fold from 10k to 1M",
        "  (`payout_balance`); and the balance of an 11th affiliate whose history stays at about",
        "  1,000 entries while the database grows around it (`steady_balance`). PostgreSQL gets",
        "  `VACUUM ANALYZE` after seeding: what autovacuum does within a minute of a bulk load, and",
        "  this machine's server runs with autovacuum off (see the machine facts), so the seed's dead",
        "  row versions of the balance projection would otherwise never be cleared. SQLite is not",
        "  analyzed (the store never does), but its write-ahead log is checkpointed and emptied after",
        "  seeding (`wal_checkpoint(TRUNCATE)`:",
        "  the seeder's last large transaction otherwise leaves a WAL that no later write resets, and",
        "  every read looks its pages up in it; a server taking writes resets its WAL within seconds).",
        "  After a run whose queued requests outlast it, the server is restarted before the next.",
        "- **server CPU ms / request** is the server process's CPU time (user + system, all threads)",
        "  over the measured run divided by the requests answered (PostgreSQL's own processes are",
        "  not included): it does not depend on what else the machine was doing. The share in",
        "  brackets is the kernel's part of it (system calls: writing the log, `fsync`, sockets,",
        "  waking threads), which instruction counts (`python -m bench.instructions`) leave out;",
        "  runs saved before the harness recorded it (revision 4a1dfb2) show the CPU alone. The",
        "  `loop` share is the server's main thread, which runs the event loop (uvicorn, HTTP",
        "  parsing, routing, rendering answers); the rest is its worker threads, which run the",
        "  core and the database driver. Runs saved before the forty-sixth session show no loop",
        "  share.",
        "  **load** is the 1-minute load average right after the run; this machine is shared with",
        "  other work, and a load well above 2 means the figures of that row were taken with less",
        "  than the two CPUs to themselves.",
        "- `refcore serve` itself freezes its start-up objects out of the garbage collector",
        "  (`gc.freeze()`); the ceiling has next to nothing to freeze.",
        "- wrk measures latency from request sent to answer read on an open connection, closed-loop",
        "  (no coordinated-omission correction): at 32 connections p50 is mostly queueing,",
        "  about 32 / throughput.",
        "",
        "## Targets",
        "",
        "| Target | Result | |",
        "|---|---|---|",
        *[f"| {v.target} | {v.result} | {v.mark} |" for v in verdicts(results)],
        "",
        "## Scenarios (32 connections)",
        "",
        *_scenario_table(results),
        "",
        *_ceiling_drift(results),
    ]
    if results.core:
        lines += [
            "The core alone (`bench/core_cost.py`): authenticating the key and running the write's",
            "service function in-process, no HTTP, on the run's database after its server stopped,",
            "pinned to the server's CPU; CPU time per call with one caller (each call commits alone),",
            "with eight threads (sharing commits, as the server's writers do on PostgreSQL) and, on",
            "SQLite, by one thread in write batches (one commit and one lookup of the key a batch, as",
            "the server runs payments, refunds, disputes and identifies there). The last column",
            "is the ceiling's CPU per request divided by the core's: the highest ratio to the",
            "ceiling the write could reach if HTTP, the thread hop and the webhook dispatcher cost",
            "nothing.",
            "",
            *_core_table(results),
            "",
        ]
    if plan_scales:
        lines += [
            "## Scaling: the same reads over 10 thousand to 1 million entries",
            "",
            *_scaling_table(results),
            "",
            "The same reads timed in-process (the service functions, no HTTP, one caller), which",
            "separates what the database and the core cost per read from queueing:",
            "",
            *_service_table(results),
            "",
        ]
    if before is not None:
        lines += [
            "## Before and after the optimisations",
            "",
            f"Before: `{before.command}` at revision {before.facts.get('Revision', '?')}, "
            f"{before.facts.get('Date', '?')}.",
            "",
            *_compare_table(results, before),
            "",
        ]
        service = _compare_service_table(results, before)
        lines += [*service, ""] if service else []
    notes = Path(__file__).with_name("notes.md")
    if notes.exists():
        lines += [notes.read_text().rstrip(), ""]
    errors = [r for r in results.rows if r.measured and r.measured.sample]
    if errors:
        lines += ["## First error answer per run", ""]
        lines += [
            f"- {STORE_NAMES[r.store]} {r.scenario}: `{r.measured.sample[:200]}`"
            for r in errors
            if r.measured
        ]
        lines.append("")
    return "\n".join(lines)


def summary(results: Results) -> str:
    return "\n".join(f"{v.mark:>12}  {v.target}: {v.result}" for v in verdicts(results))
