"""Text that every store can keep: no NUL character and no unpaired UTF-16 surrogate.

PostgreSQL's ``text`` cannot hold U+0000, and no UTF-8 encoder (SQLite's driver, PostgreSQL's,
the JSON of a webhook) can write a lone surrogate such as U+D800. JSON can spell both
(``"\\u0000"``, ``"\\ud800"``) and a URL can carry ``%00``, so a request could reach the store with
either and fail there as a ``500`` (found by fuzzing the API with schemathesis; on SQLite a NUL
was even stored). They are refused where the request is read, as ``400 validation_error``
naming the field, the same on every store.

A JSON body can only hold them through a ``\\u`` escape (a raw control character is not valid
JSON, and the body is decoded strictly), so a body without one is not walked at all: captures
pay one substring search.
"""

from __future__ import annotations

from typing import Any

from refcore.validation import require_storable


def check_text(text: str, param: str) -> None:
    """``validation_error`` naming ``param`` if ``text`` holds what no store can keep."""
    if _maybe_unstorable(text):
        require_storable(text, param=param)


def _maybe_unstorable(text: str) -> bool:
    """Whether ``text`` needs the full check: only a NUL or a character outside ASCII (a lone
    surrogate among them) can be what no store keeps, and most texts have neither."""
    return "\x00" in text or not text.isascii()


#: Where a value sits in a decoded body: ``None`` for the body itself, else its parent's place
#: and its own key or index. A chain, so that reaching a value costs nothing however long the
#: names above it are: the dotted name is spelt only for a text that is refused.
_Place = tuple[Any, str | int] | None


def check_decoded(value: Any) -> None:
    """Every string of a decoded JSON value, object keys included; ``param`` is the dotted path
    of the offending value (``links.0.code``), or the body itself when it is a bare string.

    The path had been spelt for every value walked: a body of one 520,000-character name over
    a list of 264,000 numbers took 1.3 s of the event loop to check (probe W)."""
    _check(value, None)


def _check(value: Any, place: _Place) -> None:
    if isinstance(value, str):
        if _maybe_unstorable(value):
            require_storable(value, param=_spelt(place))
    elif isinstance(value, dict):
        for key, item in value.items():
            if _maybe_unstorable(key):
                require_storable(key, param=_spelt((place, key)))
            if isinstance(item, (str, dict, list)):
                _check(item, (place, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            if isinstance(item, (str, dict, list)):
                _check(item, (place, index))


def _spelt(place: _Place) -> str:
    """The dotted name of ``place`` (``links.0.code``); ``body`` for the body itself."""
    parts: list[str] = []
    while place is not None:
        place, part = place
        parts.append(str(part))
    return ".".join(reversed(parts)) or "body"
