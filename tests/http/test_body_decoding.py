"""``decode_object`` reads a body exactly as ``json.loads`` does (it keeps one decoder instead
of building one per call): the same values, the same encodings, the same refusals."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from refcore.errors import InvalidJson
from refcore_http.bodies import decode_object

JSON_TYPE = "application/json"

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(), children, max_size=4),
    max_leaves=12,
)


@given(st.dictionaries(st.text(), json_values, max_size=5), st.sampled_from(["utf-8", "utf-16", "utf-32"]))
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


def test_a_lone_surrogate_escape_reads_as_json_loads_reads_it() -> None:
    raw = b'{"name": "\\ud800"}'
    assert decode_object(raw, JSON_TYPE) == json.loads(raw)
