"""``refcore reseal-secrets``, end to end on an SQLite file: secrets stored by a server under key A
are resealed by the command run with key B and fallback A, after which a server with key B alone
signs webhook deliveries and verifies processor events with the very secrets first created. The
command prints counts and record IDs only: no key appears in anything it writes."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path

import pytest
from attrs import define, field

from refcore.clocks import ManualClock
from refcore_http import cli
from refcore_http.app import create_app
from refcore_http.settings import Settings
from refcore_http.store import OpenStore, open_store
from refcore_http.webhooks.delivery import Outcome
from refcore_http.webhooks.dispatcher import WebhookDispatcher
from refcore_http.webhooks.keys import DEVELOPMENT_SECRET_KEY, secret_box
from refcore_http.webhooks.signing import EVENT_HEADER, SIGNATURE_HEADER, TIMESTAMP_HEADER, signature
from tests.http.world import Client, Tenant, expect, new_tenant
from tests.processor.world import CONNECT_URL, Installation, connect, deliver, new_installation

KEY_A = "reseal-cli-key-A-0123456789abcdefghijkl"
KEY_B = "reseal-cli-key-B-0123456789abcdefghijkl"
KEY_C = "reseal-cli-key-C-0123456789abcdefghijkl"
#: What ``os.environ`` holds for a variable set to bytes that are not UTF-8.
NOT_UTF_8_KEY = "reseal-cli-key-\udcff\udcfe-0123456789abcdefghijkl"
EVERY_KEY = (KEY_A, KEY_B, KEY_C)


@define
class Recorded:
    """A webhook deliverer that sends nothing: it keeps each request and answers ``204``."""

    requests: list[tuple[bytes, dict[str, str]]] = field(factory=list)

    async def deliver(self, url: str, body: bytes, headers: Mapping[str, str]) -> Outcome:
        self.requests.append((body, dict(headers)))
        return Outcome(succeeded=True, duration_ms=0, http_status=204)


@define
class Stored:
    """What a server under key A created: an App with an endpoint and a Test processor connection."""

    url: str
    clock: ManualClock
    tenant: Tenant
    endpoint_secret: str
    installation: Installation


def _settings(url: str, key: str, fallback: str | None = None) -> Settings:
    return Settings(
        database_url=url, secret_key=key, secret_key_fallback=fallback, processor_connect_url=CONNECT_URL
    )


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(datetime.now(UTC).replace(microsecond=0))


@pytest.fixture
def opened(tmp_path: Path, clock: ManualClock) -> Iterator[OpenStore]:
    store = open_store(f"sqlite:///{tmp_path / 'refcore.db'}", clock=clock)
    store.migrate()
    try:
        yield store
    finally:
        store.dispose()


@pytest.fixture
def stored(opened: OpenStore, clock: ManualClock, tmp_path: Path) -> Stored:
    url = f"sqlite:///{tmp_path / 'refcore.db'}"
    client = Client(create_app(opened.runtime, _settings(url, KEY_A)))
    tenant = new_tenant(client, opened.runtime, "acme")
    endpoint = expect(
        client.request(
            "PUT",
            f"/v1/apps/{tenant.app_id}/webhook",
            tenant.session,
            json={"url": "https://hooks.example.com/refcore"},
        ),
        201,
    )
    installation = new_installation()
    connect(client, tenant, installation)
    return Stored(url, clock, tenant, endpoint["secret"], installation)


def _reseal(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    url: str,
    key: str,
    fallback: str | None,
) -> tuple[int, str, str]:
    monkeypatch.setenv("REFCORE_SECRET_KEY", key)
    if fallback is None:
        monkeypatch.delenv("REFCORE_SECRET_KEY_FALLBACK", raising=False)
    else:
        monkeypatch.setenv("REFCORE_SECRET_KEY_FALLBACK", fallback)
    status = cli.main(["reseal-secrets", "--database-url", url])
    printed = capsys.readouterr()
    for key_text in EVERY_KEY:
        assert key_text not in printed.out and key_text not in printed.err
    return status, printed.out, printed.err


def _webhook_signature_checks_with(
    opened: OpenStore, stored: Stored, settings: Settings, secret: str
) -> bool:
    """Send ``webhook.test`` and deliver what is waiting as a server with ``settings`` would:
    whether every request it signed (the ping among them) verifies with ``secret``."""
    client = Client(create_app(opened.runtime, settings))
    expect(client.post(f"/v1/apps/{stored.tenant.app_id}/webhook/test", stored.tenant.session), 202)
    recorder = Recorded()
    dispatcher = WebhookDispatcher(opened.runtime, opened.outbox, secret_box(settings), recorder)  # type: ignore[arg-type]
    asyncio.run(dispatcher.drain())
    assert "webhook.test" in {headers[EVENT_HEADER] for _body, headers in recorder.requests}
    return all(
        headers[SIGNATURE_HEADER] == signature(secret, int(headers[TIMESTAMP_HEADER]), body)
        for body, headers in recorder.requests
    )


def _processor_event_status(opened: OpenStore, stored: Stored, settings: Settings) -> int:
    client = Client(create_app(opened.runtime, settings))
    obj = {"id": "obj_1", "object": "customer", "metadata": {}}
    return deliver(client, stored.installation, "customer.created", obj, at=stored.clock.now()).status_code


def test_after_resealing_with_key_b_and_fallback_a_key_b_alone_opens_the_original_secrets(
    opened: OpenStore, stored: Stored, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    key_b_alone = _settings(stored.url, KEY_B)
    # Before: key B alone cannot open what key A sealed.
    assert _processor_event_status(opened, stored, key_b_alone) == 500

    status, out, err = _reseal(monkeypatch, capsys, stored.url, KEY_B, KEY_A)
    assert (status, out, err) == (0, "resealed 2, already current 0, unopenable 0, changed meanwhile 0\n", "")

    assert _webhook_signature_checks_with(opened, stored, key_b_alone, stored.endpoint_secret)
    assert _processor_event_status(opened, stored, key_b_alone) == 200

    # Idempotent: a second run (and a check with key B alone) finds everything current.
    assert _reseal(monkeypatch, capsys, stored.url, KEY_B, KEY_A)[:2] == (
        0,
        "resealed 0, already current 2, unopenable 0, changed meanwhile 0\n",
    )
    assert _reseal(monkeypatch, capsys, stored.url, KEY_B, None)[:2] == (
        0,
        "resealed 0, already current 2, unopenable 0, changed meanwhile 0\n",
    )


def test_secrets_neither_key_opens_are_named_by_id_and_the_command_exits_1(
    opened: OpenStore, stored: Stored, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, err = _reseal(monkeypatch, capsys, stored.url, KEY_C, KEY_B)
    assert status == 1
    assert out == "resealed 0, already current 0, unopenable 2, changed meanwhile 0\n"
    lines = err.splitlines()
    assert len(lines) == 2
    assert (
        lines[0].startswith("refcore: webhook endpoint whep_") and "REFCORE_SECRET_KEY_FALLBACK" in lines[0]
    )
    assert lines[1].startswith("refcore: processor connection pcn_")
    assert stored.endpoint_secret not in err and stored.installation.secret not in err
    # Without a fallback, the check names the one key it tried.
    status, out, err = _reseal(monkeypatch, capsys, stored.url, KEY_C, None)
    assert status == 1 and out == "resealed 0, already current 0, unopenable 2, changed meanwhile 0\n"
    tried = [line.rpartition(": ")[2] for line in err.splitlines()]
    assert tried == ["its secret does not open with REFCORE_SECRET_KEY"] * 2
    # Nothing was written: key A still opens both.
    assert _processor_event_status(opened, stored, _settings(stored.url, KEY_A)) == 200


@pytest.mark.parametrize(
    ("env", "says"),
    [
        (
            {"REFCORE_SECRET_KEY_FALLBACK": KEY_A},
            "REFCORE_SECRET_KEY_FALLBACK is set without REFCORE_SECRET_KEY",
        ),
        ({"REFCORE_SECRET_KEY": KEY_A, "REFCORE_SECRET_KEY_FALLBACK": KEY_A}, "must differ"),
        ({"REFCORE_SECRET_KEY": KEY_A, "REFCORE_SECRET_KEY_FALLBACK": "short"}, "at least 32"),
        ({}, "REFCORE_SECRET_KEY is required"),
        # Probe R: a swap that left the development key as the key would seal under it.
        ({"REFCORE_SECRET_KEY": DEVELOPMENT_SECRET_KEY}, "public development key"),
        # Probe R: bytes that are not UTF-8 (lone surrogates in Python) had raised a traceback
        # and exited 1, the code for "a secret opens under neither key".
        ({"REFCORE_SECRET_KEY": KEY_A, "REFCORE_SECRET_KEY_FALLBACK": NOT_UTF_8_KEY}, "not UTF-8"),
        ({"REFCORE_SECRET_KEY": NOT_UTF_8_KEY}, "REFCORE_SECRET_KEY holds bytes that are not UTF-8"),
    ],
)
def test_the_command_refuses_bad_or_missing_keys_in_one_line_quoting_no_key(
    env: dict[str, str],
    says: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for name in ("REFCORE_SECRET_KEY", "REFCORE_SECRET_KEY_FALLBACK"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    database = tmp_path / "untouched.db"
    assert cli.main(["reseal-secrets", "--database-url", f"sqlite:///{database}"]) == 2
    printed = capsys.readouterr()
    assert printed.out == "" and printed.err.count("\n") == 1 and says in printed.err
    assert KEY_A not in printed.err and "short" not in printed.err
    assert not database.exists()  # refused before the database was opened


def test_the_memory_store_has_nothing_to_reseal(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, err = _reseal(monkeypatch, capsys, "memory://", KEY_B, KEY_A)
    assert (status, out) == (2, "") and "memory://" in err


def test_a_database_that_lacks_migrations_is_refused_and_left_as_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "empty.db"
    empty.touch()  # an empty file is an SQLite database without tables
    url = f"sqlite:///{empty}"
    status, out, err = _reseal(monkeypatch, capsys, url, KEY_B, KEY_A)
    assert (status, out) == (2, "") and "run `refcore migrate` first" in err
    store = open_store(url)
    try:
        assert store.schema_is_behind()
    finally:
        store.dispose()


def test_a_path_with_no_database_file_is_refused_and_no_file_is_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """SQLite makes a missing file at the first connection: a mistyped path had left an empty
    database behind before the command said it lacked migrations."""
    mistyped = tmp_path / "refcroe.db"
    status, out, err = _reseal(monkeypatch, capsys, f"sqlite:///{mistyped}", KEY_B, KEY_A)
    assert (status, out) == (2, "")
    named = f"refcore: sqlite+pysqlite:///{mistyped} names no existing database file"
    assert err == f"{named}; name the servers' database\n"
    assert not mistyped.exists()
