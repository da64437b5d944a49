"""Rows to models and back: one small explicit mapper per table, built from the attrs fields.

A model field maps to the column of the same name. A field holding another attrs class (only
``Program.commission`` today) is flattened into one column per inner field, named
``<field>_<inner field>`` (``commission_type``, ``commission_value``). Enums go to the database
as their string values and come back as enum members (cattrs restores them from the field type);
tuples come back from JSON lists as tuples.

Each mapper checks when it is built that its table has exactly the columns its model needs, so
a model field added without a column (or a migration) fails at start-up, not on the first write.

Reading a row is the hot direction (a commissions page maps 25 rows, a payment about ten), so
it is planned once per model: the column types already give most fields their final value
(strings, integers, booleans, aware datetimes, bytes, JSON objects), and only enums, tuples and
flattened fields are converted. That costs 1.8 µs a commission entry against 4.6 through a
``cattrs`` structure of the row, which called a hook for every field (``bench/history.md``).
Writing a row is planned the same way (:class:`_WritePlan`): a ``cattrs`` unstructure called a
hook for every field and copied an event's ``data`` value by value, about forty calls for each
of the two events a payment writes.
"""

from __future__ import annotations

import enum
import operator
import types
import typing
from collections.abc import Callable, Mapping, Sequence
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


#: Field types whose column value is the field value as the column type returns it.
_AS_STORED: frozenset[object] = frozenset({str, int, bool, datetime, bytes})

#: A row, read by column name (a mapping) or by position in the table's columns (a tuple).
Row = Mapping[Any, Any] | Sequence[Any]
#: Reads one field's value from a whole row.
FieldReader = Callable[[Any], Any]
#: Where a column's value sits in a row: the row's key for that column.
ColumnKey = Callable[[str], Any]


def _stored_as_is(inner: Any) -> bool:
    """Whether a field of this (not optional) type has its column's value as its own value,
    read or written."""
    return inner in _AS_STORED or typing.get_origin(inner) is dict


def _optional_inner(field_type: Any) -> tuple[Any, bool]:
    """``(T, True)`` for ``T | None``; ``(field_type, False)`` for anything else."""
    if typing.get_origin(field_type) in (typing.Union, types.UnionType):
        args = [arg for arg in typing.get_args(field_type) if arg is not type(None)]
        if len(args) == 1:
            return args[0], True
    return field_type, False


class _Members(dict[Any, enum.Enum]):
    """An enum's members by value; a value the enum does not know raises the enum's own
    ``ValueError``, which names it (``Enum(value)`` itself costs 0.5 µs, a lookup 0.05)."""

    def __init__(self, enum_type: type[enum.Enum]) -> None:
        super().__init__((member.value, member) for member in enum_type)
        self._enum_type = enum_type

    def __missing__(self, value: Any) -> enum.Enum:
        return self._enum_type(value)


def _enum_reader(key: Any, enum_type: type[enum.Enum], *, optional: bool) -> FieldReader:
    members = _Members(enum_type)
    if optional:
        return lambda row: None if (value := row[key]) is None else members[value]
    return lambda row: members[row[key]]


def _field_reader(
    name: str, field_type: Any, nested: tuple[str, ...] | None, key: ColumnKey
) -> FieldReader | None:
    """How a field is read from its row; ``None`` when its column's value is the field's value."""
    if nested is not None:
        keys = {inner: key(f"{name}_{inner}") for inner in nested}
        return lambda row: _CONVERTER.structure({inner: row[k] for inner, k in keys.items()}, field_type)
    inner, optional = _optional_inner(field_type)
    if _stored_as_is(inner):
        return None
    if isinstance(inner, type) and issubclass(inner, enum.Enum):
        return _enum_reader(key(name), inner, optional=optional)
    column = key(name)
    return lambda row: _CONVERTER.structure(row[column], field_type)


class _ReadPlan:
    """How one model is read from one kind of row, worked out once.

    One ``itemgetter`` takes every field's value in ``__init__`` order (a flattened field takes
    its first column as a placeholder), and only the fields whose value needs converting are
    then read again, by their own readers."""

    def __init__(self, model: Any, nested: Mapping[str, tuple[str, ...]], key: ColumnKey) -> None:
        fields = attrs.fields(attrs.resolve_types(model))
        if any(field.kw_only or not field.init or field.alias != field.name for field in fields):
            raise RuntimeError(f"{model.__name__}: every field must be a positional __init__ argument")
        if len(fields) < 2:
            raise RuntimeError(f"{model.__name__}: a mapped model has at least two fields")
        keys: list[Any] = []
        conversions: list[tuple[int, FieldReader]] = []
        for position, field in enumerate(fields):
            inner = nested.get(field.name)
            keys.append(key(f"{field.name}_{inner[0]}" if inner else field.name))
            reader = _field_reader(field.name, field.type, inner, key)
            if reader is not None:
                conversions.append((position, reader))
        self._model = model
        self._pick = operator.itemgetter(*keys)
        self._conversions = tuple(conversions)

    def read(self, row: Row) -> Any:
        values = list(self._pick(row))
        for position, read in self._conversions:
            values[position] = read(row)
        return self._model(*values)


