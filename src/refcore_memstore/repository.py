"""A repository over one in-memory table, with writes staged until the unit of work commits."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from functools import cache
from typing import Generic, TypeVar

import attrs

from refcore.errors import ConcurrentWrite

M = TypeVar("M")


def _matches(item: object, where: Mapping[str, object]) -> bool:
    return all(getattr(item, field) == value for field, value in where.items())


@cache
def _fields_of(model: type) -> frozenset[str]:
    return frozenset(attrs.fields_dict(model))


class MemoryRepository(Generic[M]):
    def __init__(
        self,
        committed: dict[str, object],
        *,
        model: type,
        unique_keys: tuple[tuple[str, ...], ...] = (),
        append_only: bool = False,
    ) -> None:
        self._committed = committed
        self._staged: dict[str, M] = {}
        self._model = model
        self._unique_keys = unique_keys
        self._append_only = append_only

    def _require_fields(self, where: Mapping[str, object], *, use: str = "filtered on") -> None:
        """Refuse a filter on a field the model lacks, as the SQL store does, whether or not the
        table holds a record: an empty table had answered ``[]`` and a full one raised
        ``AttributeError``, so a misspelt filter passed every test that ran on no data."""
        fields = _fields_of(self._model)
        for field in where:
            if field not in fields:
                raise ValueError(f"{self._model.__name__} cannot be {use} {field!r}")

    # -- reads -----------------------------------------------------------------------------

    def _all(self) -> Iterator[M]:
        for id, item in self._committed.items():
            if id not in self._staged:
                yield item  # type: ignore[misc]
        yield from self._staged.values()

    def get(self, id: str, *, for_update: bool = False) -> M | None:
        if not isinstance(id, str):
            return None  # as the SQL store: a list or a number names no record
        if id in self._staged:
            return self._staged[id]
        return self._committed.get(id)  # type: ignore[return-value]

    def find_one(self, where: Mapping[str, object], *, for_update: bool = False) -> M | None:
        self._require_fields(where)
        for item in self._all():
            if _matches(item, where):
                return item
        return None

    def find_all(self, where: Mapping[str, object]) -> list[M]:
        self._require_fields(where)
        return sorted(
            (i for i in self._all() if _matches(i, where)),
            key=lambda i: getattr(i, "id"),  # noqa: B009
        )

    def page(self, where: Mapping[str, object], *, limit: int, before: str | None) -> list[M]:
        self._require_fields(where)
        rows = [
            i
            for i in self._all()
            if _matches(i, where) and (before is None or getattr(i, "id") < before)  # noqa: B009
        ]
        rows.sort(key=lambda i: getattr(i, "id"), reverse=True)  # noqa: B009
        return rows[:limit]

    # -- writes ----------------------------------------------------------------------------

    def add(self, item: M) -> None:
        id = getattr(item, "id")  # noqa: B009
        if self.get(id) is not None:
            raise ConcurrentWrite(f"duplicate id {id}")
        self._check_unique(item)
        self._staged[id] = item

    def add_all(self, items: Sequence[M]) -> None:
        for item in items:
            self.add(item)

    def replace(self, item: M) -> None:
        if self._append_only:
            raise TypeError("this repository is append-only")
        id = getattr(item, "id")  # noqa: B009
        if self.get(id) is None:
            raise KeyError(id)
        self._check_unique(item)
        self._staged[id] = item

    def update_where(self, where: Mapping[str, object], changes: Mapping[str, object]) -> int:
        """Each match replaced by a copy with ``changes``; refused, as the SQL store refuses it,
        on an append-only table or an unknown field even when nothing matches."""
        if self._append_only:
            raise TypeError("this repository is append-only")
        self._require_fields(where)
        self._require_fields(changes, use="updated on")
        matched = [item for item in self._all() if _matches(item, where)]
        for item in matched:
            self.replace(attrs.evolve(item, **changes))  # type: ignore[misc]
        return len(matched)

    def _check_unique(self, item: M) -> None:
        id = getattr(item, "id")  # noqa: B009
        for key in self._unique_keys:
            values = tuple(getattr(item, f) for f in key)
            if None in values:
                continue
            for other in self._all():
                if getattr(other, "id") != id and tuple(getattr(other, f) for f in key) == values:  # noqa: B009
                    raise ConcurrentWrite(f"unique key {key} already taken")

    # -- unit of work ----------------------------------------------------------------------

    def flush_into(self, committed: dict[str, object]) -> None:
        committed.update(self._staged)
        self._staged.clear()

    def discard(self) -> None:
        self._staged.clear()
