"""Request bodies: JSON only, at most 1 MiB, structured strictly into attrs request classes.

- The content type must be ``application/json`` or a ``+json`` type; anything else, an empty
  body or malformed JSON is ``400 invalid_json``. The top level must be an object.
- A member name repeated in one object (at any depth; ``"a"`` and ``"\\u0061"`` are one name) is
  ``400 invalid_json`` naming it in ``param``, as RFC 7493 (I-JSON) requires: a reader that
  keeps the first value (a proxy, a WAF, a log) and one that keeps the last (``json.loads``,
  orjson) would otherwise see two different requests, a 1-cent refund and a 90.00 one.
- Over the size limit is ``413 body_too_large``; the body is read as a stream and abandoned at
  the limit, so an oversized upload never sits in memory whole.
- Structuring uses cattrs with ``forbid_extra_keys``: an unknown field is ``400 validation_error``
  naming it in ``param``. Types are strict: JSON ``true``, ``2900.0`` and ``"2900"`` are not
  integers, ``123`` is not a string. Range checks (amounts, lengths) stay in the core, so a
  Python caller and an HTTP caller get the same answer.
"""

from __future__ import annotations

import json
import types
from collections.abc import Callable, Mapping
from typing import Any, Literal, TypeVar, Union, get_args, get_origin, get_type_hints

import attrs
import cattrs
import orjson
from attrs import frozen, has
from cattrs.errors import ClassValidationError, ForbiddenExtraKeysError
from cattrs.gen import make_dict_structure_fn
from starlette.requests import ClientDisconnect, Request

from refcore.credentials import shown
from refcore.errors import BodyTooLarge, InvalidJson, ValidationError
from refcore_http.request_headers import header, repeated
from refcore_http.schemas import NOT_NULL
from refcore_http.text_safety import check_decoded

T = TypeVar("T")

MAX_BODY_BYTES = 1024 * 1024
#: Where :func:`read_body` keeps the body it read, in the request's scope.
_BODY_KEY = "refcore.body"


class _Mistyped(TypeError):
    """A value of the wrong type; ``at`` names a field inside it (``commission`` -> ``.type``)."""

    def __init__(self, expected: str, *, at: str | None = None) -> None:
        super().__init__(expected)
        self.expected = expected
        self.at = at


def _strict_int(value: object, _: type) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _Mistyped("an integer")
    return value


def _strict_str(value: object, _: type) -> str:
    if not isinstance(value, str):
        raise _Mistyped("a string")
    return value


def _strict_bool(value: object, _: type) -> bool:
    if not isinstance(value, bool):
        raise _Mistyped("true or false")
    return value


def _is_literal(tp: Any) -> bool:
    return get_origin(tp) is Literal


def _strict_literal(value: object, tp: Any) -> object:
    choices = get_args(tp)
    if value not in choices or isinstance(value, bool) != isinstance(choices[0], bool):
        raise _Mistyped("one of " + ", ".join(json.dumps(c) for c in choices))
    return value


def _is_list(tp: Any) -> bool:
    return get_origin(tp) is list


def _strict_list(value: object, tp: Any) -> list[Any]:
    """A JSON array only: cattrs would otherwise iterate a string into characters (or an object
    into its keys) and accept it."""
    if not isinstance(value, list):
        raise _Mistyped("a list")
    (item,) = get_args(tp)
    try:
        return [converter.structure(element, item) for element in value]
    except _Mistyped as exc:
        raise _Mistyped(f"a list of {exc.expected.removeprefix('a ').removeprefix('an ')}s") from None


def _attrs_hook_factory(cls: type) -> Any:
    """Nested attrs classes must arrive as JSON objects; say so instead of a cattrs internal."""
    inner: Callable[[Mapping[str, Any], Any], Any] = make_dict_structure_fn(
        cls, converter, _cattrs_forbid_extra_keys=True
    )

    def hook(value: object, _: type) -> object:
        if not isinstance(value, Mapping):
            raise _Mistyped("an object")
        return inner(value, cls)

    return hook


def _tags(cls: Any) -> tuple[object, ...]:
    """The values of the ``type: Literal[...]`` field of an attrs class, or ``()``."""
    if not has(cls):
        return ()
    hint = get_type_hints(cls).get("type")
    return get_args(hint) if get_origin(hint) is Literal else ()


