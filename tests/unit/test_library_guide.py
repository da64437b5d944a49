"""docs/library.md cannot rot: its tested example runs, and the names it mentions exist.

The guide marks each block of its example with ``<!-- tested -->`` on the line before the
opening fence. The blocks run in order in one namespace, as one program, in a temporary working
directory (the SQLite block creates ``./refcore.db`` there); a traceback points at the guide's
own line numbers. The same program also passes ``mypy --strict`` (a slow test).
"""

from __future__ import annotations

import builtins
import importlib
import pkgutil
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import refcore.services
from refcore.errors import CATALOG
from refcore.services.principal import PrincipalKind

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "library.md"

_FENCE = re.compile(r"^```(\w*)\n(.*?)^```\n", re.MULTILINE | re.DOTALL)
_TESTED = "<!-- tested -->"


class Block:
    def __init__(self, source: str, first_line: int, tested: bool) -> None:
        self.source = source
        self.first_line = first_line  # 1-based line of the block's first code line in the guide
        self.tested = tested


def python_blocks(text: str) -> list[Block]:
    """Every ```python block of ``text``, and whether the line before its fence marks it tested."""
    blocks = []
    for match in _FENCE.finditer(text):
        if match.group(1) != "python":
            continue
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        first_line = text.count("\n", 0, match.start(2)) + 1
        blocks.append(Block(match.group(2), first_line, before.strip() == _TESTED))
    return blocks


def example_program(text: str) -> str:
    """The tested blocks as one program, each at its own line numbers in the guide."""
    lines: list[str] = []
    for block in python_blocks(text):
        if block.tested:
            lines.extend([""] * (block.first_line - 1 - len(lines)))
            lines.extend(block.source.rstrip("\n").split("\n"))
    return "\n".join(lines) + "\n"


