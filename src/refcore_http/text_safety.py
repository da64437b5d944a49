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
    if "\x00" in text or not text.isascii():
        require_storable(text, param=param)


def check_decoded(value: Any, path: str = "") -> None:
    """Every string of a decoded JSON value, object keys included; ``param`` is the dotted path
    of the offending value (``links.0.code``), or the body itself when it is a bare string."""
    if isinstance(value, str):
        check_text(value, path or "body")
    elif isinstance(value, dict):
        for key, item in value.items():
            name = f"{path}.{key}" if path else key
            check_text(key, name)
            check_decoded(item, name)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            check_decoded(item, f"{path}.{index}" if path else str(index))
