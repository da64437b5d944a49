"""Timestamps in representations: ISO 8601 in UTC with a ``Z`` and milliseconds (decisions 11)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from refcore.clocks import ManualClock
from refcore.representation import timestamp

_ZONES = st.integers(min_value=-14 * 60, max_value=14 * 60).map(lambda m: timezone(timedelta(minutes=m)))


@given(
    st.datetimes(
        min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=_ZONES | st.just(UTC)
    )
)
def test_a_timestamp_is_the_utc_iso_8601_form_with_milliseconds_and_z(moment: datetime) -> None:
    expected = moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    assert timestamp(moment) == expected


def test_a_timestamp_truncates_to_the_millisecond_and_pads_every_field() -> None:
    assert timestamp(datetime(7, 2, 3, 4, 5, 6, 999_999, tzinfo=UTC)) == "0007-02-03T04:05:06.999Z"
    moment = datetime(2026, 1, 1, 0, 30, tzinfo=timezone(timedelta(hours=1)))
    assert timestamp(moment) == "2025-12-31T23:30:00.000Z"
    assert timestamp(None) is None


def test_a_manual_clock_refuses_a_moment_without_a_time_zone() -> None:
    """The clock port promises aware moments; a naive start had been stored as local time by
    the memory store and refused by SQLite with an opaque internal error."""
    with pytest.raises(ValueError, match="time zone"):
        ManualClock(datetime(2026, 3, 1))
    clock = ManualClock(datetime(2026, 3, 1, tzinfo=UTC))
    with pytest.raises(ValueError, match="time zone"):
        clock.set(datetime(2026, 3, 2))
    assert clock.now() == datetime(2026, 3, 1, tzinfo=UTC)


def test_a_manual_clock_gives_the_moment_it_is_told_in_utc() -> None:
    """The port promises UTC: a clock started at ``+05:30`` had given that offset, which the
    memory store kept and the SQL stores converted, so the stores' models differed (probe L)."""
    india = timezone(timedelta(hours=5, minutes=30))
    clock = ManualClock(datetime(2026, 3, 1, 5, 30, tzinfo=india))
    assert clock.now() == datetime(2026, 3, 1, tzinfo=UTC) and clock.now().tzinfo is UTC
    clock.set(datetime(2026, 3, 2, 6, 0, tzinfo=india))
    assert clock.now() == datetime(2026, 3, 2, 0, 30, tzinfo=UTC) and clock.now().tzinfo is UTC