def run_example(text: str, workdir: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.chdir(workdir)
    namespace: dict[str, Any] = {"__name__": "library_guide"}
    exec(compile(example_program(text), str(GUIDE), "exec"), namespace)
    return namespace


def test_the_guide_has_a_tested_example() -> None:
    blocks = python_blocks(GUIDE.read_text())
    assert sum(block.tested for block in blocks) >= 5, "the <!-- tested --> markers are gone"


def test_every_python_block_of_the_guide_is_tested() -> None:
    untested = [block.first_line for block in python_blocks(GUIDE.read_text()) if not block.tested]
    assert not untested, f"python blocks without {_TESTED} at lines {untested}"


def test_the_guide_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    namespace = run_example(GUIDE.read_text(), tmp_path, monkeypatch)
    assert (tmp_path / "refcore.db").exists()  # the SQLite block ran where it was told to
    assert namespace["execution"].amount == 2500


def test_a_broken_example_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The test above would catch the example going wrong, not only crashing."""
    text = GUIDE.read_text()
    claim = "assert balance == Balance(available=2500)"
    assert claim in text
    broken = text.replace(claim, claim.replace("2500", "2501"))
    with pytest.raises(AssertionError):
        run_example(broken, tmp_path, monkeypatch)


# -- the names the guide mentions -----------------------------------------------------------------

_SERVICES = {info.name for info in pkgutil.iter_modules(refcore.services.__path__)}
#: Modules whose names the guide may mention without their module (``Runtime``, ``SqlStore``).
_EXPORTERS = (
    "refcore.models",
    "refcore.errors",
    "refcore.clocks",
    "refcore.ports",
    "refcore.identifiers",
    "refcore.rules.entry_status",
    "refcore.services.principal",
    "refcore.services.runtime",
    "refcore_memstore",
    "refcore_sqlstore",
)
_DOTTED = re.compile(r"^([A-Za-z_]\w*)((?:\.[A-Za-z_]\w*)+)(?:\(.*\))?$")
_CAMEL = re.compile(r"^[A-Z][a-z]\w*$")
_CAPS = re.compile(r"^[A-Z][A-Z_]+$")
_IDENTIFIER = re.compile(r"^[A-Za-z_]\w*$")
#: What looks like an error code; ``<resource>_not_found`` codes are open-ended and not checked.
_CODE = re.compile(
    r"^(?:[a-z_]+_(?:error|conflict|required|mismatch|allowed|limited)|forbidden|unauthenticated)$"
)


def _resolve_module_path(dotted: str) -> bool:
    """``refcore.x.y.Name.attr``: the longest importable module prefix, then attributes."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            target: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for name in parts[cut:]:
            if not hasattr(target, name):
                return False
            target = getattr(target, name)
        return True
    return False


def _exported(name: str) -> ModuleType | None:
    for module_name in _EXPORTERS:
        module = importlib.import_module(module_name)
        value = getattr(module, name, None)
        if value is not None and not isinstance(value, ModuleType):  # a name, not a submodule
            return module
    return None


def mentioned_names(text: str) -> list[str]:
    """The identifiers and dotted names the guide shows as code, outside its code blocks."""
    prose = _FENCE.sub("", text)
    return re.findall(r"`([^`\n]+)`", prose)


def _exists(token: str) -> bool:
    """Whether what ``token`` names exists; ``True`` for what is not a name of refcore's (a
    variable of the example such as ``clock.now()``, a file name such as ``api.md``, a route)."""
    dotted = _DOTTED.match(token)
    if dotted:
        head, rest = dotted.group(1), dotted.group(2)
        if head.startswith("refcore"):
            return _resolve_module_path(head + rest)
        if head in _SERVICES:
            return _resolve_module_path(f"refcore.services.{head}{rest}")
        module = _exported(head)
        return module is None or _resolve_module_path(f"{module.__name__}.{head}{rest}")
    if _CAMEL.match(token):
        return _exported(token) is not None or hasattr(builtins, token)
    if _CODE.match(token):
        return token in CATALOG
    if _CAPS.match(token):
        return hasattr(PrincipalKind, token)
    if token.startswith("refcore") and _IDENTIFIER.match(token):
        return _resolve_module_path(token)
    return True


def unknown_names(text: str) -> list[str]:
    return [token for token in mentioned_names(text) if not _exists(token)]


def test_every_name_the_guide_mentions_exists() -> None:
    assert unknown_names(GUIDE.read_text()) == []


def test_a_misspelt_name_is_found() -> None:
    text = (
        "`refcore.services.revenue.record_paymnt`, `tenancy.create_sesion`, `SqlStre`, `Runtime.reed`, "
        "`idempotent_conflict`, `APP_KEYS`, `refcore_memstor`, `state_conflict`, `APP_KEY`"
    )
    assert unknown_names(text) == [
        "refcore.services.revenue.record_paymnt",
        "tenancy.create_sesion",
        "SqlStre",
        "Runtime.reed",
        "idempotent_conflict",
        "APP_KEYS",
        "refcore_memstor",
    ]


def test_the_guide_links_exist() -> None:
    text = GUIDE.read_text()
    for target, anchor in re.findall(r"\]\(([\w./-]+\.md)(?:#([\w-]+))?\)", text):
        linked = GUIDE.parent / target
        assert linked.exists(), target
        if anchor:
            headings = re.findall(r"^#+ (.+)$", linked.read_text(), re.MULTILINE)
            slugs = {re.sub(r"[^\w\- ]", "", h).strip().lower().replace(" ", "-") for h in headings}
            assert anchor in slugs, f"{target}#{anchor}"


# -- mypy --strict ----------------------------------------------------------------------------------


@pytest.mark.slow
def test_the_guide_example_passes_mypy_strict(tmp_path: Path) -> None:
    pytest.importorskip("mypy")
    program = tmp_path / "library_guide.py"
    program.write_text(example_program(GUIDE.read_text()))
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path / "cache"), str(program)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
