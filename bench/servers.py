"""Starting and stopping the servers under test, pinned to their CPU, and reading their memory.

Every server is one uvicorn process started as ``taskset -c CPU <command>`` (``taskset`` execs
the command, so the PID we hold is the server's own and ``/proc/PID/status`` is its memory).
Its output goes to a log file in the run directory, which is shown when it fails to start.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent
#: Both servers run at this uvicorn log level (no access log line per request).
LOG_LEVEL = "warning"


def load_average() -> float:
    """The 1-minute load average: how busy the machine was (other work shares it)."""
    return float(Path("/proc/loadavg").read_text().split()[0])


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def pinned(command: Sequence[str], cpu: int | None) -> list[str]:
    return ["taskset", "-c", str(cpu), *command] if cpu is not None else list(command)


class Server:
    """One server process; ``name`` appears in progress lines and in the log file's name."""

    def __init__(
        self,
        name: str,
        command: Sequence[str],
        *,
        cpu: int | None,
        log_dir: Path,
        ready_path: str,
        env: dict[str, str] | None = None,
    ) -> None:
        self.name = name
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._command = pinned([*command, "--port", str(self.port)], cpu)
        self._ready_path = ready_path
        self._env = {**os.environ, **(env or {})}
        self.log_path = log_dir / f"{name}.log"
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int:
        assert self._process is not None
        return self._process.pid

    def start(self, *, timeout: float = 60.0) -> None:
        log = self.log_path.open("ab")
        self._process = subprocess.Popen(
            self._command, stdout=log, stderr=subprocess.STDOUT, env=self._env, cwd=ROOT
        )
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"{self.name} exited at start:\n{self.log_tail()}")
            try:
                if httpx.get(self.url + self._ready_path, timeout=2.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"{self.name} did not answer within {timeout:.0f} s:\n{self.log_tail()}")

    def wait_idle(self, *, at_most: float = 60.0) -> bool:
        """Wait until the server has stopped working off requests wrk left queued (its CPU time
        stops moving). ``False`` when it is still busy after ``at_most`` seconds."""
        deadline = time.monotonic() + at_most
        last = self.cpu_seconds()
        while time.monotonic() < deadline:
            time.sleep(0.5)
            now = self.cpu_seconds()
            if now - last < 0.02:
                return True
            last = now
        return False

    def restart(self) -> None:
        self.stop()
        self.start()

    def rss_mb(self) -> float:
        """Resident memory now (``VmRSS``), in MiB."""
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        raise RuntimeError(f"no VmRSS for {self.name}")

    def cpu_times(self) -> tuple[float, float]:
        """CPU seconds the server has used so far in its own code and in the kernel (every thread)."""
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        tick = os.sysconf("SC_CLK_TCK")
        return int(fields[11]) / tick, int(fields[12]) / tick

    def loop_cpu_seconds(self) -> float:
        """CPU time (user + system) of the server's main thread alone: the thread that runs the
        event loop (uvicorn, HTTP parsing, routing, answers), where :meth:`cpu_times` counts
        every thread (the worker threads running the core too)."""
        return _task_cpu_seconds(Path(f"/proc/{self.pid}/task/{self.pid}/stat"))

    def cpu_seconds(self) -> float:
        """CPU time the server has used so far (user + system, every thread)."""
        return sum(self.cpu_times())

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=15)

    def __enter__(self) -> Server:
        self.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()


def _task_cpu_seconds(stat: Path) -> float:
    """User + system CPU seconds from a ``/proc/…/stat`` file (fields 14 and 15)."""
    fields = stat.read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def ceiling_command() -> list[str]:
    return [sys.executable, "-m", "bench.ceiling", "--log-level", LOG_LEVEL]


def serve_arguments(database_url: str) -> list[str]:
    """The arguments of ``refcore serve`` as an operator runs it, on an already migrated database."""
    return ["serve", "--database-url", database_url, "--no-migrate", "--log-level", LOG_LEVEL]


def throwaway_secret_key() -> dict[str, str]:
    """A key for this run only, in case a route needs one (webhook secrets)."""
    return {"REFCORE_SECRET_KEY": os.urandom(24).hex()}


def ceiling_server(*, cpu: int | None, log_dir: Path) -> Server:
    return Server("ceiling", ceiling_command(), cpu=cpu, log_dir=log_dir, ready_path="/")


def refcore_server(name: str, database_url: str, *, cpu: int | None, log_dir: Path) -> Server:
    command = [str(VENV_BIN / "refcore"), *serve_arguments(database_url)]
    return Server(name, command, cpu=cpu, log_dir=log_dir, ready_path="/v1", env=throwaway_secret_key())