def _is_tagged_union(tp: Any) -> bool:
    """``A | B`` (or ``A | B | None``) of attrs classes told apart by their ``type`` field."""
    args = get_args(tp) if get_origin(tp) in (Union, types.UnionType) else ()
    options = [a for a in args if a is not type(None)]
    return len(options) > 1 and all(_tags(option) for option in options)


def _tagged_union_hook_factory(tp: Any) -> Any:
    by_tag = {tag: option for option in get_args(tp) for tag in _tags(option)}
    expected = "one of " + ", ".join(json.dumps(t) for t in by_tag)
    nullable = type(None) in get_args(tp)

    def hook(value: object, _: type) -> object:
        if value is None and nullable:
            return None
        if not isinstance(value, Mapping):
            raise _Mistyped("an object")
        option = by_tag.get(value.get("type")) if isinstance(value.get("type"), str) else None
        if option is None:
            raise _Mistyped(expected, at="type")
        return converter.structure(value, option)

    return hook


converter = cattrs.Converter(forbid_extra_keys=True)
converter.register_structure_hook(int, _strict_int)
converter.register_structure_hook(str, _strict_str)
converter.register_structure_hook(bool, _strict_bool)
converter.register_structure_hook_func(_is_literal, _strict_literal)
converter.register_structure_hook_func(_is_list, _strict_list)
converter.register_structure_hook_factory(has, _attrs_hook_factory)
converter.register_structure_hook_factory(_is_tagged_union, _tagged_union_hook_factory)


@frozen
class Parsed:
    """A structured body and the top-level fields that were present in it."""

    value: Any
    sent: frozenset[str]


def is_json_media_type(content_type: str | None) -> bool:
    if not content_type:
        return False
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))


def _require_plain_body(request: Request) -> None:
    """``invalid_json`` for a body whose headers say something refcore would not honour: a
    ``Content-Encoding`` (refcore inflates nothing, so ``gzip`` had been read as if it were
    not there, and a proxy that does inflate sees another body than refcore), or several
    ``Content-Type`` headers (the first had won: ``application/json`` then ``text/plain`` was
    read as JSON, the other order refused). Found by probe Q; the same reasoning refuses
    repeated ``Authorization`` headers and repeated JSON members. The header's value is not
    quoted: it is the caller's text."""
    encoding = header(request, b"content-encoding")
    if encoding is not None and (
        encoding.strip(" \t").lower() != "identity" or repeated(request, b"content-encoding")
    ):
        raise InvalidJson("Send the body as it is, without a Content-Encoding: refcore decompresses nothing")
    if repeated(request, b"content-type"):
        raise InvalidJson("Send one Content-Type header; this request has several")


