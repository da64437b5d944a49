"""The SSRF guard of decisions 7: private and local destinations are refused after resolution,
before any connection, unless ``WEBHOOK_ALLOW_PRIVATE_NETWORKS=true``; the connection goes to
the address that was checked."""

from __future__ import annotations

from ipaddress import ip_address

import httpcore
import pytest

from refcore.crypto import SecretBox
from refcore.errors import ValidationError
from refcore.models import DeliveryStatus
from refcore.services import webhooks as webhook_service
from refcore_http.webhooks.delivery import Deliverer
from refcore_http.webhooks.dispatcher import WebhookDispatcher
from refcore_http.webhooks.ssrf import blocked_reason, parse_numeric_host
from refcore_memstore import MemoryDatabase, MemoryOutbox
from tests.contract.scenario import World
from tests.webhooks.conftest import run
from tests.webhooks.pki import Pki
from tests.webhooks.receiver import Receiver
from tests.webhooks.spies import RecordingBackend, RecordingResolver, ScriptedResolver
from tests.webhooks.world import configure, deliveries, stored_endpoint

BLOCKED_HOSTS = [
    "127.0.0.1",
    "0.0.0.0",
    "10.0.0.1",
    "172.16.0.1",
    "192.168.1.1",
    "169.254.169.254",
    "100.64.0.1",
    "224.0.0.1",
    "::1",
    "fc00::1",
    "fe80::1",
    "::ffff:127.0.0.1",
    "::ffff:0:127.0.0.1",  # IPv4-translated (SIIT, RFC 2765): loopback behind a translator (probe AJ)
    "::ffff:0:a00:1",  # … and 10.0.0.1
    "2130706433",
    "0x7f000001",
    "017700000001",
    "localhost",  # a host name that resolves to loopback
]

HEADERS = {"Content-Type": "application/json"}


def _url(host: str, port: int = 8443) -> str:
    return f"https://[{host}]:{port}/hook" if ":" in host else f"https://{host}:{port}/hook"


@pytest.mark.parametrize("host", BLOCKED_HOSTS)
def test_private_and_local_destinations_are_refused_before_any_connection(host: str) -> None:
    backend = RecordingBackend()
    resolver = RecordingResolver()
    deliverer = Deliverer(allow_private_networks=False, resolver=resolver, network_backend=backend)

    outcome = run(deliverer.deliver(_url(host), b"{}", HEADERS))

    assert outcome.succeeded is False
    assert outcome.http_status is None
    assert outcome.error is not None and outcome.error.startswith("destination blocked"), outcome.error
    assert backend.connects == []
    # Numeric forms are recognised as addresses without asking DNS; names are resolved first.
    assert resolver.asked == (["localhost"] if host == "localhost" else [])


@pytest.mark.parametrize(
    ("host", "address"),
    [
        ("2130706433", "127.0.0.1"),
        ("0x7f000001", "127.0.0.1"),
        ("017700000001", "127.0.0.1"),
        ("127.1", "127.0.0.1"),
        ("[::1]", "::1"),
    ],
)
def test_numeric_host_forms_denote_the_address_the_c_resolver_would_use(host: str, address: str) -> None:
    assert parse_numeric_host(host) == ip_address(address)


@pytest.mark.parametrize(
    "address",
    [
        "192.0.2.1",
        "198.18.0.1",
        "240.0.0.1",
        "255.255.255.255",
        "::",
        "fec0::1",
        "ff02::1",
        "2001:db8::1",
        "::7f00:1",
        "2002:7f00:1::1",
        "64:ff9b::a00:1",
        "::ffff:0:808:808",  # IPv4-translated, even of a public address: no receiver is published there
    ],
)
def test_reserved_broadcast_and_ipv4_embedding_addresses_are_blocked_too(address: str) -> None:
    assert blocked_reason(ip_address(address)) is not None


