"""``column IN (the IDs of one list)`` with the whole list as one bound parameter.

SQLAlchemy's ``in_(bindparam(..., expanding=True))`` renders one placeholder per ID at every
execution, so its SQL text is new whenever the list's length is, and it cannot be compiled once
(:mod:`refcore_sqlstore.driver`). Here the list is a single parameter instead, and the SQL is
fixed:

- on SQLite, ``column IN (SELECT value FROM json_each(?))`` with the list as JSON text;
- on PostgreSQL, ``column = ANY(%(ids)s::TEXT[])`` with the list as an array.

Both look each ID up in the column's index, as the expanded list did
(``tests/sqlstore/test_query_plans.py``).

On PostgreSQL the array goes over as PostgreSQL's own array text (``{"id1","id2"}``), which the
server parses in C. psycopg's own list dumper works element by element in Python: a 25-ID list
cost 65 µs more of the process's CPU per execution than the text (``bench/history.md``), and a
commissions page sends two such lists.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import psycopg
from psycopg.adapt import Dumper
from sqlalchemy import Dialect, Text, bindparam
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.elements import BindParameter, ColumnElement
from sqlalchemy.sql.visitors import InternalTraversal
from sqlalchemy.types import Boolean, TypeDecorator, TypeEngine


class IdList(TypeDecorator[Sequence[str]]):
    """A list of IDs bound as one parameter: JSON text on SQLite, a text array on PostgreSQL."""

    impl = Text
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name == "postgresql":
            return dialect.type_descriptor(ARRAY(Text()))
        return dialect.type_descriptor(Text())

    def bind_processor(self, dialect: Dialect) -> Callable[[Any], Any] | None:
        """On PostgreSQL, the array's text (:func:`text_array`) in place of ``ARRAY``'s own
        processing, which would hand psycopg a list to dump element by element."""
        if dialect.name == "postgresql":
            return lambda value: None if value is None else text_array(value)
        return super().bind_processor(dialect)

    def process_bind_param(self, value: Sequence[str] | None, dialect: Dialect) -> Any:
        if value is None:
            return None
        return json.dumps([str(id) for id in value])


class TextArray(str):
    """PostgreSQL's input text of a ``TEXT[]``, sent as one (see :class:`_TextArrayDumper`)."""


def text_array(ids: Sequence[str]) -> TextArray:
    """``{"id1","id2"}``: every element in double quotes, with its backslashes and double
    quotes escaped by a backslash, so any string (commas, braces, spaces, ``NULL``) stays one
    element, as it is."""
    quoted = ('"' + str(id).replace("\\", "\\\\").replace('"', '\\"') + '"' for id in ids)
    return TextArray("{" + ",".join(quoted) + "}")


class _TextArrayDumper(Dumper):
    """Sends a :class:`TextArray` as it is, typed ``text[]``; registered for that class alone,
    on every psycopg connection (nothing else in the process is dumped differently)."""

    oid = psycopg.adapters.types["text"].array_oid

    def dump(self, obj: Any) -> bytes:
        return str(obj).encode("utf-8")


psycopg.adapters.register_dumper(TextArray, _TextArrayDumper)


class InIdList(ColumnElement[bool]):
    """``column`` is one of the IDs bound to ``name`` (see the module docstring)."""

    inherit_cache = True
    type = Boolean()
    #: A condition in itself: SQLite, which has no boolean type, must not get ``= 1`` after it.
    _is_implicitly_boolean = True
    _traverse_internals = [  # noqa: RUF012 (SQLAlchemy declares it so)
        ("column", InternalTraversal.dp_clauseelement),
        ("ids", InternalTraversal.dp_clauseelement),
    ]

    def __init__(self, column: ColumnElement[Any], name: str) -> None:
        self.column = column
        self.ids: BindParameter[Sequence[str]] = bindparam(name, type_=IdList())


def in_id_list(column: ColumnElement[Any], name: str) -> InIdList:
    return InIdList(column, name)


@compiles(InIdList)
def _in_json_each(element: InIdList, compiler: SQLCompiler, **kw: Any) -> str:
    column = compiler.process(element.column, **kw)
    return f"{column} IN (SELECT value FROM json_each({compiler.process(element.ids, **kw)}))"


@compiles(InIdList, "postgresql")
def _equals_any(element: InIdList, compiler: SQLCompiler, **kw: Any) -> str:
    return f"{compiler.process(element.column, **kw)} = ANY({compiler.process(element.ids, **kw)})"
