"""Interface 6.2-6.3: the headers and the ``v1=`` signature over ``timestamp.raw_body``."""

from __future__ import annotations

import hashlib
import hmac
import json
from datetime import UTC, datetime

from refcore.models import Event, EventType
from refcore.representation import envelope
from refcore_http.webhooks.signing import body_of, signature, signed_headers

EVENT = Event(
    id="whev_01jabcdefghjkmnpqrstvwxyz0",
    app_id="app_01jabcdefghjkmnpqrstvwxyz0",
    type=EventType.REFERRAL_CREATED,
    livemode=True,
    created_at=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
    data={"id": "ref_1", "object": "referral", "note": "café"},
)


def test_the_signature_is_hmac_sha256_hex_of_timestamp_dot_body_keyed_by_the_whole_secret() -> None:
    body = b'{"id":"whev_1"}'
    expected = hmac.new(b"whsec_abc", b"1700000000." + body, hashlib.sha256).hexdigest()
    assert signature("whsec_abc", 1700000000, body) == f"v1={expected}"


def test_a_known_vector_keeps_its_signature() -> None:
    # Fixed so that any change to the scheme (key bytes, separator, encoding) is caught.
    assert signature("whsec_test", 1700000000, b'{"a":1}') == (
        "v1=38877139021993b830af32feea6e18a8da83eb2f6e49ee50bd9e4cf4ca4d3789"
    )


def test_the_body_is_the_envelope_of_interface_2_9_as_utf8_json() -> None:
    body = body_of(EVENT)
    assert json.loads(body.decode("utf-8")) == envelope(EVENT)
    assert "café".encode() in body


def test_every_header_of_interface_6_2_is_set_and_agrees_with_the_body() -> None:
    body = body_of(EVENT)
    headers = signed_headers(EVENT, body, secret="whsec_abc", timestamp=1767323045)
    assert headers["Content-Type"] == "application/json"
    assert headers["X-Service-Webhook-Id"] == EVENT.id
    assert headers["X-Service-Webhook-Event"] == "referral.created"
    assert headers["X-Service-Webhook-Timestamp"] == "1767323045"
    assert headers["X-Service-Webhook-Signature"] == signature("whsec_abc", 1767323045, body)
    assert headers["X-Service-Webhook-Version"] == "1"
    assert "whsec_abc" not in json.dumps(headers)
