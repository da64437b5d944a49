"""Query strings: only the declared parameters, each at most once, converted strictly.

An unknown parameter is ``400 validation_error`` rather than silently ignored: a misspelt filter
would otherwise list everything, which is worse than an error.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from starlette.datastructures import QueryParams

from refcore.credentials import shown
from refcore.errors import ValidationError
from refcore_http.endpoints import QueryParam
from refcore_http.text_safety import check_text

_INTEGER = re.compile(r"^-?[0-9]{1,12}$")


def _convert(param: QueryParam, raw: str) -> Any:
    if param.enum:
        if raw not in param.enum:
            raise ValidationError(f"{param.name} must be one of: {', '.join(param.enum)}", param=param.name)
        return raw
    if param.type == "integer":
        if not _INTEGER.fullmatch(raw):
            raise ValidationError(f"{param.name} must be an integer", param=param.name)
        value = int(raw)
        low = param.minimum if param.minimum is not None else value
        high = param.maximum if param.maximum is not None else value
        if not low <= value <= high:
            raise ValidationError(
                f"{param.name} must be an integer from {param.minimum} to {param.maximum}", param=param.name
            )
        return value
    if not raw:
        raise ValidationError(f"{param.name} must not be empty", param=param.name)
    return raw


def parse_query(query: QueryParams, declared: Sequence[QueryParam]) -> dict[str, Any]:
    by_name = {p.name: p for p in declared}
    out: dict[str, Any] = {}
    for name in query:
        if name not in by_name:
            raise ValidationError(f"Unknown query parameter {shown(name)}", param=shown(name))
        values = query.getlist(name)
        if len(values) != 1:
            raise ValidationError(f"{shown(name)} may be given only once", param=shown(name))
        check_text(values[0], name)
        out[name] = _convert(by_name[name], values[0])
    for param in declared:
        if param.required and param.name not in out:
            raise ValidationError(f"{param.name} is required", param=param.name)
    return out
