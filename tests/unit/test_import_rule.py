"""The import rule (docs/architecture.md): ``refcore`` imports no adapter and no I/O library.

Checked twice: statically, over the syntax tree of every module (``import x``, ``from x import
y``, and ``importlib.import_module("x")`` / ``__import__("x")`` with a literal name), and at run
time, by importing every ``refcore`` module in a fresh interpreter and looking at
``sys.modules``, which also catches an indirect import through a third-party package.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import refcore

FORBIDDEN_ROOTS = frozenset(
    {"sqlalchemy", "starlette", "uvicorn", "httpx", "psycopg", "psycopg2", "alembic", "stripe"}
)
PACKAGE_DIR = Path(refcore.__file__).parent


def forbidden(module: str) -> bool:
    root = module.split(".")[0]
    return root in FORBIDDEN_ROOTS or root.startswith("refcore_")


def imported_modules(source: str) -> Iterator[str]:
    """Every absolute module name a piece of source imports."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if name in {"import_module", "__import__"} and isinstance(node.args[0].value, str):
                yield node.args[0].value


def modules() -> list[Path]:
    return sorted(PACKAGE_DIR.rglob("*.py"))


def test_import_rule_checker_sees_every_kind_of_import() -> None:
    source = (
        "import sqlalchemy.orm\n"
        "from starlette.requests import Request\n"
        "from . import sibling\n"
        "import refcore_memstore as m\n"
        "importlib.import_module('httpx')\n"
        "__import__('psycopg')\n"
        "def f():\n    from alembic import op\n"
    )
    found = sorted(m for m in imported_modules(source) if forbidden(m))
    assert found == [
        "alembic",
        "httpx",
        "psycopg",
        "refcore_memstore",
        "sqlalchemy.orm",
        "starlette.requests",
    ]
    assert not forbidden("refcore.models") and not forbidden("attrs") and not forbidden("cryptography.fernet")


def test_import_rule_refcore_modules_import_no_adapter_or_io_library() -> None:
    files = modules()
    assert len(files) > 20, f"expected the whole refcore package under {PACKAGE_DIR}"
    violations = [
        f"{path.relative_to(PACKAGE_DIR.parent)}: {name}"
        for path in files
        for name in imported_modules(path.read_text(encoding="utf-8"))
        if forbidden(name)
    ]
    assert violations == []


def test_import_rule_importing_all_of_refcore_loads_no_adapter_or_io_library() -> None:
    script = (
        "import importlib, json, pkgutil, sys, refcore\n"
        "for info in pkgutil.walk_packages(refcore.__path__, 'refcore.'):\n"
        "    importlib.import_module(info.name)\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    loaded = json.loads(done.stdout)
    assert "refcore.services.revenue" in loaded
    assert [name for name in loaded if forbidden(name)] == []
