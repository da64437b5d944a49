"""The ``refcore`` command: help, session, migrate, serve, and settings from flags or environment."""

from __future__ import annotations

import gc
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import psycopg
import pytest

from refcore.services.principal import PrincipalKind
from refcore.services.tenancy import authenticate
from refcore_http import cli
from refcore_http.app import create_app
from refcore_http.settings import Settings, SettingsError
from refcore_http.store import open_store
from refcore_sqlstore.errors import connection_failure
from tests.http.world import Client, expect

_REFCORE = Path(sys.executable).with_name("refcore")


@pytest.mark.parametrize("command", [[], ["serve"], ["session"], ["migrate"], ["reseal-secrets"]])
def test_every_command_has_help(command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        cli.main([*command, "--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: refcore")
    if not command:
        assert all(name in out for name in ("serve", "session", "migrate", "reseal-secrets"))
    if command == ["serve"]:
        assert all(flag in out for flag in ("--host", "--port", "--database-url", "--no-migrate"))
    if command == ["reseal-secrets"]:
        assert "--database-url" in out


def test_no_command_prints_usage_and_fails(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main([]) == 2
    assert "usage: refcore" in capsys.readouterr().err


def test_session_prints_one_token_that_the_server_accepts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'refcore.db'}"
    assert cli.main(["session", "--email", "Dev@Example.com", "--database-url", url]) == 0
    printed = capsys.readouterr()
    out = printed.out
    lines = out.splitlines()
    assert len(lines) == 1 and lines[0].startswith("sess_") and out.endswith("\n")
    assert "migrating" in printed.err  # a fresh file: the migrations it applied are announced
    store = open_store(url)
    try:
        assert authenticate(store.runtime, lines[0]).kind is PrincipalKind.SESSION
        client = Client(create_app(store.runtime, Settings(database_url=url)))
        expect(client.post("/v1/organizations", lines[0], {"name": "Acme"}), 201)
    finally:
        store.dispose()


def test_session_reads_the_database_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'env.db'}"
    monkeypatch.setenv("REFCORE_DATABASE_URL", url)
    assert cli.main(["session", "--email", "dev@example.com"]) == 0
    token = capsys.readouterr().out.strip()
    store = open_store(url)
    try:
        assert authenticate(store.runtime, token).kind is PrincipalKind.SESSION
    finally:
        store.dispose()


def test_session_refuses_the_memory_store_and_bad_emails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["session", "--email", "dev@example.com", "--database-url", "memory://"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "memory://" in captured.err
    url = f"sqlite:///{tmp_path / 'refcore.db'}"
    assert cli.main(["session", "--email", "not-an-email", "--database-url", url]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "e-mail" in captured.err


def test_migrate_announces_pending_migrations_is_idempotent_and_fails_cleanly_on_bad_urls(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'refcore.db'}"
    assert cli.main(["migrate", "--database-url", url]) == 0
    first = capsys.readouterr().err
    assert "migrating" in first and first.rstrip().endswith("is up to date")
    assert cli.main(["migrate", "--database-url", url]) == 0
    assert "migrating" not in capsys.readouterr().err  # nothing was pending
    assert cli.main(["migrate", "--database-url", "mysql://root:pw@db/x"]) == 2
    err = capsys.readouterr().err
    assert "unsupported database" in err and "pw" not in err


@pytest.mark.usefixtures("collector_restored")
def test_serve_freezes_start_up_and_collects_the_young_generation_less_often(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[tuple[int, tuple[int, ...]]] = []
    import uvicorn

    def run(app: Any, **options: Any) -> None:
        seen.append((gc.get_freeze_count(), gc.get_threshold()))

    gc.unfreeze()
    before = gc.get_threshold()
    monkeypatch.setattr(uvicorn, "run", run)
    assert cli.main(["serve", "--database-url", "memory://"]) == 0
    ((frozen, (young, *older)),) = seen
    assert frozen > 0
    assert young == cli.YOUNG_GENERATION_THRESHOLD > before[0]
    assert tuple(older) == before[1:]  # the older generations keep their thresholds


@pytest.mark.usefixtures("collector_restored")
def test_serve_runs_uvicorn_with_its_settings(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    calls: list[tuple[Any, dict[str, Any]]] = []
    import uvicorn

    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: calls.append((app, kw)))
    monkeypatch.setenv("REFCORE_PORT", "9001")
    monkeypatch.setenv("REFCORE_KEEP_ALIVE_SECONDS", "75")
    argv = ["serve", "--database-url", "memory://", "--host", "0.0.0.0", "--print-session", "dev@example.com"]
    assert cli.main(argv) == 0
    ((app, options),) = calls
    assert (options["host"], options["port"], options["proxy_headers"]) == ("0.0.0.0", 9001, False)
    assert options["timeout_keep_alive"] == 75
    token = capsys.readouterr().out.strip()
    client = Client(app)
    expect(client.post("/v1/organizations", token, {"name": "Acme"}), 201)


def test_a_database_that_cannot_be_reached_is_named_with_why_and_no_driver_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'no-such-directory' / 'refcore.db'}"
    assert cli.main(["migrate", "--database-url", url]) == 2
    err = capsys.readouterr().err
    assert err.startswith("refcore: The database could not complete the operation: SQLite cannot open")
    assert err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.parametrize(
    ("driver_message", "meaning"),
    [
        (
            'connection failed: ... port 5432 failed: FATAL:  database "nosuchdb" does not exist',
            "does not exist",
        ),
        ("connection failed: ... port 1 failed: Connection refused", "nothing accepts connections"),
        ("failed to resolve host 'ss@db.example': [Errno -2] Name or service not known", "does not resolve"),
        ('connection is bad: invalid sslmode value: "bogus"', "invalid connection option"),
        ('FATAL:  password authentication failed for user "app"', "refused the user name or password"),
    ],
)
def test_connection_failures_are_told_in_fixed_sentences(driver_message: str, meaning: str) -> None:
    """Only refcore's own sentence reaches the command line: the driver's text may quote a host
    that holds part of a password (an unencoded ``@`` in the URL)."""
    reason = connection_failure(psycopg.OperationalError(driver_message))
    assert reason is not None and meaning in reason
    assert "ss@db.example" not in reason and "bogus" not in reason and "nosuchdb" not in reason
    assert connection_failure(psycopg.errors.UniqueViolation("duplicate key")) is None
    assert connection_failure(None) is None


def test_a_connection_string_psycopg_refuses_is_told_as_an_invalid_option() -> None:
    """psycopg refuses an unknown query parameter of the URL before connecting, with a
    ``ProgrammingError`` and no SQLSTATE; one the server raised has a SQLSTATE and is no failure
    to connect, whatever its text says."""
    reason = connection_failure(psycopg.ProgrammingError('invalid connection option "bogusopt"'))
    assert reason == "the URL has an invalid connection option"
    assert connection_failure(psycopg.errors.UndefinedTable('relation "invalid" does not exist')) is None
    assert connection_failure(psycopg.errors.SyntaxError('syntax error at or near "invalid"')) is None


@pytest.mark.parametrize("command", [["migrate"], ["session", "--email", "dev@example.com"]])
def test_an_unknown_connection_option_in_the_url_is_named_as_such(
    command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """No server is needed: psycopg refuses the option before it connects."""
    url = "postgresql://postgres:hunter2@127.0.0.1:5432/x?bogusopt=1"
    assert cli.main([*command, "--database-url", url]) == 2
    printed = capsys.readouterr()
    assert printed.out == ""
    assert printed.err == (
        "refcore: The database could not complete the operation: the URL has an invalid connection option\n"
    )


@pytest.mark.usefixtures("collector_restored")
def test_serve_without_migrating_refuses_a_database_that_lacks_migrations(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """With ``--no-migrate`` on an empty (or older) database the server would answer ``GET /v1``
    and fail everything else: it refuses to start and says what to run."""
    import uvicorn

    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: calls.append(kw))
    database = tmp_path / "refcore.db"
    url = f"sqlite:///{database}"
    assert cli.main(["serve", "--no-migrate", "--database-url", url]) == 2
    err = capsys.readouterr().err
    assert "names no existing database file" in err and "refcore migrate" in err
    assert not database.exists()  # SQLite would have made an empty file at the first connection
    database.touch()
    assert cli.main(["serve", "--no-migrate", "--database-url", url]) == 2
    assert calls == []
    err = capsys.readouterr().err
    assert "lacks migrations" in err and "refcore migrate" in err
    assert cli.main(["migrate", "--database-url", url]) == 0
    assert cli.main(["serve", "--no-migrate", "--database-url", url]) == 0
    assert len(calls) == 1


@pytest.mark.usefixtures("collector_restored")
def test_a_database_a_newer_release_migrated_is_refused_in_one_line_and_left_as_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """An old process restarted after a newer release migrated (or a release rolled back) met
    Alembic's traceback, "Can't locate revision". Every command that migrates refuses in one
    line naming the way out, changes nothing, and ``--no-migrate`` still serves, as
    docs/deployment.md says."""
    import uvicorn

    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: calls.append(kw))
    database = tmp_path / "refcore.db"
    url = f"sqlite:///{database}"
    assert cli.main(["migrate", "--database-url", url]) == 0
    with sqlite3.connect(database) as connection:
        connection.execute("UPDATE alembic_version SET version_num = '0999_from_the_future'")
    capsys.readouterr()
    for command in (["serve"], ["migrate"], ["session", "--email", "dev@example.com"]):
        assert cli.main([*command, "--database-url", url]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "Traceback" not in err, err
        assert "0999_from_the_future" in err and "newer release" in err and "--no-migrate" in err
    with sqlite3.connect(database) as connection:
        assert connection.execute("SELECT version_num FROM alembic_version").fetchall() == [
            ("0999_from_the_future",)
        ]
        assert connection.execute("SELECT count(*) FROM users").fetchone() == (0,)
    assert calls == []
    assert cli.main(["serve", "--no-migrate", "--database-url", url]) == 0
    assert len(calls) == 1


def test_serve_stops_on_a_bad_setting(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("REFCORE_PORT", "eighty")
    assert cli.main(["serve", "--database-url", "memory://"]) == 2
    assert "REFCORE_PORT" in capsys.readouterr().err


def test_settings_come_from_the_environment_and_flags_win() -> None:
    env = {
        "REFCORE_DATABASE_URL": "sqlite:///x.db",
        "REFCORE_HOST": "0.0.0.0",
        "REFCORE_PORT": "9000",
        "REFCORE_TRUSTED_PROXIES": "10.0.0.0/8, 192.168.1.1",
        "REFCORE_SECRET_KEY": "k" * 32,
        "REFCORE_MIGRATE_ON_START": "false",
    }
    settings = Settings.from_env(env, port=8100, database_url=None)
    assert (settings.database_url, settings.host, settings.port) == ("sqlite:///x.db", "0.0.0.0", 8100)
    assert [str(n) for n in settings.trusted_proxies] == ["10.0.0.0/8", "192.168.1.1/32"]
    assert settings.migrate_on_start is False
    assert "k" * 32 not in repr(settings)
    assert Settings.from_env({}).database_url == "sqlite:///./refcore.db"


def test_the_trusted_proxy_flag_takes_the_comma_separated_list_the_variable_takes() -> None:
    """Probe AN: deployment.md gives one row to REFCORE_TRUSTED_PROXIES and --trusted-proxy, but
    the flag refused ``10.0.0.1,10.0.0.2``."""
    settings = Settings.from_env({}, trusted_proxies=["10.0.0.1,10.0.0.2", "192.168.0.0/16"])
    assert [str(n) for n in settings.trusted_proxies] == ["10.0.0.1/32", "10.0.0.2/32", "192.168.0.0/16"]
    with pytest.raises(SettingsError, match="--trusted-proxy: 'nope' is not an IP address"):
        Settings.from_env({}, trusted_proxies=["10.0.0.1,nope"])


@pytest.mark.parametrize(
    ("env", "variable"),
    [
        ({"REFCORE_SECRET_KEY": "too-short"}, "REFCORE_SECRET_KEY"),
        ({"REFCORE_TRUSTED_PROXIES": "10.0.0.0/8,proxy.local"}, "REFCORE_TRUSTED_PROXIES"),
        ({"REFCORE_PORT": "70000"}, "REFCORE_PORT"),
        ({"REFCORE_MIGRATE_ON_START": "maybe"}, "REFCORE_MIGRATE_ON_START"),
        ({"REFCORE_DB_POOL_SIZE": "0"}, "REFCORE_DB_POOL_SIZE"),
        ({"REFCORE_DB_POOL_SIZE": "ten"}, "REFCORE_DB_POOL_SIZE"),
        ({"REFCORE_DB_MAX_OVERFLOW": "-1"}, "REFCORE_DB_MAX_OVERFLOW"),
        ({"REFCORE_WORKER_THREADS": "0"}, "REFCORE_WORKER_THREADS"),
        ({"REFCORE_KEEP_ALIVE_SECONDS": "0"}, "REFCORE_KEEP_ALIVE_SECONDS"),
        ({"REFCORE_KEEP_ALIVE_SECONDS": "1.5"}, "REFCORE_KEEP_ALIVE_SECONDS"),
        ({"REFCORE_WORKER_THREADS": "many"}, "REFCORE_WORKER_THREADS"),
        ({"REFCORE_READ_WORKER_THREADS": "-1"}, "REFCORE_READ_WORKER_THREADS"),
        ({"REFCORE_READ_WORKER_THREADS": "one"}, "REFCORE_READ_WORKER_THREADS"),
    ],
)
def test_a_bad_setting_names_its_variable(env: dict[str, str], variable: str) -> None:
    with pytest.raises(SettingsError, match=variable) as error:
        Settings.from_env(env)
    assert "too-short" not in str(error.value)


@pytest.mark.skipif(not _REFCORE.exists(), reason="the refcore script is not installed in this environment")
def test_the_installed_script_mints_a_session(tmp_path: Path) -> None:
    env = {**os.environ, "REFCORE_DATABASE_URL": f"sqlite:///{tmp_path / 'refcore.db'}"}
    result = subprocess.run(
        [str(_REFCORE), "session", "--email", "dev@example.com"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert len(result.stdout.splitlines()) == 1 and result.stdout.startswith("sess_")


def test_serve_logs_refcore_records_at_its_log_level(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """uvicorn configures only its own loggers: ``refcore serve`` adds refcore's, so a webhook
    delivery's outcome (``refcore.webhooks``, INFO) reaches stderr at ``--log-level info``."""
    import logging.config

    import uvicorn

    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: calls.append(kw))
    assert cli.main(["serve", "--database-url", "memory://", "--log-level", "info"]) == 0
    ((options,),) = [tuple(calls)]
    config = options["log_config"]
    assert config["loggers"]["refcore"]["level"] == "INFO"
    assert config["loggers"]["uvicorn"] == uvicorn.config.LOGGING_CONFIG["loggers"]["uvicorn"]
    capsys.readouterr()
    touched = [logging.getLogger(name) for name in (*config["loggers"], "refcore.webhooks")]
    saved = [
        (logger, logger.handlers[:], logger.level, logger.propagate, logger.disabled) for logger in touched
    ]
    try:
        logging.config.dictConfig(config)
        logging.getLogger("refcore.webhooks").info("delivered evt_1")
        logging.getLogger("refcore.webhooks").debug("not at info")
        err = capsys.readouterr().err
    finally:  # leave logging as the other tests expect it
        for logger, handlers, level, propagate, disabled in saved:
            logger.handlers[:] = handlers
            logger.setLevel(level)
            logger.propagate, logger.disabled = propagate, disabled
    assert "delivered evt_1" in err
    assert "not at info" not in err


def test_the_connection_pool_is_sized_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``REFCORE_DB_POOL_SIZE`` / ``REFCORE_DB_MAX_OVERFLOW`` reach the SQL store's engine, so a
    fleet can keep its processes' connections under PostgreSQL's ``max_connections``."""
    from refcore_sqlstore import SqlStore

    assert (Settings.from_env({}).db_pool_size, Settings.from_env({}).db_max_overflow) == (10, 20)
    opened: list[tuple[int, int]] = []
    original = SqlStore.__init__

    def recording(self: SqlStore, database_url: str, *, pool_size: int = 10, max_overflow: int = 20) -> None:
        opened.append((pool_size, max_overflow))
        original(self, database_url, pool_size=pool_size, max_overflow=max_overflow)

    monkeypatch.setattr(SqlStore, "__init__", recording)
    monkeypatch.setenv("REFCORE_DATABASE_URL", f"sqlite:///{tmp_path / 'refcore.db'}")
    monkeypatch.setenv("REFCORE_DB_POOL_SIZE", "3")
    monkeypatch.setenv("REFCORE_DB_MAX_OVERFLOW", "0")
    assert cli.main(["migrate"]) == 0
    assert opened == [(3, 0)]
    store = SqlStore(f"sqlite:///{tmp_path / 'refcore.db'}", pool_size=3, max_overflow=0)
    try:
        pool = store._engine.pool
        assert (pool.size(), pool._max_overflow) == (3, 0)  # type: ignore[attr-defined]
    finally:
        store.dispose()


def test_handlers_run_in_a_pool_of_the_configured_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """``REFCORE_WORKER_THREADS`` bounds how many requests run the core at once."""
    from refcore_http.workers import worker_threads

    settings = Settings.from_env({"REFCORE_WORKER_THREADS": "3", "REFCORE_READ_WORKER_THREADS": "0"})
    assert settings.worker_threads == 3
    assert Settings.from_env({}).worker_threads == worker_threads().max_threads
    pool = worker_threads(3)
    assert pool.max_threads == 3
    calls: list[object] = []
    original = pool.run

    async def counting(work: Any) -> Any:
        calls.append(work)
        return await original(work)

    monkeypatch.setattr(pool, "run", counting)
    client = Client(create_app(open_store("memory://").runtime, settings))
    expect(client.get("/v1"), 200)
    assert len(calls) == 1


def test_get_requests_run_in_their_own_pool_of_the_configured_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """``REFCORE_READ_WORKER_THREADS``: reads in a pool of their own, writes in the main pool."""
    from refcore_http.workers import worker_threads

    settings = Settings.from_env({"REFCORE_WORKER_THREADS": "5", "REFCORE_READ_WORKER_THREADS": "2"})
    assert settings.read_threads == 2
    readers, writers = worker_threads(2, name="refcore-reader"), worker_threads(5)
    ran: list[str] = []
    for label, pool in (("read", readers), ("write", writers)):
        original = pool.run

        async def counting(work: Any, label: str = label, original: Any = original) -> Any:
            ran.append(label)
            return await original(work)

        monkeypatch.setattr(pool, "run", counting)
    client = Client(create_app(open_store("memory://").runtime, settings))
    expect(client.get("/v1"), 200)
    assert ran == ["read"]
    # An unknown key is refused in the worker thread that looks it up.
    expect(
        client.post("/v1/organizations", json={"name": "x"}, headers={"Authorization": "Bearer key_x"}), 401
    )
    assert ran == ["read", "write"]


@pytest.mark.parametrize(
    ("url", "threads"),
    [("sqlite:///refcore.db", 1), ("postgresql://db/refcore", 0)],
    ids=["SQLite: one reader thread", "PostgreSQL: reads share the main pool"],
)
def test_the_read_pool_by_default_depends_on_the_database(url: str, threads: int) -> None:
    assert Settings.from_env({"REFCORE_DATABASE_URL": url}).read_threads == threads
    explicit = {"REFCORE_DATABASE_URL": url, "REFCORE_READ_WORKER_THREADS": "3"}
    assert Settings.from_env(explicit).read_threads == 3


@pytest.mark.usefixtures("collector_restored")
@pytest.mark.parametrize(
    ("level", "access_log"),
    [("debug", True), ("info", True), ("warning", False), ("error", False), ("critical", False)],
)
def test_serve_turns_uvicorns_access_log_off_where_its_level_drops_the_lines(
    monkeypatch: pytest.MonkeyPatch, level: str, access_log: bool
) -> None:
    """uvicorn writes access lines at INFO, but with the access log on it formats each line's
    arguments for every response before the level drops it: at ``warning`` and above that was
    work for nothing, so ``serve`` turns the access log off there (the lines stay at ``info``)."""
    import uvicorn

    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: calls.append(kw))
    assert cli.main(["serve", "--database-url", "memory://", "--log-level", level]) == 0
    ((options,),) = [tuple(calls)]
    assert options["access_log"] is access_log