@pytest.mark.parametrize("address", ["8.8.8.8", "93.184.216.34", "2001:4860:4860::8888", "::ffff:8.8.8.8"])
def test_public_addresses_are_not_blocked(address: str) -> None:
    assert blocked_reason(ip_address(address)) is None


def test_the_setting_lets_a_loopback_receiver_be_reached(receiver: Receiver, pki: Pki) -> None:
    deliverer = Deliverer(allow_private_networks=True, ca_bundle=str(pki.ca_path))

    outcome = run(deliverer.deliver(receiver.url("/ok", host="127.0.0.1"), b"{}", HEADERS))

    assert outcome.succeeded is True
    assert outcome.http_status == 200


def test_with_the_setting_off_the_dispatcher_records_a_blocked_delivery_and_sends_nothing(
    world: World, box: SecretBox, receiver: Receiver, database: MemoryDatabase, pki: Pki
) -> None:
    guarded = WebhookDispatcher(world.rt, MemoryOutbox(database), box, Deliverer(ca_bundle=str(pki.ca_path)))
    receiver.secret = configure(world, box, receiver.url("/ok")).secret
    world.add_affiliate()

    run(guarded.drain())

    [record] = deliveries(world)
    assert record.status is DeliveryStatus.FAILED
    assert record.http_status is None
    assert record.error is not None and "loopback" in record.error
    assert receiver.received == []


def test_http_urls_are_refused_when_the_endpoint_is_configured(world: World, box: SecretBox) -> None:
    with pytest.raises(ValidationError) as refused:
        webhook_service.configure_endpoint(
            world.rt, world.session, box, world.app.id, {"url": "http://hooks.example.com/x"}
        )
    assert (refused.value.code, refused.value.param) == ("validation_error", "url")
    assert stored_endpoint(world) is None


def test_the_connection_goes_to_the_checked_address_and_keeps_the_host_name_for_tls(
    receiver: Receiver, pki: Pki
) -> None:
    # receiver.test never resolves in real DNS; only the first (checked) answer leads to the receiver.
    resolver = ScriptedResolver(first=["127.0.0.1"], later=["10.255.255.1"])
    backend = RecordingBackend(inner=httpcore.AnyIOBackend())
    deliverer = Deliverer(
        allow_private_networks=True, ca_bundle=str(pki.ca_path), resolver=resolver, network_backend=backend
    )

    outcome = run(deliverer.deliver(receiver.url("/ok", host="receiver.test"), b"{}", HEADERS))

    assert outcome.succeeded is True, outcome
    assert resolver.calls == 1
    assert backend.connects == [("127.0.0.1", receiver.port)]
    [hit] = receiver.hits("/ok")
    assert hit.headers["Host"] == f"receiver.test:{receiver.port}"
    assert receiver.sni_names == ["receiver.test"]


def test_a_name_that_rebinds_to_loopback_after_the_check_is_not_followed(receiver: Receiver) -> None:
    # First answer public (allowed), any later answer loopback: the connection must use the first.
    resolver = ScriptedResolver(first=["93.184.216.34"], later=["127.0.0.1"])
    backend = RecordingBackend()
    deliverer = Deliverer(allow_private_networks=False, resolver=resolver, network_backend=backend)

    outcome = run(deliverer.deliver(f"https://rebind.test:{receiver.port}/ok", b"{}", HEADERS))

    assert outcome.succeeded is False
    assert resolver.calls == 1
    assert backend.connects == [("93.184.216.34", receiver.port)]
    assert receiver.received == []


def test_a_name_with_one_private_answer_among_public_ones_is_blocked() -> None:
    backend = RecordingBackend()
    resolver = ScriptedResolver(first=["93.184.216.34", "10.0.0.7"], later=[])
    deliverer = Deliverer(resolver=resolver, network_backend=backend)

    outcome = run(deliverer.deliver("https://mixed.test/hook", b"{}", HEADERS))

    assert outcome.error is not None and "10.0.0.7" in outcome.error
    assert backend.connects == []
