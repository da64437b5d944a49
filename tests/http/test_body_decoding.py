"""``decode_object`` reads a body as ``json.loads`` does (it keeps one decoder instead of building
one per call): the same values, the same encodings, the same refusals; except text no database
can keep (a NUL character, an unpaired surrogate), which it refuses (``text_safety``)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from refcore.errors import InvalidJson, ValidationError
from refcore_http.bodies import decode_object

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
