"""docs/api.md keeps up with the code: every endpoint and every error code is documented."""

from __future__ import annotations

import re
from pathlib import Path

from refcore.errors import CATALOG, ErrorKind
from refcore_http.app import all_endpoints
from refcore_http.errors import STATUS_OF_KIND

_DOC = Path(__file__).resolve().parents[2] / "docs" / "api.md"


def _table_rows(text: str) -> list[list[str]]:
    return [
        [cell.strip().strip("`") for cell in line.strip().strip("|").split("|")]
        for line in text.splitlines()
        if line.startswith("|")
    ]


def test_the_docs_list_every_endpoint_with_its_credential() -> None:
    rows = {(r[0], r[1]): r[2] for r in _table_rows(_DOC.read_text()) if len(r) >= 3}
    for endpoint in all_endpoints():
        assert rows.get((endpoint.method, endpoint.path)) == endpoint.access.name, (
            endpoint.method,
            endpoint.path,
        )


def test_the_docs_list_every_error_code_with_its_status() -> None:
    rows = {r[0]: r[1] for r in _table_rows(_DOC.read_text()) if len(r) >= 2 and re.fullmatch(r"\d{3}", r[1])}
    for code, kind in CATALOG.items():
        assert rows.get(code) == str(STATUS_OF_KIND[kind]), code
    assert rows["<resource>_not_found"] == str(STATUS_OF_KIND[ErrorKind.NOT_FOUND])
