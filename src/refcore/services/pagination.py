"""Cursor pagination of decisions 9: newest first, ``limit`` 1..100, scoped cursors."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Generic, TypeVar

from attrs import frozen

from refcore.errors import InvalidStartingAfter, ValidationError
from refcore.identifiers import prefix_of
from refcore.ports import Repository

M = TypeVar("M")

DEFAULT_LIMIT = 25
MAX_LIMIT = 100


@frozen
class Page(Generic[M]):
    data: list[M]
    has_more: bool


def require_limit(limit: object) -> int:
    if limit is None:
        return DEFAULT_LIMIT
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise ValidationError(f"limit must be an integer from 1 to {MAX_LIMIT}", param="limit")
    return limit


def paginate(
    repo: Repository[M],
    where: Mapping[str, object],
    *,
    prefix: str,
    limit: object = None,
    starting_after: str | None = None,
) -> Page[M]:
    """One page of ``repo`` records matching ``where``.

    A cursor is accepted only when it is a record of the same type that the same ``where``
    (App, mode, program, filters) would list; anything else is ``invalid_starting_after``.
    """
    size = require_limit(limit)
    if starting_after is not None:
        cursor = repo.get(starting_after) if prefix_of(starting_after) == prefix else None
        if cursor is None or any(getattr(cursor, k) != v for k, v in where.items()):
            raise InvalidStartingAfter(
                "starting_after must be the ID of an object from this same list",
                param="starting_after",
            )
    rows = repo.page(where, limit=size + 1, before=starting_after)
    return Page(data=rows[:size], has_more=len(rows) > size)
