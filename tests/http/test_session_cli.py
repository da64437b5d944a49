"""The operator's side of session lifetimes: ``refcore session --end-all`` ends every session
of a user, and ``REFCORE_SESSION_TTL_HOURS`` is read, checked and told like every setting."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from refcore.errors import Unauthenticated
from refcore.services.principal import PrincipalKind
from refcore.services.tenancy import authenticate
from refcore_http import cli
from refcore_http.settings import MAX_SESSION_TTL_HOURS, Settings, SettingsError
from refcore_http.store import open_store


def _new_token(url: str, email: str, capsys: pytest.CaptureFixture[str]) -> str:
    assert cli.main(["session", "--email", email, "--database-url", url]) == 0
    return capsys.readouterr().out.strip()


def _session_rows(url: str) -> int:
    store = open_store(url)
    try:
        return store.runtime.read(lambda tx: len(tx.uow.sessions.find_all({})))
    finally:
        store.dispose()


def test_end_all_ends_every_session_of_the_user_and_no_other(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'refcore.db'}"
    laptop = _new_token(url, "dev@example.com", capsys)
    phone = _new_token(url, "dev@example.com", capsys)
    colleague = _new_token(url, "ops@example.com", capsys)
    rows = _session_rows(url)

    assert cli.main(["session", "--email", "Dev@Example.com", "--end-all", "--database-url", url]) == 0
    printed = capsys.readouterr()
    assert printed.out == "ended 2 sessions of dev@example.com\n"
    assert "sess_" not in printed.out + printed.err  # no token is made or shown
    assert _session_rows(url) == rows  # none created

    store = open_store(url)
    try:
        for token in (laptop, phone):
            with pytest.raises(Unauthenticated):
                authenticate(store.runtime, token)
        assert authenticate(store.runtime, colleague).kind is PrincipalKind.SESSION
    finally:
        store.dispose()

    # Again: nothing left to end, which is no error.
    assert cli.main(["session", "--email", "dev@example.com", "--end-all", "--database-url", url]) == 0
    assert capsys.readouterr().out == "ended 0 sessions of dev@example.com\n"


def test_end_all_counts_one_session_in_the_singular(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'refcore.db'}"
    _new_token(url, "dev@example.com", capsys)
    assert cli.main(["session", "--email", "dev@example.com", "--end-all", "--database-url", url]) == 0
    assert capsys.readouterr().out == "ended 1 session of dev@example.com\n"


def test_end_all_for_an_address_no_user_has_ends_nothing_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'refcore.db'}"
    kept = _new_token(url, "dev@example.com", capsys)
    assert cli.main(["session", "--email", "dve@example.com", "--end-all", "--database-url", url]) == 1
    printed = capsys.readouterr()
    assert printed.out == ""
    assert "no user has the e-mail address dve@example.com" in printed.err
    assert printed.err.count("\n") == 1
    store = open_store(url)
    try:
        assert authenticate(store.runtime, kept).kind is PrincipalKind.SESSION
    finally:
        store.dispose()


def test_end_all_refuses_what_session_refuses(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        cli.main(["session", "--email", "dev@example.com", "--end-all", "--database-url", "memory://"]) == 2
    )
    assert "memory://" in capsys.readouterr().err
    url = f"sqlite:///{tmp_path / 'refcore.db'}"
    assert cli.main(["session", "--email", "not-an-email", "--end-all", "--database-url", url]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "e-mail" in captured.err


def test_session_says_on_stderr_when_the_token_expires(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'refcore.db'}"
    monkeypatch.setenv("REFCORE_SESSION_TTL_HOURS", "12")
    assert cli.main(["session", "--email", "dev@example.com", "--database-url", url]) == 0
    printed = capsys.readouterr()
    assert len(printed.out.splitlines()) == 1 and printed.out.startswith("sess_")
    assert "expires at" in printed.err and "REFCORE_SESSION_TTL_HOURS=12" in printed.err


@pytest.mark.parametrize("value", ["0", "-1", "twelve", "1.5", "12h", str(MAX_SESSION_TTL_HOURS + 1)])
def test_a_bad_session_lifetime_is_refused_naming_its_variable(value: str) -> None:
    with pytest.raises(SettingsError, match="REFCORE_SESSION_TTL_HOURS") as refused:
        Settings.from_env({"REFCORE_SESSION_TTL_HOURS": value})
    assert f"1 to {MAX_SESSION_TTL_HOURS}" in str(refused.value)


@pytest.mark.parametrize("value", [0, -5, True])
def test_settings_made_in_code_refuse_a_bad_session_lifetime_too(value: Any) -> None:
    with pytest.raises(SettingsError, match="session_ttl_hours"):
        Settings(session_ttl_hours=value)


def test_the_session_lifetime_setting_and_its_default() -> None:
    assert Settings.from_env({}).session_lifetime == timedelta(days=30)
    assert Settings.from_env({}).session_ttl_hours == 720
    assert Settings.from_env({"REFCORE_SESSION_TTL_HOURS": ""}).session_ttl_hours == 720  # unset
    assert Settings.from_env({"REFCORE_SESSION_TTL_HOURS": " 1 "}).session_lifetime == timedelta(hours=1)
    top = Settings.from_env({"REFCORE_SESSION_TTL_HOURS": str(MAX_SESSION_TTL_HOURS)})
    assert top.session_lifetime == timedelta(days=366)


@pytest.mark.parametrize("command", [["session", "--email", "dev@example.com"], ["serve"]])
def test_a_bad_session_lifetime_stops_the_command(
    command: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import uvicorn

    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: pytest.fail("the server must not start"))
    monkeypatch.setenv("REFCORE_SESSION_TTL_HOURS", "0")
    url = f"sqlite:///{tmp_path / 'refcore.db'}"
    assert cli.main([*command, "--database-url", url]) == 2
    printed = capsys.readouterr()
    assert printed.out == "" and "REFCORE_SESSION_TTL_HOURS" in printed.err


@pytest.mark.usefixtures("collector_restored")
def test_serve_judges_sessions_by_its_setting(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import uvicorn

    apps: list[Any] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: apps.append(app))
    monkeypatch.setenv("REFCORE_SESSION_TTL_HOURS", "3")
    assert cli.main(["serve", "--database-url", "memory://", "--print-session", "dev@example.com"]) == 0
    (app,) = apps
    assert app.state.runtime.session_lifetime == timedelta(hours=3)
    printed = capsys.readouterr()
    assert printed.out.startswith("sess_") and "REFCORE_SESSION_TTL_HOURS=3" in printed.err
