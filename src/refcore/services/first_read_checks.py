"""A lookup that must find its record, answered by the first lookup of a unit of work.

A keyed write on PostgreSQL read its key in a statement of its own before its work's first read
(``bench/history.md``, twenty-ninth session). When the server already knows what a key
authenticates as (its App, mode and kind never change), what is left to ask the database is
whether the key still stands (not revoked): one more lookup, which the work's first
:meth:`~refcore.ports.UnitOfWork.look_up` can carry in its statement.

:class:`FirstReadCheck` is that lookup, and :class:`CheckingUnitOfWork` the unit of work that
answers it:

- joined to its first ``look_up`` (a payment's and an identify's first read; a refund's second,
  after its payment's row lock);
- else alone, before the first write the work stages (on PostgreSQL it then goes ahead of the
  inserts, in autocommit, not after them in their transaction), or before the commit;
- a check that finds nothing raises its refusal, then and at every later lookup, write or
  commit of the unit of work, so that work which caught the refusal still cannot commit.

Reads may come before the check (a refund's lock of its payment); they are rolled back with the
rest if it refuses, and what they found is answered to nobody, for the
:class:`~refcore.services.runtime.Runtime` hands such a unit of work to
every read and transaction of the :meth:`~refcore.services.runtime.Runtime.read_then_write`
block that took the check, and answers the check itself when the block ends with it still
pending: the block gives no answer, not even an error, before the check was answered.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

from attrs import define

from refcore.errors import RefcoreError
from refcore.ports import Repository, UnitOfWork
from refcore.ports.lookups import Found, Lookup


class CheckState(enum.Enum):
    PENDING = "pending"
    PASSED = "passed"
    REFUSED = "refused"


@define
class FirstReadCheck:
    """``lookup`` must find a record; when it finds none, ``refusal()`` is raised."""

    lookup: Lookup[Any]
    refusal: Callable[[], RefcoreError]
    state: CheckState = CheckState.PENDING
    #: The refusal raised when the lookup found nothing.
    raised: RefcoreError | None = None

    @property
    def pending(self) -> bool:
        return self.state is CheckState.PENDING

    def settle(self, found: Found) -> None:
        """Record what the lookup found, raising the refusal when it found nothing."""
        if found[self.lookup] is None:
            self.state = CheckState.REFUSED
            self.raised = self.refusal()
            raise self.raised
        self.state = CheckState.PASSED

    def refuse_if_refused(self) -> None:
        if self.state is CheckState.REFUSED:
            raise self.refusal()

    def answer(self, uow: UnitOfWork) -> None:
        """Answer the check by a lookup of its own in ``uow`` if nothing answered it yet; raise
        the refusal if it was refused."""
        if self.pending:
            self.settle(uow.look_up(self.lookup))
        self.refuse_if_refused()


class CheckingUnitOfWork:
    """A unit of work whose ``check`` is answered by its first lookup, or before its first
    write or its commit.

    It wraps one the runtime has already entered (the runtime ends that one, not this)."""

    def __init__(self, inner: UnitOfWork, check: FirstReadCheck) -> None:
        self._inner = inner
        self._check = check

    def look_up(self, *lookups: Lookup[Any]) -> Found:
        check = self._check
        if check.pending:
            found = self._inner.look_up(check.lookup, *lookups)
            check.settle(found)
            return found
        check.refuse_if_refused()
        return self._inner.look_up(*lookups)

    def commit(self) -> None:
        self._answer_check()
        self._inner.commit()

    def rollback(self) -> None:
        self._inner.rollback()

    def __getattr__(self, name: str) -> Any:
        found = getattr(self._inner, name)
        # The repositories are the unit of work's only attributes that are not methods.
        if self._check.state is CheckState.PASSED or callable(found):
            return found
        return _WritesAnswerTheCheck(found, self._answer_check)

    def _answer_check(self) -> None:
        self._check.answer(self._inner)


class _WritesAnswerTheCheck:
    """A repository whose writes answer the check before they are staged; its reads do not."""

    def __init__(self, inner: Repository[Any], answer_check: Callable[[], None]) -> None:
        self._inner = inner
        self._answer_check = answer_check

    def add(self, item: object) -> None:
        self._answer_check()
        self._inner.add(item)

    def add_all(self, items: Sequence[object]) -> None:
        self._answer_check()
        self._inner.add_all(items)

    def replace(self, item: object) -> None:
        self._answer_check()
        self._inner.replace(item)

    def update_where(self, where: Mapping[str, object], changes: Mapping[str, object]) -> int:
        self._answer_check()
        return self._inner.update_where(where, changes)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def checking(uow: UnitOfWork, check: FirstReadCheck | None) -> UnitOfWork:
    """``uow``, answering ``check`` first while it is still to be answered."""
    if check is None or check.state is CheckState.PASSED:
        return uow
    return cast(UnitOfWork, CheckingUnitOfWork(uow, check))
