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

from datetime import UTC, datetime

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
        if value is None:
            return None
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValueError("refcore stores timezone-aware datetimes only")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)
