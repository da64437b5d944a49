"""The UTC datetime column type on SQLite: the stored text is SQLAlchemy's, made faster.

``UtcDateTime`` binds on SQLite with one function of its own instead of ``process_bind_param``
followed by SQLAlchemy's ``DATETIME`` processor. Stored text is compared as text (ordering,
``available_at <= now``), so it must be the same text, to the character, for every instant.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy import DateTime
from sqlalchemy.dialects import sqlite

from refcore_sqlstore.types import UtcDateTime

DIALECT = sqlite.dialect()  # type: ignore[no-untyped-call]
FAST = UtcDateTime().dialect_impl(DIALECT).bind_processor(DIALECT)
READ = UtcDateTime().dialect_impl(DIALECT).result_processor(DIALECT, None)
SQLALCHEMYS = DateTime().dialect_impl(DIALECT).bind_processor(DIALECT)

zones = st.one_of(
    st.just(UTC),
    st.integers(min_value=-23 * 60, max_value=23 * 60).map(lambda m: timezone(timedelta(minutes=m))),
)
instants = st.datetimes(min_value=datetime(2, 1, 1), max_value=datetime(9998, 12, 31), timezones=zones)


def sqlalchemys_text(value: datetime) -> str:
    """What the chain did before: to UTC, naive, then SQLAlchemy's SQLite DATETIME format."""
    assert SQLALCHEMYS is not None
    text: str = SQLALCHEMYS(value.astimezone(UTC).replace(tzinfo=None))
    return text


@given(instants)
def test_an_aware_instant_is_stored_as_the_text_sqlalchemy_would_store(value: datetime) -> None:
    assert FAST is not None
    assert FAST(value) == sqlalchemys_text(value)


@given(instants)
def test_the_stored_text_reads_back_as_the_same_instant_in_utc(value: datetime) -> None:
    assert FAST is not None and READ is not None
    read = READ(FAST(value))
    assert read == value and read.tzinfo is UTC


def test_whole_seconds_keep_all_six_digits_of_microseconds() -> None:
    assert FAST is not None
    assert FAST(datetime(2026, 1, 1, tzinfo=UTC)) == "2026-01-01 00:00:00.000000"
    assert (
        FAST(datetime(999, 1, 1, 23, 0, tzinfo=timezone(timedelta(hours=-2)))) == "0999-01-02 01:00:00.000000"
    )


def test_naive_datetimes_are_refused_and_none_stays_none() -> None:
    assert FAST is not None
    with pytest.raises(ValueError, match="timezone-aware"):
        FAST(datetime(2026, 1, 1))
    assert FAST(None) is None


@given(
    st.lists(instants, min_size=1, max_size=8),
    st.lists(st.integers(min_value=0, max_value=7), max_size=24),
)
def test_a_datetime_written_again_gets_its_own_text_whatever_was_written_between(
    values: list[datetime], order: list[int]
) -> None:
    """The last text is kept for the same datetime object (a unit of work binds its ``now`` to
    every row): writing values again, in any order and repeated, gives each one its own text."""
    assert FAST is not None
    for index in [*order, *range(len(values))]:
        value = values[index % len(values)]
        assert FAST(value) == sqlalchemys_text(value)


def test_a_naive_datetime_is_refused_right_after_an_aware_one_of_the_same_fields() -> None:
    assert FAST is not None
    aware = datetime(2026, 1, 1, 12, tzinfo=UTC)
    assert FAST(aware) == "2026-01-01 12:00:00.000000"
    with pytest.raises(ValueError, match="timezone-aware"):
        FAST(aware.replace(tzinfo=None))


@pytest.mark.parametrize(
    ("stored", "instant"),
    [
        ("2026-03-01 09:05:00", datetime(2026, 3, 1, 9, 5, tzinfo=UTC)),
        ("2026-03-01 09:05:00.250", datetime(2026, 3, 1, 9, 5, 0, 250000, tzinfo=UTC)),
        ("2026-03-01", datetime(2026, 3, 1, tzinfo=UTC)),
        ("2026-03-01 11:05:00+02:00", datetime(2026, 3, 1, 9, 5, tzinfo=UTC)),
        ("2026-03-01T09:05:00.250000Z", datetime(2026, 3, 1, 9, 5, 0, 250000, tzinfo=UTC)),
        ("2026-03-01 11:05:00.1+0200", datetime(2026, 3, 1, 9, 5, 0, 100000, tzinfo=UTC)),
    ],
)
def test_text_refcore_did_not_write_still_reads_as_the_instant_it_names_in_utc(
    stored: str, instant: datetime
) -> None:
    """Only the fixed-width text takes the one-parse path: a bare date with ``+00:00`` appended
    would parse as a naive midnight, and an offset of its own would be doubled."""
    assert READ is not None
    read = READ(stored)
    assert read == instant and read.tzinfo is UTC


def test_none_reads_as_none() -> None:
    assert READ is not None
    assert READ(None) is None
