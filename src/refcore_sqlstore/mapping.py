"""Rows to models and back: one small explicit mapper per table, built from the attrs fields.

A model field maps to the column of the same name. A field holding another attrs class (only
``Program.commission`` today) is flattened into one column per inner field, named
``<field>_<inner field>`` (``commission_type``, ``commission_value``). Enums go to the database
as their string values and come back as enum members (cattrs restores them from the field type);
tuples come back from JSON lists as tuples.

Each mapper checks when it is built that its table has exactly the columns its model needs, so
a model field added without a column (or a migration) fails at start-up, not on the first write.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Generic, TypeVar

import attrs
import cattrs
from sqlalchemy import Table

M = TypeVar("M")


def _converter() -> cattrs.Converter:
    converter = cattrs.Converter()
    # Datetimes are handled by the column type (UtcDateTime), so they pass through untouched.
    converter.register_unstructure_hook(datetime, lambda value: value)
    converter.register_structure_hook(datetime, lambda value, _: value)
    # Plain strings: drivers must never see an Enum (psycopg would dump its *name*).
    converter.register_unstructure_hook(enum.Enum, lambda value: value.value)
    return converter


_CONVERTER = _converter()


def db_value(value: object) -> object:
    """A filter value as the database stores it (enum members become their string value)."""
    return value.value if isinstance(value, enum.Enum) else value


def _nested_fields(model: type) -> dict[str, tuple[str, ...]]:
    """``{field: inner field names}`` for every field whose type is an attrs class."""
    resolved = attrs.resolve_types(model)
    nested: dict[str, tuple[str, ...]] = {}
    for field in attrs.fields(resolved):
        if isinstance(field.type, type) and attrs.has(field.type):
            nested[field.name] = tuple(inner.name for inner in attrs.fields(field.type))
    return nested


class RowMapper(Generic[M]):
    """Converts one model class to rows of one table and back."""

    def __init__(self, model: type[M], table: Table) -> None:
        self.model = model
        self.table = table
        self._nested = _nested_fields(model)
        wanted: set[str] = set()
        model_class: Any = model
        for field in attrs.fields(model_class):
            if field.name in self._nested:
                wanted.update(f"{field.name}_{inner}" for inner in self._nested[field.name])
            else:
                wanted.add(field.name)
        present = set(table.columns.keys())
        if wanted != present:
            raise RuntimeError(
                f"table {table.name} does not match model {model.__name__}: "
                f"missing columns {sorted(wanted - present)}, unknown columns {sorted(present - wanted)}"
            )
        self.queryable = frozenset(present - {f"{n}_{i}" for n, inner in self._nested.items() for i in inner})

    def to_row(self, item: M) -> dict[str, Any]:
        row: dict[str, Any] = _CONVERTER.unstructure(item)
        for name, inner_names in self._nested.items():
            inner = row.pop(name)
            for inner_name in inner_names:
                row[f"{name}_{inner_name}"] = inner[inner_name]
        return row

    def from_row(self, row: Mapping[Any, Any]) -> M:
        values: dict[str, Any] = dict(row)
        for name, inner_names in self._nested.items():
            values[name] = {inner: values.pop(f"{name}_{inner}") for inner in inner_names}
        return _CONVERTER.structure(values, self.model)

    def column(self, field: str) -> str:
        """The column a filter on ``field`` reads; only plain (not flattened) fields are queryable."""
        if field not in self.queryable:
            raise ValueError(f"{self.model.__name__} cannot be filtered on {field!r}")
        return field
