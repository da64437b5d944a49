"""``decode_object`` reads a body as ``json.loads`` does (an object of plain values through orjson,
anything else through one decoder kept instead of one built per call): the same values, the same
encodings, the same refusals; except text no database can keep (a NUL character, an unpaired
surrogate), which it refuses (``text_safety``)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from refcore.errors import InvalidJson, ValidationError
from refcore_http.bodies import _plain_object, decode_object

JSON_TYPE = "application/json"

#: Any text a database keeps: every character UTF-8 can write (no lone surrogate) but NUL.
storable_text = st.text(st.characters(codec="utf-8", exclude_characters="\x00"))
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | storable_text,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(storable_text, children, max_size=4),
    max_leaves=12,
)


@given(
    st.dictionaries(storable_text, json_values, max_size=5), st.sampled_from(["utf-8", "utf-16", "utf-32"])
)
def test_an_object_decodes_as_json_loads_decodes_it_in_every_encoding_it_detects(
    value: dict[str, Any], encoding: str
) -> None:
    raw = json.dumps(value, ensure_ascii=False).encode(encoding)
    assert decode_object(raw, JSON_TYPE) == json.loads(raw) == value


@pytest.mark.parametrize(
    "raw",
    [
        b'{"amount": NaN}',
        b'{"a": Infinity}',
        b'{"a": -Infinity}',
        b'{"a": 1',
        b"\xff\xfe\x00",
        b'{"a": "\xc3"}',
    ],
    ids=["NaN", "Infinity", "-Infinity", "truncated", "undecodable", "bad UTF-8"],
)
def test_what_is_not_json_is_invalid_json(raw: bytes) -> None:
    with pytest.raises(InvalidJson):
        decode_object(raw, JSON_TYPE)


@given(storable_text, storable_text, st.sampled_from(["utf-8", "utf-16", "utf-32"]))
def test_a_nul_anywhere_in_the_text_is_a_validation_error_naming_the_field(
    before: str, after: str, encoding: str
) -> None:
    raw = json.dumps({"ok": "x", "outer": [{"name": f"{before}\x00{after}"}]}).encode(encoding)
    with pytest.raises(ValidationError) as refused:
        decode_object(raw, JSON_TYPE)
    assert refused.value.param == "outer.0.name"


def test_a_lone_surrogate_escape_is_refused_and_a_pair_reads_as_its_character() -> None:
    with pytest.raises(ValidationError) as refused:
        decode_object(b'{"name": "\\ud800"}', JSON_TYPE)
    assert refused.value.param == "name"
    with pytest.raises(ValidationError):
        decode_object(b'{"\\udc00": 1}', JSON_TYPE)
    assert decode_object(b'{"name": "\\ud83d\\ude00"}', JSON_TYPE) == {"name": "\U0001f600"}
    with pytest.raises(InvalidJson):
        decode_object(b'{"name": "\xed\xa0\x80"}', JSON_TYPE)  # the surrogate as UTF-8 bytes


@pytest.mark.parametrize("number", [2**64, 2**64 - 1, -(2**63) - 1, 2**200, -(2**200)])
def test_an_integer_beyond_64_bits_keeps_its_exact_value(number: int) -> None:
    """orjson would read it as a float; the core must see the integer to name it out of range."""
    value = decode_object(f'{{"amount": {number}}}'.encode(), JSON_TYPE)
    assert value == {"amount": number}
    assert type(value["amount"]) is int


@pytest.mark.parametrize(
    ("raw", "param"),
    [
        (b'{"page": "a\\u0000b"}', "page"),
        (b'{"\\u0000": "x"}', "\x00"),
        (b'{"via": "ok", "page": "\\ud800"}', "page"),
    ],
    ids=["NUL in a value", "NUL in a key", "lone surrogate"],
)
def test_a_flat_object_is_checked_for_escaped_text_no_store_keeps(raw: bytes, param: str) -> None:
    with pytest.raises(ValidationError) as refused:
        decode_object(raw, JSON_TYPE)
    assert refused.value.param == param


@pytest.mark.parametrize(
    "raw",
    [
        b'{"via": "code", "page": "https://shop.example/", "n": 1, "ok": true, "none": null}',
        b'{"amount": 18446744073709551615}',
        b" {} ",
    ],
)
def test_an_object_of_plain_values_is_read_by_orjson(raw: bytes) -> None:
    assert _plain_object(raw) == json.loads(raw)


@pytest.mark.parametrize(
    "raw",
    [
        b'{"amount": 2900.0}',
        b'{"amount": 18446744073709551616}',
        b'{"commission": {"type": "flat"}}',
        b'{"links": []}',
        b'["not", "an", "object"]',
        '{"a": "é"}'.encode("utf-16"),
        b'\xef\xbb\xbf{"a": 1}',
        b'{"a": "\\ud800"}',
        b"",
    ],
    ids=[
        "float",
        "beyond 64 bits",
        "nested object",
        "list",
        "array",
        "UTF-16",
        "BOM",
        "lone surrogate",
        "empty",
    ],
)
def test_anything_else_is_left_to_the_exact_reading(raw: bytes) -> None:
    assert _plain_object(raw) is None


@pytest.mark.parametrize(
    "raw",
    [
        b'{"via": [' + b",".join([b'{"a": 1}'] * 10_001) + b"]}",
        b'{"via": [' + b",".join([b"[]"] * 10_001) + b"]}",
        b"{" + b",".join(b'"k%d": 1' % n for n in range(10_001)) + b"}",
        b'{"via": [' + b",".join([b"0"] * 10_002) + b"]}",
    ],
    ids=["objects", "arrays", "members", "list items"],
)
def test_a_body_of_more_than_ten_thousand_objects_arrays_members_or_items_is_refused_before_it_is_read(
    raw: bytes,
) -> None:
    """Reading each object calls Python: a megabyte of them had held the event loop 103 ms."""
    with pytest.raises(InvalidJson, match="more than 10000 JSON objects, arrays, members or list items"):
        decode_object(raw, JSON_TYPE)


def test_a_body_of_thousands_of_objects_and_a_long_text_of_braces_and_colons_still_decodes() -> None:
    # 8,002 objects and arrays, 8,001 members and 8,000 commas, and the text's 1,200, 600 and
    # 600: counted, 9,202, 8,601 and 8,600.
    nested = {"via": [{"a": 1}] * 8_000, "page": "{[:," * 600}
    assert decode_object(json.dumps(nested).encode(), JSON_TYPE) == nested
    long_text = {"logo": "data:" + "A" * 900_000}
    assert decode_object(json.dumps(long_text).encode(), JSON_TYPE) == long_text


def test_valid_json_nested_past_the_decoders_reach_is_refused_as_too_deep_not_as_invalid() -> None:
    """Probe AK: 990 nested arrays, valid JSON well under the 10,000 count, were answered "not valid
    JSON", which sends a client looking for a typo."""
    raw = b'{"name": ' + b"[" * 5_000 + b"]" * 5_000 + b"}"
    with pytest.raises(InvalidJson, match="nests arrays and objects too deeply"):
        decode_object(raw, JSON_TYPE)
    shallow = b'{"name": ' + b"[" * 50 + b"]" * 50 + b"}"
    assert decode_object(shallow, JSON_TYPE) == json.loads(shallow)
