"""One error catalog (decisions 8): every code the code base can raise is in ``errors.CATALOG``
with the kind it is raised with, or is an open-ended ``<resource>_not_found``.

The raise sites are found statically over every package under ``src/`` (the adapters raise
core errors too), so a new code cannot appear without joining the catalog.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

import refcore
from refcore import errors
from refcore.errors import CATALOG, ErrorKind, RefcoreError

SRC = Path(refcore.__file__).parent.parent
ERROR_CLASSES: dict[str, type[RefcoreError]] = {
    name: value
    for name, value in vars(errors).items()
    if isinstance(value, type) and issubclass(value, RefcoreError)
}
NOT_FOUND = re.compile(r"^[a-z][a-z_]*_not_found$")


def catalogued(code: str, kind: ErrorKind) -> bool:
    if NOT_FOUND.match(code):
        return kind is ErrorKind.NOT_FOUND
    return CATALOG.get(code) is kind


def raise_sites() -> Iterator[tuple[str, str | None, ErrorKind]]:
    """``(where, code, kind)`` for every construction of a catalog error; ``code`` is ``None``
    when it is computed at run time (``NotFound.of(resource, …)`` with a variable)."""
    for path in sorted(SRC.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            where = f"{path.relative_to(SRC)}:{node.lineno}"
            func = node.func
            if (
                isinstance(func, ast.Attribute)
                and func.attr == "of"
                and isinstance(func.value, ast.Name)
                and func.value.id in ERROR_CLASSES
            ):
                first = node.args[0] if node.args else None
                if isinstance(first, ast.Constant) and isinstance(first.value, str):
                    yield where, f"{first.value}_not_found", ErrorKind.NOT_FOUND
                else:
                    yield where, None, ErrorKind.NOT_FOUND
                continue
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
            if name not in ERROR_CLASSES:
                continue
            cls = ERROR_CLASSES[name]
            code: str | None = cls.code
            for keyword in node.keywords:
                if keyword.arg == "code":
                    value = keyword.value
                    code = value.value if isinstance(value, ast.Constant) else None
            yield where, code, cls.kind


def test_decisions_8_every_raised_code_is_in_the_catalog_with_its_kind() -> None:
    sites = list(raise_sites())
    assert len(sites) > 50, "the scan should see the raise sites of the services"
    codes = {code for _, code, _ in sites}
    assert {
        "dispute_conflict",
        "idempotency_conflict",
        "amount_exceeds_payment",
        "payment_not_found",
    } <= codes
    wrong = [
        f"{where}: {code} ({kind.value})"
        for where, code, kind in sites
        if code and not catalogued(code, kind)
    ]
    assert wrong == []


def test_decisions_8_catalog_checker_refuses_unknown_codes() -> None:
    assert not catalogued("teapot", ErrorKind.CONFLICT)
    assert not catalogued("dispute_conflict", ErrorKind.INVALID_INPUT)
    assert not catalogued("click_not_found", ErrorKind.CONFLICT)
    assert catalogued("click_not_found", ErrorKind.NOT_FOUND)


def test_decisions_8_every_concrete_error_class_is_catalogued() -> None:
    leaves = [cls for cls in ERROR_CLASSES.values() if not cls.__subclasses__()]
    assert [cls.__name__ for cls in leaves if not catalogued(cls.code, cls.kind)] == []


@pytest.mark.parametrize(
    ("code", "kind"),
    [
        ("invalid_json", ErrorKind.INVALID_INPUT),
        ("validation_error", ErrorKind.INVALID_INPUT),
        ("field_not_allowed", ErrorKind.INVALID_INPUT),
        ("amount_exceeds_payment", ErrorKind.INVALID_INPUT),
        ("currency_mismatch", ErrorKind.INVALID_INPUT),
        ("invalid_starting_after", ErrorKind.INVALID_INPUT),
        ("unauthenticated", ErrorKind.UNAUTHENTICATED),
        ("forbidden", ErrorKind.FORBIDDEN),
        ("promotion_code_not_allowed", ErrorKind.FORBIDDEN),
        ("live_key_required", ErrorKind.FORBIDDEN),
        ("not_found", ErrorKind.NOT_FOUND),
        ("method_not_allowed", ErrorKind.METHOD_NOT_ALLOWED),
        ("idempotency_conflict", ErrorKind.CONFLICT),
        ("dispute_conflict", ErrorKind.CONFLICT),
        ("mode_mismatch", ErrorKind.CONFLICT),
        ("revenue_source_conflict", ErrorKind.CONFLICT),
        ("state_conflict", ErrorKind.CONFLICT),
        ("body_too_large", ErrorKind.TOO_LARGE),
        ("rate_limited", ErrorKind.RATE_LIMITED),
        ("internal_error", ErrorKind.INTERNAL),
    ],
)
def test_decisions_8_catalog_holds_every_code_of_the_decisions(code: str, kind: ErrorKind) -> None:
    assert CATALOG[code] is kind


def test_decisions_8_not_found_of_builds_the_resource_code() -> None:
    error = errors.NotFound.of("payment", "pay_1")
    assert (error.code, error.kind) == ("payment_not_found", ErrorKind.NOT_FOUND)
    assert "pay_1" in error.message


def test_decisions_8_every_code_raised_is_in_the_api_documents_error_table() -> None:
    """A client learns the codes from ``docs/api.md``; six ``<resource>_not_found`` codes the
    server returned were missing from it (found by fuzzing the API)."""
    documented = set(
        re.findall(r"`([a-z][a-z_]*)`", (SRC.parent / "docs" / "api.md").read_text(encoding="utf-8"))
    )
    raised = {code for _, code, _ in raise_sites() if code}
    # The base classes' own codes are never sent: each raise names a concrete one.
    raised -= {cls.code for cls in ERROR_CLASSES.values() if cls.__subclasses__() and cls.code != "not_found"}
    assert sorted(raised - documented) == []
