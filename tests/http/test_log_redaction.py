"""No log line shows a credential (interface 5.3), not even one a client wrongly put in a URL.

uvicorn's access line holds the request's path and query as sent; ``refcore serve`` puts
:class:`~refcore_http.logs.CredentialRedaction` on the loggers such lines go to, so that a
credential there, and the value of a query parameter named like a secret, read ``[redacted]``,
while an ordinary query (``?limit=10&starting_after=…``) stays as sent.
"""

from __future__ import annotations

import io
import logging
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from uvicorn.logging import AccessFormatter

import refcore
import refcore_http
import refcore_memstore
import refcore_sqlstore
from refcore.credentials import new_secret
from refcore.services import join, processor_connection, tenancy, webhooks
from refcore_http import cli
from refcore_http.logs import CREDENTIAL_REDACTION, REDACTED, REDACTED_LOGGERS, redact_credentials

#: uvicorn's access line, as ``uvicorn.protocols.http.*_impl`` logs it.
ACCESS_FORMAT = '%s - "%s %s HTTP/%s" %d'

SECRET = "Zm9vYmFyYmF6cXV4cXV1eGNvcmdlZ3JhdWx0Z2FycGx5"
LIVE_KEY = f"key_app_{SECRET}"

#: Every kind of credential refcore issues, with the prefix its own code gives it.
ISSUED_PREFIXES = sorted(
    {*tenancy._KEY_PREFIXES.values(), "sess_", join.TOKEN_PREFIX, webhooks.SECRET_PREFIX}
    | {processor_connection._SECRET_PREFIX}
)


def access_line(full_path: str, method: str = "GET", status: int = 401) -> str:
    """The line uvicorn's access formatter writes for a record that went through the filter."""
    record = logging.LogRecord(
        "uvicorn.access",
        logging.INFO,
        __file__,
        1,
        ACCESS_FORMAT,
        ("203.0.113.7:50000", method, full_path, "1.1", status),
        None,
    )
    assert CREDENTIAL_REDACTION.filter(record)
    return AccessFormatter('%(client_addr)s - "%(request_line)s" %(status_code)s', use_colors=False).format(
        record
    )


@pytest.mark.parametrize(
    ("sent", "logged"),
    [
        (f"/v1/transactions?api_key={LIVE_KEY}", "/v1/transactions?api_key=[redacted]"),
        (
            f"/v1/clicks?limit=10&key={LIVE_KEY}&environment=live",
            "/v1/clicks?limit=10&key=[redacted]&environment=live",
        ),
        (f"/v1/clicks?q=Bearer+{LIVE_KEY}", "/v1/clicks?q=[redacted]"),
        (f"/v1/clicks?{LIVE_KEY}", "/v1/clicks?[redacted]"),
        (f"/v1/clicks?api%5Fkey=key%5Fapp%5F{SECRET}", "/v1/clicks?api%5Fkey=[redacted]"),
        (f"/v1/clicks?x=key%5Fapp%5F{SECRET}", "/v1/clicks?x=[redacted]"),
        (f"/v1/clicks?access_token={SECRET}", "/v1/clicks?access_token=[redacted]"),
        (f"/v1/clicks?Authorization=Bearer%20{SECRET}", "/v1/clicks?Authorization=[redacted]"),
        (f"/v1/api-keys/{LIVE_KEY}", "/v1/api-keys/[redacted]"),
        (f"/v1/api-keys/Bearer%20{LIVE_KEY}/x", "/v1/api-keys/[redacted]/x"),
        (f"/join/acme/confirm?token=join_{SECRET}", "/join/acme/confirm?token=[redacted]"),
        (f"/v1/join/acme/confirm?join_{SECRET}=", "/v1/join/acme/confirm?[redacted]"),
        # Glued to a stray character, a credential is still one (probe Q).
        (f"/v1/clicks/x{LIVE_KEY}", "/v1/clicks/[redacted]"),
        (f"/v1/clicks?zz{LIVE_KEY}=1", "/v1/clicks?[redacted]"),
        (f"/v1/clicks?program_id=a{LIVE_KEY}", "/v1/clicks?program_id=[redacted]"),
    ],
)
def test_a_credential_in_the_url_never_reaches_the_access_line(sent: str, logged: str) -> None:
    line = access_line(sent)
    assert SECRET not in line
    assert line == f'203.0.113.7:50000 - "GET {logged} HTTP/1.1" 401 Unauthorized'