def _field_writer(field_type: Any) -> Callable[[Any], Any] | None:
    """How a (not ``None``) field value becomes its column's value; ``None`` when it already is.

    An event's ``data`` goes in as it is: it is a representation, built of JSON's own types
    (enums as their values), and the JSON column serializes it; the driver never sees it."""
    inner, _ = _optional_inner(field_type)
    if _stored_as_is(inner):
        return None
    if isinstance(inner, type) and issubclass(inner, enum.Enum):
        return operator.attrgetter("value")  # drivers must never see an Enum (see _converter)
    if typing.get_origin(inner) is tuple:
        return list  # as a JSON list, as it reads back
    return lambda value: _CONVERTER.unstructure(value, inner)


class _WritePlan:
    """How one model becomes a row (``{column: value}``), worked out once.

    One ``attrgetter`` takes every column's value (a flattened field's inner values by their
    dotted path), and only the values whose type needs it are then converted."""

    def __init__(self, model: Any, nested: Mapping[str, tuple[str, ...]]) -> None:
        columns: list[str] = []
        paths: list[str] = []
        conversions: list[tuple[str, Callable[[Any], Any]]] = []
        for field in attrs.fields(attrs.resolve_types(model)):
            if field.name in nested:
                parts = [
                    (f"{field.name}_{inner.name}", f"{field.name}.{inner.name}", inner.type)
                    for inner in attrs.fields(attrs.resolve_types(field.type))
                ]
            else:
                parts = [(field.name, field.name, field.type)]
            for column, path, field_type in parts:
                columns.append(column)
                paths.append(path)
                writer = _field_writer(field_type)
                if writer is not None:
                    conversions.append((column, writer))
        if len(paths) < 2:
            raise RuntimeError(f"{model.__name__}: a mapped model has at least two columns")
        self.columns = tuple(columns)
        self._pick = operator.attrgetter(*paths)
        position = {column: index for index, column in enumerate(columns)}
        self._conversions_by_position = tuple((position[column], convert) for column, convert in conversions)

    def write(self, item: Any) -> dict[str, Any]:
        return dict(zip(self.columns, self.write_values(item), strict=True))

    def write_values(self, item: Any) -> list[Any]:
        """The values of :meth:`write`, in the order of :attr:`columns`, without the dictionary."""
        values = list(self._pick(item))
        for position, convert in self._conversions_by_position:
            value = values[position]
            if value is not None:
                values[position] = convert(value)
        return values


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
        #: The table's columns in order: what ``SELECT`` of the whole table returns.
        self.columns = tuple(table.columns.keys())
        positions = {column: index for index, column in enumerate(self.columns)}
        self._by_name = _ReadPlan(model_class, self._nested, lambda column: column)
        self._by_position = _ReadPlan(model_class, self._nested, positions.__getitem__)
        self._writer = _WritePlan(model_class, self._nested)

    def to_row(self, item: M) -> dict[str, Any]:
        return self._writer.write(item)

    @property
    def written_columns(self) -> tuple[str, ...]:
        """The columns :meth:`to_values` gives values for, in its order."""
        return self._writer.columns

    def to_values(self, item: M) -> list[Any]:
        """:meth:`to_row`'s values in the order of :attr:`written_columns`: a new list, which the
        caller may change in place. A batch's rows go to the driver so, with no dictionary a row
        (:meth:`refcore_sqlstore.statements.TableStatements.add_rows`)."""
        return self._writer.write_values(item)

    def from_row(self, row: Mapping[Any, Any]) -> M:
        """The model of a row given as ``{column name: value}``."""
        item: M = self._by_name.read(row)
        return item

    def from_columns(self, values: Sequence[Any]) -> M:
        """The model of a row given as its values in the order of :attr:`columns`: what a
        list read fetches, without building a dictionary per row (1.7 against 0.4 µs a row)."""
        item: M = self._by_position.read(values)
        return item

    def column(self, field: str) -> str:
        """The column a filter on ``field`` reads; only plain (not flattened) fields are queryable."""
        if field not in self.queryable:
            raise ValueError(f"{self.model.__name__} cannot be filtered on {field!r}")
        return field
