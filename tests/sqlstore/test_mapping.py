"""Rows to models (``refcore_sqlstore.mapping``): every model, every field, the exact type back.

Reading a row converts only what the column types do not already give (enums, tuples, the
flattened commission terms). These tests hold that plan to what the models declare: a field
read back must be equal *and* of the same type (a ``1`` for ``True`` or a string for an enum
member would compare equal in places and render wrong in JSON).
"""

from __future__ import annotations

import enum
import types
import typing
from datetime import UTC, datetime
from typing import Any

import attrs
import cattrs
import pytest

from refcore.models import Mode
from refcore_sqlstore.mapping import RowMapper
from refcore_sqlstore.unit_of_work import MODELS, mappers

MAPPERS = mappers()


def sample(field_type: Any, *, none: bool) -> Any:
    """A value of ``field_type``: ``None`` for an optional field when ``none``, else a real one."""
    if typing.get_origin(field_type) in (typing.Union, types.UnionType):
        if none:
            return None
        (inner,) = [arg for arg in typing.get_args(field_type) if arg is not type(None)]
        return sample(inner, none=none)
    if typing.get_origin(field_type) is tuple:
        return ("first", "second")
    if typing.get_origin(field_type) is dict:
        return {"amount": 2900, "nested": {"ok": True}}
    if isinstance(field_type, type) and issubclass(field_type, enum.Enum):
        return list(field_type)[-1]
    if isinstance(field_type, type) and attrs.has(field_type):
        return build(field_type, none=none)
    plain = {str: "text", int: 2900, bool: True, bytes: b"\x00sealed"}
    return datetime(2026, 3, 1, tzinfo=UTC) if field_type is datetime else plain[field_type]


def build(model: type[Any], *, none: bool) -> Any:
    fields = attrs.fields(attrs.resolve_types(model))
    return model(**{field.name: sample(field.type, none=none) for field in fields})


def as_the_database_returns(row: dict[str, Any]) -> dict[str, Any]:
    """What a driver gives back: an enum's plain value, and a list where a tuple went into JSON."""

    def stored(value: Any) -> Any:
        if isinstance(value, enum.Enum):
            return value.value
        return list(value) if isinstance(value, tuple) else value

    return {column: stored(value) for column, value in row.items()}


@pytest.mark.parametrize("none", [False, True], ids=["values", "nones"])
@pytest.mark.parametrize("table", sorted(MODELS))
def test_every_model_reads_back_equal_with_every_field_of_its_declared_type(table: str, none: bool) -> None:
    mapper: RowMapper[Any] = MAPPERS[table]
    item = build(mapper.model, none=none)

    read = mapper.from_row(as_the_database_returns(mapper.to_row(item)))

    assert read == item
    for field in attrs.fields(mapper.model):
        assert type(getattr(read, field.name)) is type(getattr(item, field.name)), field.name


@pytest.mark.parametrize("none", [False, True], ids=["values", "nones"])
@pytest.mark.parametrize("table", sorted(MODELS))
def test_a_row_given_as_values_in_column_order_reads_as_the_same_model(table: str, none: bool) -> None:
    """List reads hand the mapper tuples in the table's column order instead of dictionaries."""
    mapper: RowMapper[Any] = MAPPERS[table]
    item = build(mapper.model, none=none)
    row = as_the_database_returns(mapper.to_row(item))
    assert set(mapper.columns) == set(row)

    read = mapper.from_columns(tuple(row[column] for column in mapper.columns))

    assert read == item
    for field in attrs.fields(mapper.model):
        assert type(getattr(read, field.name)) is type(getattr(item, field.name)), field.name


def test_a_stored_value_the_enum_does_not_know_is_refused_by_name() -> None:
    mapper: RowMapper[Any] = MAPPERS["commission_entries"]
    row = as_the_database_returns(mapper.to_row(build(mapper.model, none=False)))
    assert type(row["mode"]) is str and row["mode"] in {mode.value for mode in Mode}

    with pytest.raises(ValueError, match="'sandbox' is not a valid Mode"):
        mapper.from_row({**row, "mode": "sandbox"})


def unstructured_by_cattrs(mapper: RowMapper[Any], item: Any) -> dict[str, Any]:
    """The row as ``cattrs`` unstructures the model, with a field holding an attrs class
    flattened into ``<field>_<inner field>`` columns: what ``to_row`` returned before it was
    planned per model (``cattrs`` left the members of a ``StrEnum`` as they were)."""
    converter = cattrs.Converter()
    converter.register_unstructure_hook(datetime, lambda value: value)
    converter.register_unstructure_hook(enum.Enum, lambda value: value.value)
    row: dict[str, Any] = converter.unstructure(item)
    for name, value in list(row.items()):
        if isinstance(value, dict) and attrs.has(attrs.fields_dict(mapper.model)[name].type):
            del row[name]
            row.update({f"{name}_{inner}": inner_value for inner, inner_value in value.items()})
    return row


#: What a row's values may be: what the drivers and the JSON column take as they are.
PLAIN = (str, int, bool, datetime, bytes, dict, list, type(None))


@pytest.mark.parametrize("none", [False, True], ids=["values", "nones"])
@pytest.mark.parametrize("table", sorted(MODELS))
def test_a_models_values_are_its_rows_values_in_the_written_columns_order(table: str, none: bool) -> None:
    """What a batch insert sends (``to_values``) is the row, column for column, value for value."""
    mapper: RowMapper[Any] = MAPPERS[table]
    item = build(mapper.model, none=none)
    row = mapper.to_row(item)
    values = mapper.to_values(item)
    assert sorted(mapper.written_columns) == sorted(row)
    assert dict(zip(mapper.written_columns, values, strict=True)) == row
    values[0] = "changed"  # the caller's own list: the next one is new
    assert mapper.to_values(item)[0] == row[mapper.written_columns[0]]


@pytest.mark.parametrize("none", [False, True], ids=["values", "nones"])
@pytest.mark.parametrize("table", sorted(MODELS))
def test_a_model_writes_the_row_cattrs_unstructures_with_plain_values_only(table: str, none: bool) -> None:
    """The planned write gives the same columns and values, and only plain ones: a string where
    an enum member was (drivers must never see one), a list where a tuple was."""
    mapper: RowMapper[Any] = MAPPERS[table]
    item = build(mapper.model, none=none)

    row = mapper.to_row(item)

    assert row == unstructured_by_cattrs(mapper, item)
    for column, value in row.items():
        assert type(value) in PLAIN, (column, type(value))
