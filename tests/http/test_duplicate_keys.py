"""Duplicate member names are invalid_json: a name repeated in one object, at any depth, refuses
the body as ``400 invalid_json`` naming the member, and changes nothing.

RFC 7493 (I-JSON) requires unique names. ``json.loads`` and orjson keep the last value, a proxy,
a WAF or a log may keep the first: ``{"amount": 1, "amount": 9000}`` would be a 1-cent refund
to one and a 90.00 one to the ledger. Names are compared decoded (``"a"`` and ``"\\u0061"`` are
one name). Both readings of :func:`~refcore_http.bodies.decode_object` refuse them: orjson's
for an object of plain values (a capture, most writes), which proves by counting commas that no
name was dropped, and the exact one, whose decoder sees every member of every object.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from refcore.errors import InvalidJson, ValidationError
from refcore.services.runtime import Runtime
from refcore_http.bodies import _plain_object, decode_object
from tests.http.world import Client, Tenant, expect, identified_customer, new_tenant, stored_records

JSON_TYPE = "application/json"


def _refused(raw: bytes) -> InvalidJson:
    with pytest.raises(InvalidJson) as refused:
        decode_object(raw, JSON_TYPE)
    return refused.value


def test_duplicate_member_names_are_invalid_json_on_the_fast_path() -> None:
    """The report's body: flat, plain values, orjson's reading; the value is never echoed."""
    raw = b'{"refund_id":"re_dupk","payment_id":"pi_1","amount":1,"amount":9000}'
    assert _plain_object(raw) is None
    error = _refused(raw)
    assert error.param == "amount"
    assert '"amount"' in error.message and "unique" in error.message
    assert "9000" not in error.message and "re_dupk" not in error.message


@pytest.mark.parametrize(
    ("raw", "param"),
    [
        (b'{ "a" : 1 ,\n\t"a" : 1 }', "a"),
        (b'{"a":1,"\\u0061":2}', "a"),
        (b'{"\\u0061":1,"a":2}', "a"),
        (b'{"a\\"b":1,"a\\u0022b":2}', 'a"b'),
        (b'{"/":1,"\\/":2}', "/"),
        (b'{"\\u00e9":1,"\xc3\xa9":2}', "\xe9"),
        (b'{"x":"\\",\\"a\\":1","a":1,"a":2}', "a"),
        (b'{"a":"\\":,","a":"b"}', "a"),
        (b'{"a":"x","b":"y,z","a":"x"}', "a"),
        (b'{"a":null,"a":null}', "a"),
    ],
    ids=[
        "whitespace",
        "escaped second",
        "escaped first",
        "escaped quote",
        "escaped solidus",
        "escaped non-ASCII",
        "quote, colon and comma in a string",
        "colon and comma in the value",
        "comma in another value",
        "same value twice",
    ],
)
def test_duplicate_member_names_are_invalid_json_however_they_are_spelled(raw: bytes, param: str) -> None:
    assert _refused(raw).param == param


@pytest.mark.parametrize(
    ("raw", "param"),
    [
        (b'{"name":"x","commission":{"type":"flat","amount":1,"amount":900}}', "commission.amount"),
        (b'{"metadata":{"k":"1","k":"2"}}', "metadata.k"),
        (b'{"links":[{"code":"a"},{"code":"b","code":"c"}]}', "links.1.code"),
        (b'{"a":{"b":{"c":[[{"d":1,"d":2}]]}}}', "a.b.c.0.0.d"),
        (b'{"a":{"x":1},"a":{"x":1}}', "a"),
    ],
    ids=["commission", "metadata", "object in a list", "deep", "repeated object"],
)
def test_duplicate_member_names_are_invalid_json_at_any_depth(raw: bytes, param: str) -> None:
    assert _plain_object(raw) is None
    assert _refused(raw).param == param


@pytest.mark.parametrize(
    ("raw", "param"),
    [
        (b'{"amount":1.5,"amount":2}', "amount"),
        (b'{"amount":1,"amount":18446744073709551616}', "amount"),
        (b'{"page":"\\u00e9","x":[1],"page":"x"}', "page"),
        ('{"amount": 1, "amount": 2}'.encode("utf-16"), "amount"),
        (b'\xef\xbb\xbf{"amount": 1, "amount": 2}', "amount"),
        (b'{"a":"\\u0000","a":"x"}', "a"),
    ],
    ids=["float", "beyond 64 bits", "escape and list", "UTF-16", "BOM", "NUL in the dropped value"],
)
def test_duplicate_member_names_are_invalid_json_on_the_exact_path(raw: bytes, param: str) -> None:
    """Bodies orjson does not read (or not exactly) go to ``json``'s decoder, which refuses too."""
    assert _plain_object(raw) is None
    assert _refused(raw).param == param