@pytest.mark.parametrize("prefix", ISSUED_PREFIXES)
def test_every_kind_of_credential_refcore_issues_is_redacted(prefix: str) -> None:
    credential = new_secret(prefix)  # as the services make them
    secret = credential.removeprefix(prefix)
    for sent in (f"/v1/clicks?anything={credential}", f"/v1/clicks/{credential}", f"/v1/x?{credential}"):
        assert secret not in access_line(sent), sent


@pytest.mark.parametrize(
    "sent",
    [
        "/v1/clicks",
        "/v1/transactions?limit=10&starting_after=txn_01hzy3k8w0d4xq5r2m7n9p6c1b",
        "/v1/api-keys/akey_01hzy3k8w0d4xq5r2m7n9p6c1b",  # an API key's ID, no credential
        "/v1/api-keys?app_id=app_01hzy3k8w0d4xq5r2m7n9p6c1b&limit=2",
        "/v1/apps/app_01/overview?from=2026-01-01&to=2026-02-01",
        "/v1/commissions?environment=test&program_affiliate_id=aff_01&status=pending",
        "/v1/join/summer-sale",
        "/v1/clicks?token=",  # nothing to hide
    ],
)
def test_an_ordinary_url_stays_readable(sent: str) -> None:
    assert access_line(sent) == f'203.0.113.7:50000 - "GET {sent} HTTP/1.1" 401 Unauthorized'


@pytest.fixture
def loggers_restored() -> Iterator[None]:
    """``serve`` configures uvicorn's and refcore's loggers for the whole process; the tests
    after this one get them back as they were."""
    names = ("uvicorn", "uvicorn.error", "uvicorn.access", "uvicorn.asgi", "refcore", "refcore_http")
    touched = [logging.getLogger(name) for name in names]
    saved = [
        (logger, logger.handlers[:], logger.filters[:], logger.level, logger.propagate, logger.disabled)
        for logger in touched
    ]
    yield
    for logger, handlers, filters, level, propagate, disabled in saved:
        logger.handlers[:] = handlers
        logger.filters[:] = filters
        logger.setLevel(level)
        logger.propagate, logger.disabled = propagate, disabled


def serve_requests(app: Any, options: dict[str, Any], targets: list[tuple[str, str]]) -> None:
    """Run ``app`` under uvicorn with ``options`` (what ``serve`` gave ``uvicorn.run``) on a free
    port, send it ``targets`` (method, path with query) and stop it."""
    config = uvicorn.Config(app, **{**options, "port": 0})  # configures logging, as run() does
    server = uvicorn.Server(config)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]})
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not server.started:
            assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.01)
        with httpx.Client(base_url=f"http://127.0.0.1:{port}") as http:
            for method, target in targets:
                http.request(method, target)
    finally:
        server.should_exit = True
        thread.join(30)
        listener.close()


