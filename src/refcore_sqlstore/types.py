"""Column types that behave the same on SQLite and PostgreSQL.

Two things differ between the engines and matter to the core:

- **Time.** The core only ever holds timezone-aware UTC datetimes. PostgreSQL stores them as
  ``timestamptz``; SQLite has no time type, so they are stored as SQLAlchemy's fixed-width UTC
  text (``2026-01-01 00:00:00.000000``), which sorts and compares in time order, and the UTC zone
  is put back when read.
- **ID order.** Lists page by ID (``ORDER BY id``, ``id < :cursor``) and IDs are time-ordered only
  in byte order. PostgreSQL compares text by the database's collation, which for most locales is
  not byte order, so every ID column uses the ``"C"`` collation there. SQLite compares bytes already.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import DateTime, Dialect, Text
from sqlalchemy.dialects import postgresql
from sqlalchemy.types import TypeDecorator, TypeEngine

#: The type of every ``id`` and ``*_id`` reference column.
Id: TypeEngine[str] = Text().with_variant(postgresql.TEXT(collation="C"), "postgresql")


class UtcDateTime(TypeDecorator[datetime]):
    """A timezone-aware UTC datetime in, the same out, on every engine. Naive values are refused."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        """PostgreSQL's path (``timestamptz`` takes the aware value); SQLite binds through
        :func:`_sqlite_text` instead (see :meth:`bind_processor`)."""
        if value is None:
            return None
        _require_aware(value)
        return value.astimezone(UTC)

    def bind_processor(self, dialect: Dialect) -> Callable[[Any], Any] | None:
        """On SQLite, one function from the aware datetime to the stored text (see
        :func:`_sqlite_text`); elsewhere SQLAlchemy's chain of ``process_bind_param`` and the
        driver type's own processor."""
        if dialect.name == "sqlite":
            return _sqlite_text
        return super().bind_processor(dialect)

    def result_processor(self, dialect: Dialect, coltype: object) -> Callable[[Any], Any] | None:
        """One function per value read, instead of ``TypeDecorator``'s chain of the driver
        type's processor and a per-value hook: :func:`_from_sqlite_text` on SQLite, :func:`_utc`
        (after the driver type's processor, if it has one) elsewhere."""
        if dialect.name == "sqlite":
            return _from_sqlite_text
        impl_processor = self.impl_instance.result_processor(dialect, coltype)
        if impl_processor is None:
            return _utc
        return lambda value: _utc(impl_processor(value))


def _utc(value: datetime | None) -> datetime | None:
    """``value`` in UTC; a naive value is taken as UTC.

    PostgreSQL sessions run in UTC (``refcore_sqlstore.engine``), so psycopg's ``timestamptz``
    values arrive in ``datetime.UTC`` already and pass the first test: ``astimezone`` from the
    server's ``ZoneInfo`` cost 0.9 µs a value, and a commissions page reads fifty."""
    if value is None or value.tzinfo is UTC:
        return value
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def _require_aware(value: datetime) -> None:
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError("refcore stores timezone-aware datetimes only")


#: The length of the text :func:`_sqlite_text` writes.
_SQLITE_TEXT_LENGTH = 26


def _sqlite_text(value: datetime | None) -> str | None:
    """The fixed-width UTC text SQLite stores (``2026-01-01 00:00:00.000000``).

    The same text as ``process_bind_param`` followed by SQLAlchemy's SQLite ``DATETIME``
    processor, which formats through a dictionary of the datetime's fields: 4.2 µs a value
    against 1.6, and a payment binds about ten (``tests/sqlstore/test_utc_datetime.py``
    compares the two on generated datetimes)."""
    global _last_text
    if value is None:
        return None
    last = _last_text
    if value is last[0]:
        return last[1]
    written = value
    if value.tzinfo is not UTC:
        _require_aware(value)
        value = value.astimezone(UTC)
    # An aware datetime's ISO text ends with its offset, "+00:00": the first 26 characters are
    # the date, a space, and the time to the microsecond, always all six digits.
    text = value.isoformat(" ", "microseconds")[:_SQLITE_TEXT_LENGTH]
    _last_text = (written, text)
    return text


#: The datetime :func:`_sqlite_text` wrote last, and its text. A unit of work stamps every row
#: it writes with its one ``now`` (a batch of 32 clicks binds the same datetime 32 times), and
#: formatting it was 2 % of a capture's instructions. The value is compared by identity and
#: held, so it cannot be another datetime at the same address; the pair is one tuple, replaced
#: whole, so a thread never reads one value with another's text.
_last_text: tuple[datetime | None, str] = (None, "")


def _from_sqlite_text(value: str | None) -> datetime | None:
    """The aware UTC datetime of a stored text, in one parse.

    The text :func:`_sqlite_text` writes, with ``+00:00`` appended, is an ISO 8601 instant in
    UTC that ``datetime.fromisoformat`` reads straight to ``datetime.UTC``: 0.3 µs a value,
    against 1.5 for SQLAlchemy's parse followed by ``replace(tzinfo=UTC)`` (which alone costs
    1.2). Any other text (shorter, as SQL's ``datetime()`` writes, or with an offset of its own)
    takes the general path; appending an offset to a bare date would not give an instant."""
    if value is None:
        return None
    if len(value) == _SQLITE_TEXT_LENGTH:
        try:
            return datetime.fromisoformat(value + "+00:00")
        except ValueError:  # as long, but an offset of its own ("…00:00.1+0200"): see below
            pass
    return _utc(datetime.fromisoformat(value))
