"""A published text's versions (program terms, an App's agreement): the current one and a page
of its history.

Versions are never edited or removed, and each may hold 100,000 characters, so the history is
paged like every other list (decisions 9): it had been answered whole, on every read and on
every publish, growing with each version without bound. The current version is the newest,
whichever page is asked for.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Generic, TypeVar

from attrs import frozen

from refcore.ports import Repository
from refcore.services.pagination import Page, paginate

M = TypeVar("M")


@frozen
class VersionHistory(Generic[M]):
    """What a read of the history answers: the current version and the page asked for."""

    #: The newest version, or ``None`` before the first is published.
    current: M | None
    #: One page of every version, newest first.
    page: Page[M]


def version_history(
    repo: Repository[M],
    where: Mapping[str, object],
    *,
    prefix: str,
    limit: object = None,
    starting_after: str | None = None,
) -> VersionHistory[M]:
    """The current version of the text ``where`` names, and one page of its history.

    Errors: ``validation_error`` (``limit``), ``invalid_starting_after``."""
    page = paginate(repo, where, prefix=prefix, limit=limit, starting_after=starting_after)
    if starting_after is None:
        current = page.data[0] if page.data else None
    else:
        newest = repo.page(where, limit=1, before=None)
        current = newest[0] if newest else None
    return VersionHistory(current=current, page=page)
