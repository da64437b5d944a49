"""The signing secret never appears in logs, error messages or stored rows in plain text."""

from __future__ import annotations

import logging

import attrs
import pytest

from refcore.crypto import SecretBox
from refcore.errors import RefcoreError
from refcore.services import webhooks as webhook_service
from refcore_http.webhooks.dispatcher import WebhookDispatcher, logged_url
from refcore_memstore import MemoryDatabase
from tests.contract.scenario import World
from tests.webhooks.conftest import SECRET_KEY, run
from tests.webhooks.receiver import Receiver
from tests.webhooks.world import configure, deliveries, produce_every_event, stored_endpoint


def _secret_parts(secret: str) -> list[str]:
    """The secret and its random part, which must not leak on its own either."""
    return [secret, secret.removeprefix("whsec_")]


def test_the_secret_is_in_no_log_line_no_error_and_no_stored_row(
    world: World,
    box: SecretBox,
    receiver: Receiver,
    dispatcher: WebhookDispatcher,
    database: MemoryDatabase,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    created = configure(world, box, receiver.url("/ok"))
    assert created.secret is not None
    rotated = webhook_service.rotate_secret(world.rt, world.session, box, world.app.id)
    assert rotated.secret is not None
    receiver.secret = rotated.secret
    produce_every_event(world)
    run(dispatcher.drain())  # successes
    webhook_service.configure_endpoint(
        world.rt, world.session, box, world.app.id, {"url": receiver.url("/error")}
    )
    world.add_affiliate()
    run(dispatcher.drain())  # a failure
    errors: list[str] = []
    for bad in ({"url": "http://x.example"}, {"url": receiver.url("/ok"), "events": ["nope"]}):
        with pytest.raises(RefcoreError) as refused:
            webhook_service.configure_endpoint(world.rt, world.session, box, world.app.id, bad)
        errors.append(f"{refused.value} {refused.value!r}")

    endpoint = stored_endpoint(world)
    assert endpoint is not None
    stored_fields = [str(value) for value in attrs.asdict(endpoint).values()]
    everything_stored = repr(dict(database.tables))
    assert deliveries(world), "the scenario must have produced delivery records"
    assert len(caplog.records) > 0, "the scenario must have logged"
    for secret in (created.secret, rotated.secret):
        for part in _secret_parts(secret):
            assert part not in caplog.text
            assert all(part not in text for text in errors)
            assert all(part not in value for value in stored_fields)
            assert part not in everything_stored
            assert part not in repr(created) and part not in repr(rotated)
    assert SECRET_KEY not in caplog.text
    assert SECRET_KEY not in everything_stored


def test_the_stored_ciphertext_opens_only_with_the_server_key(world: World, box: SecretBox) -> None:
    created = configure(world, box, "https://hooks.example.com/x")
    endpoint = stored_endpoint(world)
    assert endpoint is not None and created.secret is not None

    assert endpoint.secret_ciphertext.startswith("v1.")
    assert webhook_service.signing_secret(box, endpoint) == created.secret
    assert webhook_service.signing_secret(SecretBox(SECRET_KEY), endpoint) == created.secret


def test_a_token_in_the_endpoint_query_reaches_the_receiver_but_not_the_log(
    world: World,
    box: SecretBox,
    receiver: Receiver,
    dispatcher: WebhookDispatcher,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Receivers often authenticate by a token in the query string: the delivery sends the URL
    whole and the Developer's delivery record keeps it, but the server log shows ``?…``."""
    caplog.set_level(logging.INFO)
    token = "query-token-0123456789"
    url = receiver.url(f"/ok?token={token}")
    configure(world, box, url)
    world.add_affiliate()
    run(dispatcher.drain())

    assert [hit.path for hit in receiver.received] == [f"/ok?token={token}"]
    assert [delivery.url for delivery in deliveries(world)] == [url]
    # refcore's own lines; httpx's INFO line of the request reaches no handler under `refcore
    # serve`, which configures only uvicorn's and refcore's loggers (refcore_http.logs).
    refcore_lines = [record.getMessage() for record in caplog.records if record.name.startswith("refcore")]
    assert any(receiver.url("/…?…") in line for line in refcore_lines)
    assert not any(token in line for line in refcore_lines)


@pytest.mark.parametrize(
    ("url", "logged"),
    [
        ("https://example.com/hooks/key_app_0123456789abcdefghijklmnop", "https://example.com/…"),
        ("https://hooks.example.com/services/T0/B0/XXXXXXXX", "https://hooks.example.com/…"),
        ("https://user:pass@example.com:8443/h?token=x#frag", "https://example.com:8443/…?…"),
        ("https://[2001:db8::1]/x", "https://[2001:db8::1]/…"),
        ("https://example.com/", "https://example.com/"),
        ("https://example.com", "https://example.com"),
    ],
)
def test_the_log_names_a_receiver_by_its_host_alone(url: str, logged: str) -> None:
    """Probe Q: a key in the endpoint's path reached the server log whole; so would a chat
    service's hook token, or a password before the host. The delivery record keeps the URL."""
    assert logged_url(url) == logged