@pytest.mark.parametrize(
    ("raw", "fault_fixed", "error", "message"),
    [
        (b'{"a":1,"a":2} x', b'{"a":1,"a":2}', InvalidJson, "The request body is not valid JSON"),
        (b'{"a":NaN,"a":2}', b'{"a":0,"a":2}', InvalidJson, "The request body is not valid JSON"),
        (b'[{"a":1,"a":2}]', b'{"b":{"a":1,"a":2}}', InvalidJson, "The request body must be a JSON object"),
        (b'{"\\u0000":1,"\\u0000":2}', b'{"\\u0030":1,"\\u0030":2}', ValidationError, None),
        (b'{"\\ud800":1,"\\ud800":2}', b'{"\\ud83d\\ude00":1,"\\ud83d\\ude00":2}', ValidationError, None),
    ],
    ids=["trailing data", "NaN", "not an object", "NUL name", "lone surrogate name"],
)
def test_a_body_refused_before_duplicate_member_names_were_invalid_json_is_refused_as_before(
    raw: bytes, fault_fixed: bytes, error: type[Exception], message: str | None
) -> None:
    """The other fault wins, whichever the decoder meets first; without it, the repeat is refused.
    A repeated name holding a NUL or a lone surrogate never reaches the message."""
    with pytest.raises(error) as refused:
        decode_object(raw, JSON_TYPE)
    assert message is None or str(refused.value) == message
    assert "appears twice" in _refused(fault_fixed).message


# -- properties: bodies spelled every way JSON allows, with names that often repeat ---------------

#: Few names, so that they collide; spelled with escapes, they still compare decoded.
_names = st.sampled_from(["a", "b", "amount", 'q"', "é", "\U0001f600", ",", ":", ""])
_texts = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=6) | st.sampled_from(
    ['",', '":', ",", '\\"a":1,"a', "https://x/?a=1,2"]
)
_SHORT_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "/": "\\/",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
}


@st.composite
def _spelled_text(draw: st.DrawFn, text: str) -> str:
    """``text`` as a JSON string, each character raw or escaped as the draw says."""
    out = ['"']
    for char in text:
        code = ord(char)
        must_escape = char in '"\\' or code < 0x20
        way = (
            draw(st.sampled_from(["raw", "short", "u"])) if char in _SHORT_ESCAPES or not must_escape else "u"
        )
        if way == "raw" and not must_escape:
            out.append(char)
        elif way == "short" and char in _SHORT_ESCAPES:
            out.append(_SHORT_ESCAPES[char])
        elif code > 0xFFFF:
            high, low = divmod(code - 0x10000, 0x400)
            out.append(f"\\u{0xD800 + high:04x}\\u{0xDC00 + low:04X}")
        else:
            out.append(f"\\u{code:04x}")
    out.append('"')
    return "".join(out)


_spaces = st.sampled_from(["", "", " ", "\n", " \t\r\n "])


@st.composite
def _spelled(draw: st.DrawFn, value: Any) -> str:
    """``value`` (members as a list of pairs, so that names can repeat) spelled as JSON."""
    if isinstance(value, tuple):
        members = [
            f"{draw(_spaces)}{draw(_spelled_text(name))}{draw(_spaces)}:{draw(_spaces)}{draw(_spelled(item))}{draw(_spaces)}"
            for name, item in value
        ]
        return "{" + ",".join(members) + (draw(_spaces) if not members else "") + "}"
    if isinstance(value, list):
        return "[" + ",".join(draw(_spelled(item)) for item in value) + "]"
    if isinstance(value, str):
        return draw(_spelled_text(value))
    return json.dumps(value)


