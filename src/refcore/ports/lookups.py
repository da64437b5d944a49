"""Several single-record reads answered together: :meth:`UnitOfWork.look_up`.

A write often starts by reading a handful of records it already knows how to find: a payment
reads the App, the customer, the program, the customer's referral and the referral's affiliate,
and checks whether its payment ID was reported before. Read one by one, each is a statement of
its own: on PostgreSQL a round trip and the driver's work around it (about 0.1 ms of the
server's CPU each), on SQLite the driver's call and its cursor. Described as :class:`Lookup`
values, a store can answer them all in one statement.

A lookup is what :meth:`Repository.find_one` takes (equality on fields, ``None`` meaning the
field is ``NULL``), with one more kind of value: :class:`FieldOf`, a field of the record an
earlier lookup of the same call found, such as "the program affiliate whose ``id`` is the
referral's ``program_affiliate_id``". When that earlier record is missing, or its field is
``None``, the later lookup finds nothing (as a SQL join on ``NULL`` matches no row).

Every lookup promises at most one match, as ``find_one`` does; the reads take no locks.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Generic, TypeVar, cast

from attrs import field, frozen

M = TypeVar("M")


def _copied(where: Mapping[str, object]) -> Mapping[str, object]:
    """A copy, so that changing the caller's dictionary later changes no lookup."""
    return dict(where)


@frozen(eq=False)
class Lookup(Generic[M]):
    """At most one record of the repository ``repository`` (its attribute name on the unit of
    work, such as ``"customers"``), whose fields equal ``where``. Compared by identity: it is
    the key of its own result in :class:`Found`."""

    repository: str
    model: type[M]
    where: Mapping[str, object] = field(converter=_copied)


@frozen
class FieldOf:
    """The value of ``field`` on the record that ``lookup`` found, in the same call."""

    lookup: Lookup[Any]
    field: str


class Found:
    """What one :meth:`UnitOfWork.look_up` call found, by lookup."""

    def __init__(self, records: Mapping[Lookup[Any], object | None]) -> None:
        self._records = dict(records)

    def __getitem__(self, lookup: Lookup[M]) -> M | None:
        return cast("M | None", self._records[lookup])


def check_order(lookups: tuple[Lookup[Any], ...]) -> None:
    """Raise ``ValueError`` when a lookup comes twice, or names one that does not come before
    it in the call: every store then refuses the same calls, and none has to sort them."""
    for position, lookup in enumerate(lookups):
        if lookup in lookups[:position]:
            raise ValueError(f"lookup of {lookup.repository} is given twice")
        for value in lookup.where.values():
            if isinstance(value, FieldOf) and value.lookup not in lookups[:position]:
                raise ValueError(
                    f"lookup of {lookup.repository} refers to a lookup that does not come before it"
                )
