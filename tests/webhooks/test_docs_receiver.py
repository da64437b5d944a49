"""The receiver example of docs/webhooks.md verifies real deliveries, with the standard library only."""

from __future__ import annotations

import ast
import re
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from refcore.crypto import SecretBox
from refcore.models import DeliveryStatus
from refcore_http.webhooks.dispatcher import WebhookDispatcher
from tests.contract.scenario import World
from tests.webhooks.conftest import run
from tests.webhooks.pki import Pki
from tests.webhooks.receiver import Receiver, TlsThreadingServer
from tests.webhooks.world import configure, deliveries

DOC = Path(__file__).resolve().parents[2] / "docs" / "webhooks.md"
_BLOCK = re.compile(r"<!-- receiver-example -->\s*```python\n(.*?)```", re.DOTALL)


def _example_source() -> str:
    match = _BLOCK.search(DOC.read_text(encoding="utf-8"))
    assert match, "docs/webhooks.md must keep its receiver example after <!-- receiver-example -->"
    return match.group(1)


@pytest.fixture(scope="module")
def example() -> dict[str, Any]:
    namespace: dict[str, Any] = {"__name__": "docs_receiver_example"}
    exec(compile(_example_source(), str(DOC), "exec"), namespace)
    return namespace


def test_the_example_imports_only_the_standard_library() -> None:
    tree = ast.parse(_example_source())
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    }
    imported |= {
        node.module.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module
    }
    assert imported <= set(sys.stdlib_module_names), imported - set(sys.stdlib_module_names)


def test_the_example_accepts_a_real_delivery_and_refuses_tampering(
    example: dict[str, Any], world: World, box: SecretBox, receiver: Receiver, dispatcher: WebhookDispatcher
) -> None:
    secret = configure(world, box, receiver.url("/ok")).secret
    assert secret is not None
    world.add_affiliate()
    run(dispatcher.drain())
    [hit] = receiver.hits("/ok")
    verify, invalid = example["verify_webhook"], example["InvalidWebhook"]

    event = verify(secret, hit.headers, hit.body)

    assert event == hit.payload
    assert event["type"] == "affiliate.created"
    timestamp = int(hit.headers["X-Service-Webhook-Timestamp"])
    with pytest.raises(invalid):
        verify(secret, hit.headers, hit.body.replace(b"affiliate.created", b"affiliate.approved"))
    with pytest.raises(invalid):
        verify("whsec_someone-else", hit.headers, hit.body)
    with pytest.raises(invalid):
        verify(secret, hit.headers, hit.body, now=timestamp + 301)
    assert verify(secret, hit.headers, hit.body, now=timestamp + 299) == event


@pytest.fixture
def example_server(example: dict[str, Any], pki: Pki) -> Iterator[tuple[TlsThreadingServer, type]]:
    """The example's own handler, served over TLS on loopback (as behind a TLS proxy)."""
    handler = type(
        "Handler", (example["WebhookHandler"],), {"seen_ids": set(), "log_message": lambda *a: None}
    )
    server = TlsThreadingServer(("127.0.0.1", 0), handler, pki)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server, handler
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_the_example_handler_answers_204_to_real_deliveries(
    example_server: tuple[TlsThreadingServer, Any],
    world: World,
    box: SecretBox,
    dispatcher: WebhookDispatcher,
) -> None:
    server, handler = example_server
    port = server.server_address[1]
    handler.secret = configure(world, box, f"https://localhost:{port}/refcore-webhook").secret
    world.add_affiliate()
    world.referred_customer()

    run(dispatcher.drain())

    records = deliveries(world)
    assert len(records) == 2
    assert {(r.status, r.http_status) for r in records} == {(DeliveryStatus.SUCCEEDED, 204)}
    assert handler.seen_ids == {r.event_id for r in records}
