"""The SQL event outbox: each committed event is claimed by exactly one dispatcher.

``claim`` runs in its own short transaction that commits the claim before any network call:

- on PostgreSQL it selects the oldest claimable events ``FOR UPDATE SKIP LOCKED``, so dispatchers
  in several server processes each take different events and never wait for one another;
- on SQLite it is a member of the group commit (:mod:`refcore_sqlstore.group_commit`): the
  select and the update run under the database's write lock, one claimer at a time, and the
  claim is committed (with the group) before ``claim`` returns.

Claimable means not delivered and either never claimed or claimed longer ago than the lease (the
claiming process crashed before recording its attempt). The partial index
``ix_events_undelivered`` keeps the query proportional to the undelivered events only.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Engine, Integer, bindparam, or_, select, update

from refcore.models import Event
from refcore_sqlstore.driver import compiled_for
from refcore_sqlstore.errors import database_errors
from refcore_sqlstore.group_commit import write_transaction
from refcore_sqlstore.id_lists import in_id_list
from refcore_sqlstore.mapping import RowMapper
from refcore_sqlstore.tables import events
from refcore_sqlstore.types import UtcDateTime

#: Built once (building a statement and its cache key per call cost more than running it).
_CLAIMABLE = (
    select(events)
    .where(events.c.delivered_at.is_(None))
    .where(
        or_(events.c.claimed_at.is_(None), events.c.claimed_at <= bindparam("expired", type_=UtcDateTime()))
    )
    .order_by(events.c.id)
    .limit(bindparam("limit", type_=Integer()))
)
#: PostgreSQL: dispatchers of several processes take different events and never wait.
_CLAIMABLE_SKIP_LOCKED = _CLAIMABLE.with_for_update(skip_locked=True)
_MARK_CLAIMED = (
    update(events)
    .where(in_id_list(events.c.id, "ids"))
    .values(claimed_at=bindparam("now", type_=UtcDateTime()))
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

    def __init__(self, engine: Engine, mapper: RowMapper[Any]) -> None:
        self._engine = engine
        self._mapper = mapper

    def claim(self, *, now: datetime, limit: int, lease_seconds: float) -> list[Event]:
        expired = now - timedelta(seconds=lease_seconds)
        postgresql = self._engine.dialect.name == "postgresql"
        statement = _CLAIMABLE_SKIP_LOCKED if postgresql else _CLAIMABLE
        dialect = self._engine.dialect
        with database_errors(), write_transaction(self._engine) as connection:
            rows = compiled_for(statement, dialect).fetch(connection, {"expired": expired, "limit": limit})
            ids = [row["id"] for row in rows]
            if ids:
                compiled_for(_MARK_CLAIMED, dialect).execute(connection, {"ids": ids, "now": now})
        claimed: list[Event] = []
        for row in rows:
            claimed.append(self._mapper.from_row({**row, "claimed_at": now}))
        return claimed

    def mark_delivered(self, event_id: str, *, now: datetime) -> None:
        with database_errors(), write_transaction(self._engine) as connection:
            matched = compiled_for(_CLOSE_ONE, self._engine.dialect).execute(
                connection, {"id": event_id, "now": now}
            )
        if matched == 0:
            raise KeyError(event_id)

    def mark_all_delivered(self, event_ids: Sequence[str], *, now: datetime) -> None:
        if not event_ids:
            return
        with database_errors(), write_transaction(self._engine) as connection:
            compiled_for(_CLOSE_UNDELIVERED, self._engine.dialect).execute(
                connection, {"ids": sorted(set(event_ids)), "now": now}
            )
