"""The one JSON response of the API, rendered by orjson.

Starlette's ``JSONResponse`` renders with the standard library's encoder: for a commissions
page of 25 entries that was 0.82 million instructions, a tenth of the whole request; orjson
writes the same bytes in 0.10 million (``bench/history.md``). The output is what Starlette writes
(compact separators, UTF-8 left unescaped, keys in insertion order); the bodies hold strings,
integers, booleans, ``None``, lists and objects with string keys only (money is integers in minor
units, so there is no float for the two to render differently).
"""

from __future__ import annotations

from typing import Any

import orjson
from starlette.responses import Response


class JsonResponse(Response):
    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content)