def _objects(children: st.SearchStrategy[Any]) -> st.SearchStrategy[tuple[tuple[str, Any], ...]]:
    return st.lists(st.tuples(_names, children), max_size=5).map(tuple)


_plain = st.none() | st.booleans() | st.integers() | st.sampled_from([0.5, -1e-3, 2**70]) | _texts
_trees = st.recursive(
    _plain, lambda children: st.lists(children, max_size=3) | _objects(children), max_leaves=10
)
#: A flat object of plain values (orjson's reading), or any object.
_bodies = _objects(_plain) | _objects(_trees)


def _repeats(value: Any) -> bool:
    if isinstance(value, tuple):
        names = [name for name, _ in value]
        return len(set(names)) < len(names) or any(_repeats(item) for _, item in value)
    return isinstance(value, list) and any(_repeats(item) for item in value)


@given(_bodies, st.data())
def test_duplicate_member_names_are_invalid_json_and_any_other_body_reads_as_json_loads_reads_it(
    members: tuple[tuple[str, Any], ...], data: st.DataObject
) -> None:
    raw = (data.draw(_spaces) + data.draw(_spelled(members)) + data.draw(_spaces)).encode()
    if _repeats(members):
        assert _plain_object(raw) is None  # the fast path's proof never lets a repeat through
        with pytest.raises(InvalidJson):
            decode_object(raw, JSON_TYPE)
    else:
        assert decode_object(raw, JSON_TYPE) == json.loads(raw)


# -- over HTTP: refused before anything is written ------------------------------------------------


@pytest.fixture
def tenant(client: Client, runtime: Runtime) -> Tenant:
    return new_tenant(client, runtime, "acme")


@pytest.fixture
def payment(client: Client, tenant: Tenant) -> dict[str, Any]:
    """A live payment of 100.00 by an attributed customer, which a refund may name."""
    body = {
        "payment_id": "pi_1",
        "customer_id": identified_customer(client, tenant),
        "program_id": tenant.program_id,
        "amount": 10000,
        "currency": "usd",
    }
    return expect(client.post("/v1/transactions", tenant.live_key, body), 201)


_JSON = {"Content-Type": "application/json"}


def test_a_refund_with_a_duplicate_amount_is_invalid_json_and_creates_nothing(
    client: Client, runtime: Runtime, tenant: Tenant, payment: dict[str, Any]
) -> None:
    before = stored_records(runtime)
    raw = b'{"refund_id":"re_dupk","payment_id":"pi_1","amount":1,"amount":9000}'
    response = client.request("POST", "/v1/transactions/refunds", tenant.live_key, content=raw, headers=_JSON)
    error = expect(response, 400, "invalid_json")["error"]
    assert error["param"] == "amount" and "9000" not in response.text
    assert stored_records(runtime) == before


def test_a_payment_with_a_duplicate_amount_is_invalid_json_and_creates_nothing(
    client: Client, runtime: Runtime, tenant: Tenant, payment: dict[str, Any]
) -> None:
    before = stored_records(runtime)
    body = json.dumps(
        {"payment_id": "pi_2", "customer_id": payment["customer_id"], "program_id": tenant.program_id}
    )
    raw = (body[:-1] + ', "amount": 1, "currency": "usd", "amount": 9000}').encode()
    response = client.request("POST", "/v1/transactions", tenant.live_key, content=raw, headers=_JSON)
    assert expect(response, 400, "invalid_json")["error"]["param"] == "amount"
    assert stored_records(runtime) == before


def test_a_public_capture_with_a_duplicate_member_name_is_invalid_json_and_creates_nothing(
    client: Client, runtime: Runtime, tenant: Tenant
) -> None:
    """The browser's capture, decoded on the server's hottest path (the capture shortcut)."""
    before = stored_records(runtime)
    raw = f'{{"via":"{tenant.link_code}","page":"https://shop.example/","via":"other"}}'.encode()
    response = client.request("POST", "/v1/capture", content=raw, headers=_JSON)
    assert expect(response, 400, "invalid_json")["error"]["param"] == "via"
    assert stored_records(runtime) == before