@pytest.mark.usefixtures("collector_restored", "loggers_restored")
def test_refcore_serve_writes_access_lines_without_the_credentials_clients_sent(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Through a real uvicorn server, with the options and log configuration ``serve`` gives it."""
    targets = [
        ("GET", f"/v1/transactions?api_key={LIVE_KEY}"),
        ("DELETE", f"/v1/api-keys/{LIVE_KEY}"),
        ("GET", f"/join/acme/confirm?token=join_{SECRET}"),
        ("GET", f"/v1/organizations?session=sess_{SECRET}"),
        ("GET", "/v1/transactions?limit=10&starting_after=txn_01hzy3k8w0d4xq5r2m7n9p6c1b"),
    ]
    monkeypatch.setattr(uvicorn, "run", lambda app, **options: serve_requests(app, options, targets))
    assert cli.main(["serve", "--database-url", "memory://", "--log-level", "info"]) == 0
    captured = capsys.readouterr()
    lines = [line for line in captured.out.splitlines() if '"' in line]
    assert SECRET not in captured.out + captured.err
    assert [line.split('"')[1] for line in lines] == [
        "GET /v1/transactions?api_key=[redacted] HTTP/1.1",
        "DELETE /v1/api-keys/[redacted] HTTP/1.1",
        "GET /join/acme/confirm?token=[redacted] HTTP/1.1",
        "GET /v1/organizations?session=[redacted] HTTP/1.1",
        "GET /v1/transactions?limit=10&starting_after=txn_01hzy3k8w0d4xq5r2m7n9p6c1b HTTP/1.1",
    ]


@pytest.mark.usefixtures("loggers_restored")
def test_the_redaction_outlives_any_log_configuration(caplog: pytest.LogCaptureFixture) -> None:
    """It sits on the loggers, whose filters ``dictConfig`` keeps when it replaces their
    handlers: a log configuration of the operator's own cannot drop it."""
    import logging.config

    redact_credentials()
    redact_credentials()  # once is enough, twice adds nothing
    logging.config.dictConfig(
        {
            "version": 1,
            "disable_existing_loggers": False,
            "loggers": {
                name: {"level": "INFO", "propagate": True, "handlers": []} for name in REDACTED_LOGGERS
            },
        }
    )
    for name in REDACTED_LOGGERS:
        assert logging.getLogger(name).filters.count(CREDENTIAL_REDACTION) == 1
    with caplog.at_level(logging.INFO):
        logging.getLogger("uvicorn.access").info(
            ACCESS_FORMAT, "c", "GET", f"/v1/x?api_key={LIVE_KEY}", "1.1", 401
        )
        # uvicorn's WebSocket lines (once a WebSocket library is installed) and refcore_http's
        # unexpected errors carry the path too.
        logging.getLogger("uvicorn.error").info('%s - "WebSocket %s" 403', "c", f"/v1/x?token={SECRET}")
        logging.getLogger("refcore_http").error("Unhandled error in %s %s", "GET", f"/v1/api-keys/{LIVE_KEY}")
    messages = [record.getMessage() for record in caplog.records]
    assert messages == [
        f'c - "GET /v1/x?api_key={REDACTED} HTTP/1.1" 401',
        f'c - "WebSocket /v1/x?token={REDACTED}" 403',
        f"Unhandled error in GET /v1/api-keys/{REDACTED}",
    ]


def _written(log: Callable[[logging.Logger], None]) -> str:
    """What a plain handler on ``refcore_http`` writes for the records ``log`` makes."""
    redact_credentials()
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger = logging.getLogger("refcore_http")
    logger.addHandler(handler)
    try:
        log(logger)
    finally:
        logger.removeHandler(handler)
    return stream.getvalue()


@pytest.mark.parametrize("prefix", ISSUED_PREFIXES)
def test_a_traceback_never_shows_a_credential(prefix: str) -> None:
    """An exception's message may quote what it was given: the traceback a handler writes
    for it is redacted like the line above it."""
    credential = new_secret(prefix)

    def log(logger: logging.Logger) -> None:
        try:
            raise ValueError(f"no row for {credential}")
        except ValueError:
            logger.exception("Unhandled error in %s %s", "POST", "/v1/transactions")

    written = _written(log)
    assert credential.removeprefix(prefix) not in written
    assert f"ValueError: no row for {REDACTED}" in written
    assert written.startswith("Unhandled error in POST /v1/transactions\nTraceback")


def test_free_text_keeps_the_words_that_only_look_like_a_prefix() -> None:
    def log(logger: logging.Logger) -> None:
        logger.error(f"pre-formatted {LIVE_KEY}")  # a message logged without arguments
        logger.error(f"glued x{LIVE_KEY}")
        logger.error("column key_digest, parameter join_token, setting sess_max_age_seconds")

    assert _written(log).splitlines() == [
        f"pre-formatted {REDACTED}",
        f"glued x{REDACTED}",
        "column key_digest, parameter join_token, setting sess_max_age_seconds",
    ]


def test_every_logger_refcore_asks_for_is_redacted() -> None:
    """Filters apply to the records of their own logger only, not of its children: each logger the
    source names must carry the redaction itself (probe AN found ``refcore_http.processor``'s
    line quoting an unverified ``account`` whole)."""
    packages = (refcore, refcore_http, refcore_memstore, refcore_sqlstore)
    named = {
        match
        for package in packages
        for path in Path(package.__file__ or "").parent.rglob("*.py")
        for match in re.findall(r"getLogger\(\s*\"([^\"]+)\"", path.read_text(encoding="utf-8"))
    }
    assert "refcore_http.processor" in named  # the scan reads the source it should
    assert named <= set(REDACTED_LOGGERS)
