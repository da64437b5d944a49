"""Every refused delivery logs which verification check failed, and nothing secret.

docs/processor.md: the four verification failures (header, connection, signature, timestamp)
answer the same ``invalid_signature``; "the server log says which check failed (never a
secret)". Each refusal logs exactly one WARNING line on ``refcore_http.processor`` naming its
check, and the line holds neither the connection's signing secret, nor a signature value from
the header, nor the header as sent.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import timedelta

import httpx
import pytest

from refcore.clocks import ManualClock
from refcore.credentials import new_secret
from refcore.services.runtime import Runtime
from refcore_http.logs import REDACTED, redact_credentials
from tests.http.world import Client, expect, new_tenant
from tests.processor import payloads
from tests.processor.world import Installation, connect, new_installation, post_event

LOGGER = "refcore_http.processor"


@pytest.fixture
def warnings(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    """The processor logger's records, on caplog's handler put on that logger itself: caught even
    after a log configuration applied in this process (``refcore serve``'s) stopped the
    propagation of ``refcore_http`` or disabled loggers. Not propagated meanwhile, so that the
    root's caplog handler does not catch each record a second time."""
    logger = logging.getLogger(LOGGER)
    saved = (logger.propagate, logger.disabled, logger.level)
    logger.propagate, logger.disabled = False, False
    logger.setLevel(logging.DEBUG)
    logger.addHandler(caplog.handler)
    try:
        yield caplog
    finally:
        logger.removeHandler(caplog.handler)
        logger.propagate, logger.disabled = saved[0], saved[1]
        logger.setLevel(saved[2])


def _body(installation: Installation, clock: ManualClock, **changes: object) -> bytes:
    charge = payloads.charge(charge_id="ch_logged", amount=100, created=clock.now())
    event = payloads.event(
        "charge.succeeded", charge, account=installation.account, livemode=False, created=clock.now()
    )
    event.update(changes)
    for key in [k for k, v in changes.items() if v is None]:
        del event[key]
    return payloads.encode(event)


def _refusal_line(warnings: pytest.LogCaptureFixture, response: httpx.Response) -> str:
    """The one line the refusal logged, after checking the answer and the line's level."""
    expect(response, 400, "invalid_signature")
    records = [r for r in warnings.records if r.name == LOGGER]
    assert [r.levelno for r in records] == [logging.WARNING], [r.getMessage() for r in records]
    line = records[0].getMessage()
    assert line.startswith("processor event refused: ")
    return line


def _holds_nothing_secret(line: str, installation: Installation, header: str | None) -> None:
    assert installation.secret not in line
    assert "whsec_" not in line
    if header:
        assert header not in line
        for item in header.split(","):
            key, _, value = item.strip().partition("=")
            if key != "t" and len(value) >= 2:
                assert value not in line, (key, line)


def test_a_wrong_signature_logs_that_no_signature_matches(
    client: Client, clock: ManualClock, installation: Installation, warnings: pytest.LogCaptureFixture
) -> None:
    body = _body(installation, clock)
    header = payloads.sign(body, "whsec_guessedJf8cVbNqM2fGxK3nP7rTzW", clock.now())
    line = _refusal_line(warnings, post_event(client, body, header))
    assert "no v1 signature matches" in line
    assert repr(installation.account) in line and "test" in line
    _holds_nothing_secret(line, installation, header)


def test_a_signature_no_connection_of_a_shared_account_verifies_logs_how_many_were_tried(
    client: Client,
    runtime: Runtime,
    clock: ManualClock,
    installation: Installation,
    warnings: pytest.LogCaptureFixture,
) -> None:
    rival = new_tenant(client, runtime, "rival")
    shared = Installation(
        account=installation.account, secret="whsec_rivalsJf8cVbNqM2fGxK3nP7rTzW", livemode=False
    )
    connect(client, rival, shared)
    body = _body(installation, clock)
    header = payloads.sign(body, "whsec_guessedJf8cVbNqM2fGxK3nP7rTzW", clock.now())
    line = _refusal_line(warnings, post_event(client, body, header))
    assert "no v1 signature matches the webhook secret of any of its 2 connections" in line
    _holds_nothing_secret(line, installation, header)
    _holds_nothing_secret(line, shared, header)


def test_a_body_changed_after_signing_logs_that_no_signature_matches(
    client: Client, clock: ManualClock, installation: Installation, warnings: pytest.LogCaptureFixture
) -> None:
    body = _body(installation, clock)
    header = payloads.sign(body, installation.secret, clock.now())
    altered = body.replace(b'"amount": 100', b'"amount": 900', 1)
    line = _refusal_line(warnings, post_event(client, altered, header))
    assert "no v1 signature matches" in line
    _holds_nothing_secret(line, installation, header)


@pytest.mark.parametrize(
    ("offset", "direction"),
    [(timedelta(minutes=-5, seconds=-1), "before"), (timedelta(minutes=5, seconds=1), "after")],
)
def test_a_timestamp_outside_the_tolerance_logs_the_tolerance(
    client: Client,
    clock: ManualClock,
    installation: Installation,
    warnings: pytest.LogCaptureFixture,
    offset: timedelta,
    direction: str,
) -> None:
    """A correctly signed delivery, too old or too new: the check that failed is the clock's."""
    body = _body(installation, clock)
    header = payloads.sign(body, installation.secret, clock.now() + offset)
    line = _refusal_line(warnings, post_event(client, body, header))
    assert f"301 s {direction} the server's clock, outside the 300 s tolerance" in line
    _holds_nothing_secret(line, installation, header)


@pytest.mark.parametrize("header", [None, ""])
def test_a_missing_header_logs_that_it_is_missing(
    client: Client,
    clock: ManualClock,
    installation: Installation,
    warnings: pytest.LogCaptureFixture,
    header: str | None,
) -> None:
    line = _refusal_line(warnings, post_event(client, _body(installation, clock), header))
    assert "Stripe-Signature header is missing" in line
    _holds_nothing_secret(line, installation, header)


@pytest.mark.parametrize(
    ("header", "part"),
    [
        ("v1=5257a869e7ecebeda32affa62cdca3fa51cad7e77a0e56ff536d0ce8e108d8bd", "no single t=<unix seconds>"),
        ("t=notanumber,v1=5257a869e7ecebeda32affa62cdca3fa51cad7e77a0e56ff", "no single t=<unix seconds>"),
        ("t=1767225600", "no v1=<signature>"),
        ("t=1767225600,v0=6ffbb59b2300aae63f272406069a9788598b792a944a07aba8", "no v1=<signature>"),
        ("t=1767225600,v1=", "no v1=<signature>"),
        ("garbled-beyond-recognition-7ecebeda32affa62", "no single t=<unix seconds>"),
    ],
)
def test_a_garbled_header_logs_that_it_is_malformed(
    client: Client,
    clock: ManualClock,
    installation: Installation,
    warnings: pytest.LogCaptureFixture,
    header: str,
    part: str,
) -> None:
    line = _refusal_line(warnings, post_event(client, _body(installation, clock), header))
    assert f"Stripe-Signature header is malformed: it has {part}" in line
    _holds_nothing_secret(line, installation, header)


def test_an_account_without_an_active_connection_logs_that(
    client: Client, clock: ManualClock, installation: Installation, warnings: pytest.LogCaptureFixture
) -> None:
    stranger = new_installation()
    body = _body(stranger, clock)
    header = payloads.sign(body, stranger.secret, clock.now())
    line = _refusal_line(warnings, post_event(client, body, header))
    assert "no active connection" in line and repr(stranger.account) in line
    _holds_nothing_secret(line, stranger, header)
    _holds_nothing_secret(line, installation, header)


def test_an_account_that_holds_a_credential_is_logged_redacted(
    client: Client, clock: ManualClock, installation: Installation, warnings: pytest.LogCaptureFixture
) -> None:
    """The route needs no key, and the refusal quotes the unverified ``account``: a session token
    sent there was written to the log whole, the redaction sitting on ``refcore_http`` alone,
    whose filters a child logger's records never meet (probe AN)."""
    redact_credentials()
    session = new_secret("sess_")
    body = _body(installation, clock, account=session)
    line = _refusal_line(
        warnings, post_event(client, body, payloads.sign(body, installation.secret, clock.now()))
    )
    assert "no active connection" in line and REDACTED in line
    assert session.removeprefix("sess_") not in line


@pytest.mark.parametrize("missing", ["account", "livemode"])
def test_an_event_naming_no_account_logs_that(
    client: Client,
    clock: ManualClock,
    installation: Installation,
    warnings: pytest.LogCaptureFixture,
    missing: str,
) -> None:
    body = _body(installation, clock, **{missing: None})
    header = payloads.sign(body, installation.secret, clock.now())
    line = _refusal_line(warnings, post_event(client, body, header))
    assert "names no account and livemode" in line
    _holds_nothing_secret(line, installation, header)


def test_an_account_with_a_control_character_cannot_forge_a_log_line(
    client: Client, clock: ManualClock, installation: Installation, warnings: pytest.LogCaptureFixture
) -> None:
    body = _body(installation, clock, account="acct_x\nprocessor event accepted")
    header = payloads.sign(body, installation.secret, clock.now())
    line = _refusal_line(warnings, post_event(client, body, header))
    assert "\n" not in line


def test_a_verified_delivery_logs_no_refusal(
    client: Client, clock: ManualClock, installation: Installation, warnings: pytest.LogCaptureFixture
) -> None:
    body = _body(installation, clock)
    expect(post_event(client, body, payloads.sign(body, installation.secret, clock.now())), 200)
    assert [r for r in warnings.records if r.name == LOGGER and r.levelno >= logging.WARNING] == []


def test_an_unverified_account_of_a_megabyte_logs_its_first_64_characters_and_its_length(
    client: Client, clock: ManualClock, installation: Installation, warnings: pytest.LogCaptureFixture
) -> None:
    """Anyone may send an event, and the account is logged before anything is verified: one of
    a megabyte had written a megabyte of log a request (probe V)."""
    account = "acct_" + "A" * 1_000_000
    body = _body(installation, clock, account=account)
    header = payloads.sign(body, installation.secret, clock.now())
    line = _refusal_line(warnings, post_event(client, body, header))
    assert "no active connection" in line
    assert repr(f"{account[:64]}… (1000005 characters)") in line
    assert len(line) < 300
