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
    """The page size: ``None`` is the default (25); anything but an integer from 1 to 100 is refused rather
    than clamped, so a caller never takes a short page for the whole list.

    Errors: ``validation_error`` (``limit``)."""
    if limit is None:
        return DEFAULT_LIMIT
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise ValidationError(f"limit must be an integer from 1 to {MAX_LIMIT}", param="limit")
    return limit


#: Filters on what changes as a record lives: an affiliate approved or disabled, a dispute won,
#: a link deleted. The last record of a page may have left its list by the time the next page is
#: asked for (a loop that approves each page of ``status=pending`` makes it leave); its ID still
#: marks the place to go on from, as a Stripe cursor does, so only the other filters (App, mode,
#: program, affiliate…, which never change) decide whether a cursor belongs to the list.
STATE_FILTERS = frozenset({"status", "deleted_at"})


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
    (App, mode, program, filters) lists or listed: it may have left the list since by a change
    of state (:data:`STATE_FILTERS`). Anything else is ``invalid_starting_after``.

    Errors: ``validation_error`` (``limit``), ``invalid_starting_after``.
    """
    size = require_limit(limit)
    if starting_after is not None:
        cursor = repo.get(starting_after) if prefix_of(starting_after) == prefix else None
        if cursor is None or any(getattr(cursor, k) != v for k, v in where.items() if k not in STATE_FILTERS):
            raise not_of_this_list()
    rows = repo.page(where, limit=size + 1, before=starting_after)
    return Page(data=rows[:size], has_more=len(rows) > size)


def empty_page(*, limit: object = None, starting_after: str | None = None) -> Page[M]:
    """The page of a list that holds nothing for this caller (a user of no organization).

    Its query is checked as any list's: ``limit`` must be valid, and no ID can be a cursor of a
    list that holds nothing. Errors: ``validation_error`` (``limit``), ``invalid_starting_after``."""
    require_limit(limit)
    if starting_after is not None:
        raise not_of_this_list()
    return Page(data=[], has_more=False)


def not_of_this_list() -> InvalidStartingAfter:
    """The refusal of a ``starting_after`` that is no object of the list asked for: every list
    answers it in the same words, whether the ID names nothing or something of another scope."""
    return InvalidStartingAfter(
        "starting_after must be the ID of an object from this same list", param="starting_after"
    )