async def read_body(request: Request, *, limit: int = MAX_BODY_BYTES) -> bytes:
    """The raw body, refusing anything over ``limit`` bytes without reading it all.

    Reads the ASGI messages itself rather than through ``Request.stream()``: that is an async
    generator, which the event loop's hooks register in a weak set and finalize, about 1.5 µs a
    request of the 2.4 the read took (``bench/history.md``, twenty-first session). A client
    that goes away mid-body raises Starlette's ``ClientDisconnect``, as ``stream()`` does.

    The body read is kept in the request's scope, so a second reading gets the same bytes: an
    endpoint's shortcut reads it first, and hands the request on to the pipeline when it is
    not for the shortcut (:mod:`refcore_http.dispatch`)."""
    kept: bytes | None = request.scope.get(_BODY_KEY)
    if kept is not None:
        return kept
    _require_plain_body(request)
    declared = header(request, b"content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise BodyTooLarge(f"The request body exceeds {limit} bytes")
    chunks: list[bytes] = []
    size = 0
    more = True
    while more:
        message = await request.receive()
        if message["type"] != "http.request":
            raise ClientDisconnect()
        chunk: bytes = message.get("body", b"")
        more = message.get("more_body", False)
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge(f"The request body exceeds {limit} bytes")
        chunks.append(chunk)
    body = request.scope[_BODY_KEY] = b"".join(chunks)
    return body


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


class _RepeatedName(Exception):
    """An object of the body names a member twice (not a ``ValueError``: not "malformed")."""


def _unique_members(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """The object of ``pairs``, called by the C scanner once an object is read."""
    members = dict(pairs)
    if len(members) < len(pairs):
        raise _RepeatedName
    return members


#: Built once: ``json.loads`` with a keyword argument builds a new decoder on every call.
_DECODER = json.JSONDecoder(parse_constant=_reject_constant, object_pairs_hook=_unique_members)
#: The reading before names had to be unique (the last value wins), to refuse a body with a
#: repeated name that was refused before exactly as it was; and one keeping every member.
_LAST_WINS = json.JSONDecoder(parse_constant=_reject_constant)
_EVERY_MEMBER = json.JSONDecoder(parse_constant=_reject_constant, object_pairs_hook=tuple)

#: The values orjson reads exactly as ``json.loads`` does. Not floats: orjson reads an integer
#: beyond 64 bits as one, where ``json.loads`` keeps it whole and the core names it out of range.
_PLAIN_VALUES = frozenset({str, int, bool, type(None)})


def _plain_object(raw: bytes) -> dict[str, Any] | None:
    """``raw`` read by orjson when it is an object of plain values (a capture's body, most write
    bodies), else ``None``. orjson takes 0.9 µs where the exact reading below takes 2.0
    (``bench/history.md``, twenty-third session). What orjson refuses (another encoding than
    UTF-8, a BOM, a lone surrogate escape, ``1e400``), anything nested and a body with a comma in
    a string are left to that reading, so every body still decodes, and fails, as ``json.loads``
    would, and no repeated name goes unseen."""
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    if type(value) is not dict:
        return None
    for item in value.values():
        if type(item) not in _PLAIN_VALUES:
            return None
    # orjson keeps the last of repeated names. This proves none was repeated: the values being
    # plain, the only commas outside strings are the n - 1 between the n members, so
    # ``commas < len(value)`` gives n <= len(value), the number of distinct names. A comma in a
    # string only sends the body to the exact reading, which finds repeated names itself.
    if value and raw.count(b",") >= len(value):
        return None
    return value


#: The most objects and arrays, the most members and the most values after a comma a body may
#: hold: far more than any request of refcore's needs (a processor event holds a few hundred),
#: and few enough that reading and checking them stays short on the event loop, which a body
#: runs on.
MAX_JSON_ITEMS = 10_000
#: Bodies up to this long cannot hold more than :data:`MAX_JSON_ITEMS` of any (it takes two
#: bytes for an array or a list item, six for a member), and are not counted: a capture's body
#: is not.
_COUNTED_ABOVE = 16 * 1024


def _require_few_items(raw: bytes) -> None:
    """Refuse a body of more than :data:`MAX_JSON_ITEMS` objects and arrays, members, or values
    after a comma, before reading it. Counted by their bytes (``{``, ``[``, ``:`` and ``,``),
    inside strings too: a text adds its own, and no text refcore keeps is longer than a URL's
    2,048 characters. A megabyte of small objects in a list had held the event loop 103 ms to
    read (Python's decoder calls the duplicate check for each object), and eight clients sending
    them took another client's reads from 2 ms to 864 (probe V); a megabyte of numbers in a
    list, 17 ms, and 35 more to check its texts (probe W)."""
    if (
        raw.count(b"{") + raw.count(b"[") > MAX_JSON_ITEMS
        or raw.count(b":") > MAX_JSON_ITEMS
        or raw.count(b",") > MAX_JSON_ITEMS
    ):
        raise InvalidJson(
            f"The request body holds more than {MAX_JSON_ITEMS} JSON objects, arrays, members or list items"
        )


def decode_object(raw: bytes, content_type: str | None) -> dict[str, Any]:
    """The JSON object in ``raw``; ``invalid_json`` for anything else."""
    if not is_json_media_type(content_type):
        raise InvalidJson("The body must be JSON sent with Content-Type: application/json")
    if len(raw) > _COUNTED_ABOVE:
        _require_few_items(raw)
    value = _plain_object(raw)
    if value is None:
        return _exact_object(raw)
    # orjson reads UTF-8 only, where an escape is these two bytes. ``find``, not ``in``: on bytes,
    # ``in`` first tries the operand as an integer and builds a TypeError, 1,200 instructions.
    if raw.find(b"\\u") != -1:
        check_decoded(value)
    return value


def _exact_object(raw: bytes) -> dict[str, Any]:
    """``raw`` read as ``json.loads`` reads it, refusing a repeated member name."""
    try:
        return _read_object(raw, _DECODER)
    except _RepeatedName:
        pass
    # The error path only: a body refused before names had to be unique is refused as it was
    # (malformed, not an object, a NUL), whatever order the scanner met the problems in.
    _read_object(raw, _LAST_WINS)
    name = shown(_repeated_name(_EVERY_MEMBER.decode(raw.decode(json.detect_encoding(raw)))))
    raise InvalidJson(
        f"The member {json.dumps(name)} appears twice in one object; member names must be unique",
        param=name,
    )


def _read_object(raw: bytes, decoder: json.JSONDecoder) -> dict[str, Any]:
    if not raw.strip():
        raise InvalidJson("The request body is empty; a JSON object is expected")
    try:
        # UTF-8, -16 or -32, told apart by the first bytes as ``json.loads`` does; strictly, so
        # that bytes spelling a lone surrogate are invalid (``json.loads`` lets them through).
        text = raw.decode(json.detect_encoding(raw))
        value = decoder.decode(text)
    except ValueError:
        raise InvalidJson("The request body is not valid JSON") from None
    except RecursionError:
        # Valid JSON, but deeper than the decoder's recursion reaches (nearly 1,000 levels; no
        # request takes more than three): saying "not valid" sent a client looking for a typo.
        raise InvalidJson("The request body nests arrays and objects too deeply") from None
    if not isinstance(value, dict):
        raise InvalidJson("The request body must be a JSON object")
    if "\\u" in text:
        check_decoded(value)  # only an escape can spell a NUL or a lone surrogate
    return value


def _repeated_name(tree: object) -> str:
    """The dotted path (``commission.type``, ``links.0.code``) of a repeated member name in
    ``tree``, read with every object as a tuple of its ``(name, value)`` pairs; an object's own
    names are looked at before its values. Iterative: the body may nest as deep as the decoder
    allows."""
    pending: list[tuple[str, object]] = [("", tree)]
    while pending:
        path, value = pending.pop()
        inner: list[tuple[str, object]] = []
        if isinstance(value, tuple):
            names: set[str] = set()
            for name, item in value:
                here = f"{path}.{name}" if path else name
                if name in names:
                    return here
                names.add(name)
                inner.append((here, item))
        elif isinstance(value, list):
            inner = [(f"{path}.{index}" if path else str(index), item) for index, item in enumerate(value)]
        pending.extend(reversed(inner))
    raise AssertionError("no repeated member name")  # pragma: no cover - the decoder found one


def structure(value: dict[str, Any], cls: type[T]) -> Parsed:
    """Structure a decoded object into ``cls``, reporting the first bad field as ``param``."""
    try:
        result = converter.structure(value, cls)
    except ClassValidationError as exc:
        raise _validation_error(exc, prefix="") from None
    except _Mistyped as exc:
        raise ValidationError(f"The body must be {exc.expected}") from None
    for name in _not_null_fields(cls):
        if name in value and value[name] is None:
            raise ValidationError(f"null is not a value for {name}; leave the field out instead", param=name)
    return Parsed(value=result, sent=frozenset(value))


def _not_null_fields(cls: type[Any]) -> tuple[str, ...]:
    """The fields of ``cls`` marked :data:`~refcore_http.schemas.NOT_NULL`: optional, but ``null``
    is not a value for them. Refused here, where the body still tells ``null`` from a field left
    out: structured, both are ``None``, which mark-paid had read as "no amount" and skipped its
    check (probe AF). Read once a class."""
    found = _NOT_NULL_FIELDS.get(cls)
    if found is None:
        marked = attrs.fields(cls) if has(cls) else ()
        found = _NOT_NULL_FIELDS[cls] = tuple(field.name for field in marked if field.metadata.get(NOT_NULL))
    return found


#: By request class, :func:`_not_null_fields`.
_NOT_NULL_FIELDS: dict[type[Any], tuple[str, ...]] = {}


def _validation_error(exc: ClassValidationError, *, prefix: str) -> ValidationError:
    with_notes, without_notes = exc.group_exceptions()
    for inner in without_notes:
        if isinstance(inner, ForbiddenExtraKeysError):
            name = shown(f"{prefix}{sorted(inner.extra_fields)[0]}")
            return ValidationError(f"Unknown field {name}", param=name)
    for inner, note in with_notes:
        name = f"{prefix}{getattr(note, 'name', '')}"
        if isinstance(inner, ClassValidationError):
            return _validation_error(inner, prefix=f"{name}.")
        if isinstance(inner, KeyError):
            return ValidationError(f"{name} is required", param=name)
        if isinstance(inner, _Mistyped):
            name = f"{name}.{inner.at}" if inner.at else name
            return ValidationError(f"{name} must be {inner.expected}", param=name)
        return ValidationError(f"{name} is invalid", param=name)
    return ValidationError("The request body is invalid")
