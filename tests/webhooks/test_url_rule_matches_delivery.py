"""The URL rule of ``PUT /v1/apps/:appId/webhook`` refuses what the delivery cannot use.

``refcore.rules.webhook_url`` checks internationalized names with the ``idna`` package that httpx
encodes hosts with. These tests hold the rule to the delivering side itself: the encoding of
random internationalized names to ``idna.encode``, and every accepted URL to a real delivery
attempt that gets as far as opening a connection.
"""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from refcore.errors import ValidationError
from refcore.rules import webhook_url as rule
from refcore_http.webhooks.delivery import Deliverer
from refcore_http.webhooks.ssrf import parse_numeric_host
from tests.unit.test_webhook_url_rule import DELIVERABLE
from tests.webhooks.spies import RecordingBackend

PUBLIC_ADDRESS = "93.184.215.14"


_LABEL_CHARACTERS = st.sampled_from(
    [
        *"abcxyz019-_",
        *"\u00fc\u00df\u03c2\u00e9\u0130\u212a\u00c4",  # Latin letters, some upper case
        *"\u0301\u0308\u094d\u0915\u0937",  # marks, a virama, Devanagari
        *"\u0627\u0644\u0628\u0645\u06cc\u0660\u0661\u06f0\u0640",  # Arabic, digits of two kinds
        *"\u05d0\u05d1\u05f3\u0375\u03b1\u00b7l\u30fb\u30a2\u3042\u4e00",  # context rules
        *"\u200c\u200d\u200b\u00ad\ufe0f",  # joiners, ignorables
        *"\u2603\u24db\uff41\uff11\u3164\u1100\uac00\u20d0",  # symbols, unstable, jamo
        *"\u0e01\u1820\ua840\u0710\U0001e922",  # Thai, Mongolian, Phags-pa, Syriac, Adlam
    ]
)
_HOSTS = st.lists(st.text(_LABEL_CHARACTERS, min_size=0, max_size=7), min_size=1, max_size=3).map(
    lambda labels: ".".join(labels)
)


async def _resolve_as_the_system_would(host: str, port: int) -> list[str]:
    """What ``socket.getaddrinfo`` does to a name before any lookup (its IDNA codec), then a
    public answer for every name that passes: a deliverable name is one DNS could hold."""
    host.encode("idna")
    return [PUBLIC_ADDRESS]


def _reaches_a_connection(url: str) -> bool:
    backend = RecordingBackend()
    deliverer = Deliverer(
        allow_private_networks=True, resolver=_resolve_as_the_system_would, network_backend=backend
    )
    outcome = asyncio.run(deliverer.deliver(url, b"{}", {"Content-Type": "application/json"}))
    assert outcome.succeeded is False  # the recording backend refuses every connection
    return bool(backend.connects)


@pytest.mark.parametrize("url", DELIVERABLE)
def test_every_accepted_url_of_the_list_reaches_a_connection(url: str) -> None:
    assert _reaches_a_connection(url)


_ASCII_HOSTS = st.text(
    st.sampled_from([*"0123456789.x", *"abfn-_%|~!"]), min_size=1, max_size=14
) | st.sampled_from(["xn--", "xn--ls8h", "xn--bcher-kva", "xn--zca", "a_b", "ab--c", "-a"]).flatmap(
    lambda label: st.sampled_from([f"{label}.example", f"www.{label}.example", f"xn--bcher-kva.{label}"])
)


@settings(max_examples=300, deadline=None)
@given(host=_ASCII_HOSTS | _HOSTS)
def test_whatever_host_the_rule_accepts_a_delivery_can_connect_to(host: str) -> None:
    url = f"https://{host}/hook"
    try:
        rule.require_webhook_url(url)
    except ValidationError:
        return
    assert _reaches_a_connection(url), url


@pytest.mark.parametrize(
    "host", ["2130706433", "0x7f000001", "017700000001", "127.1", "0x7f.1", "1.2.3", "0", "0x", "4294967295"]
)
def test_numeric_hosts_are_read_as_the_ssrf_guard_reads_them(host: str) -> None:
    assert rule.legacy_ipv4(host) == parse_numeric_host(host)
