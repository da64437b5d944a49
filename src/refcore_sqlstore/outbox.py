"""The SQL event outbox: each committed event is claimed by exactly one dispatcher.

``claim`` runs in its own short transaction that commits the claim before any network call:

- on PostgreSQL it is one ``UPDATE … RETURNING`` of the oldest claimable events, chosen once by
  a ``MATERIALIZED`` CTE ``FOR UPDATE SKIP LOCKED``, so dispatchers in several server processes each take
  different events and never wait for one another. Alone, the statement is a transaction of its
  own (the driver runs in autocommit, :mod:`refcore_sqlstore.postgres_round_trips`): one round
  trip where a select, an update and a ``COMMIT`` took three. Closing events is one statement
  too. Both run on the store's kept connections (:mod:`refcore_sqlstore.kept_connections`);
- on SQLite it is a member of the group commit (:mod:`refcore_sqlstore.group_commit`): the
  select and the update run under the database's write lock, one claimer at a time, and the
  claim is committed (with the group) before ``claim`` returns.

Claimable means not delivered and either never claimed or claimed longer ago than the lease (the
claiming process crashed before recording its attempt). The partial index
``ix_events_undelivered`` keeps the query proportional to the undelivered events only.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime, timedelta
from operator import itemgetter
from typing import Any

from sqlalchemy import Connection, Engine, Integer, bindparam, or_, select, update

from refcore.models import Event
from refcore.ports.outbox import check_claim_limit
from refcore_sqlstore import postgres_round_trips
from refcore_sqlstore.driver import compiled_for
from refcore_sqlstore.errors import database_errors
from refcore_sqlstore.group_commit import write_transaction
from refcore_sqlstore.id_lists import in_id_list
from refcore_sqlstore.kept_connections import KeptConnections
from refcore_sqlstore.mapping import RowMapper
from refcore_sqlstore.tables import events
from refcore_sqlstore.types import UtcDateTime

#: Built once (building a statement and its cache key per call cost more than running it).
_IS_CLAIMABLE = (
    events.c.delivered_at.is_(None),
    or_(events.c.claimed_at.is_(None), events.c.claimed_at <= bindparam("expired", type_=UtcDateTime())),
)
_CLAIMABLE = (
    select(events).where(*_IS_CLAIMABLE).order_by(events.c.id).limit(bindparam("limit", type_=Integer()))
)
_MARK_CLAIMED = (
    update(events)
    .where(in_id_list(events.c.id, "ids"))
    .values(claimed_at=bindparam("now", type_=UtcDateTime()))
)
#: PostgreSQL: the claim in one statement. Dispatchers of several processes take different
#: events and never wait (``SKIP LOCKED``); a row whose claim or delivery another transaction
#: committed after this statement's snapshot is read again under its lock and left out when it
#: is no longer claimable. ``RETURNING`` gives the rows in no particular order.
#:
#: The claimable rows are a ``MATERIALIZED`` CTE, run once. As ``id IN (SELECT … LIMIT n FOR
#: UPDATE SKIP LOCKED)`` the planner could put the subquery on the inner side of a nested-loop
#: semi join and run it again for every row of ``events``: each run skipped nothing it had
#: locked itself and found the next rows, so a claim of 2 took every claimable event (a plan
#: PostgreSQL chose when its statistics called the table nearly empty), more than a dispatcher
#: can deliver within its lease.
_CLAIMABLE_IDS = (
    select(events.c.id)
    .where(*_IS_CLAIMABLE)
    .order_by(events.c.id)
    .limit(bindparam("limit", type_=Integer()))
    .with_for_update(skip_locked=True)
    .cte("claimable")
    .prefix_with("MATERIALIZED")
)
_CLAIM_RETURNING = (
    update(events)
    .where(events.c.id == _CLAIMABLE_IDS.c.id)
    .values(claimed_at=bindparam("now", type_=UtcDateTime()))
    .returning(*events.c)
)
_CLOSE_UNDELIVERED = (
    update(events)
    .where(in_id_list(events.c.id, "ids"), events.c.delivered_at.is_(None))
    .values(delivered_at=bindparam("now", type_=UtcDateTime()))
)
_CLOSE_ONE = (
    update(events)
    .where(events.c.id == bindparam("id"))
    .values(delivered_at=bindparam("now", type_=UtcDateTime()))
)


class SqlOutbox:
    """Implements :class:`refcore.ports.EventOutbox`."""

    def __init__(self, engine: Engine, mapper: RowMapper[Any], kept: KeptConnections | None = None) -> None:
        self._engine = engine
        self._mapper = mapper
        #: PostgreSQL: the store's kept connections, for the statements that run alone.
        self._kept = kept if engine.dialect.name == "postgresql" else None

    def claim(self, *, now: datetime, limit: int, lease_seconds: float) -> list[Event]:
        check_claim_limit(limit)
        expired = now - timedelta(seconds=lease_seconds)
        dialect = self._engine.dialect
        if self._kept is not None:
            with database_errors(), self._alone() as connection:
                rows = compiled_for(_CLAIM_RETURNING, dialect).fetch(
                    connection, {"expired": expired, "limit": limit, "now": now}
                )
            rows.sort(key=itemgetter("id"))
        else:
            with database_errors(), write_transaction(self._engine) as connection:
                rows = compiled_for(_CLAIMABLE, dialect).fetch(
                    connection, {"expired": expired, "limit": limit}
                )
                ids = [row["id"] for row in rows]
                if ids:
                    compiled_for(_MARK_CLAIMED, dialect).execute(connection, {"ids": ids, "now": now})
                for row in rows:
                    row["claimed_at"] = now
        return [self._mapper.from_row(row) for row in rows]

    def mark_delivered(self, event_id: str, *, now: datetime) -> None:
        with database_errors(), self._transaction() as connection:
            matched = compiled_for(_CLOSE_ONE, self._engine.dialect).execute(
                connection, {"id": event_id, "now": now}
            )
        if matched == 0:
            raise KeyError(event_id)

    def mark_all_delivered(self, event_ids: Sequence[str], *, now: datetime) -> None:
        if not event_ids:
            return
        with database_errors(), self._transaction() as connection:
            compiled_for(_CLOSE_UNDELIVERED, self._engine.dialect).execute(
                connection, {"ids": sorted(set(event_ids)), "now": now}
            )

    def _transaction(self) -> AbstractContextManager[Connection]:
        """A transaction for one statement: on PostgreSQL the statement alone, elsewhere a write
        transaction (a member of SQLite's group commit)."""
        return write_transaction(self._engine) if self._kept is None else self._alone()

    @contextmanager
    def _alone(self) -> Iterator[Connection]:
        """PostgreSQL: a kept connection whose statements each run as a transaction of their own."""
        assert self._kept is not None
        connection = self._kept.take()
        try:
            postgres_round_trips.begin_in_autocommit(connection)
            yield connection
        finally:
            self._kept.give_back(connection)
