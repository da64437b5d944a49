"""Prefixed, time-ordered identifiers (decisions 9): ID order is creation order."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from refcore.clocks import ManualClock
from refcore.identifiers import TimeOrderedIds, _encode, prefix_of
from refcore.services.runtime import Tx
from refcore_memstore import memory_runtime

CROCKFORD = "0123456789abcdefghjkmnpqrstvwxyz"


def digit_by_digit(value: int) -> str:
    """The ULID text encoding spelled out: 26 base-32 digits, most significant first."""
    return "".join(CROCKFORD[(value >> (5 * place)) & 31] for place in reversed(range(26)))


@given(st.integers(min_value=0, max_value=2**130 - 1))
def test_decisions_9_id_bodies_are_the_values_26_crockford_digits(value: int) -> None:
    assert _encode(value) == digit_by_digit(value)


def test_decisions_9_id_body_edges() -> None:
    assert _encode(0) == "0" * 26
    assert _encode(31) == "0" * 25 + "z"
    assert _encode(2**128 - 1) == "7" + "z" * 25
    assert _encode(2**130 - 1) == "z" * 26


def test_decisions_9_ids_carry_their_prefix_and_a_fixed_length_body() -> None:
    ids = TimeOrderedIds(ManualClock())
    value = ids.new("txn")
    assert value.startswith("txn_")
    assert len(value) == len("txn_") + 26
    assert prefix_of(value) == "txn"


def test_decisions_9_ids_within_one_millisecond_are_strictly_increasing() -> None:
    ids = TimeOrderedIds(ManualClock())  # the clock never moves
    values = [ids.new("com") for _ in range(2_000)]
    assert values == sorted(values)
    assert len(set(values)) == len(values)


def test_decisions_9_ids_order_by_time_across_milliseconds_and_prefix_bodies() -> None:
    clock = ManualClock()
    ids = TimeOrderedIds(clock)
    values = []
    for _ in range(50):
        values.append(ids.new("txn"))
        clock.advance(timedelta(milliseconds=1))
    assert values == sorted(values)


def test_decisions_9_a_later_generator_sorts_after_an_earlier_one() -> None:
    """Across processes (separate generators) order follows the clock at millisecond resolution."""
    early = TimeOrderedIds(ManualClock(datetime(2026, 1, 1, tzinfo=UTC))).new("txn")
    late = TimeOrderedIds(ManualClock(datetime(2026, 1, 1, 0, 0, 0, 1_000, tzinfo=UTC))).new("txn")
    assert early < late


def test_decisions_9_clock_moving_backwards_never_reorders_ids() -> None:
    clock = ManualClock()
    ids = TimeOrderedIds(clock)
    first = ids.new("txn")
    clock.advance(timedelta(hours=-1))
    assert ids.new("txn") > first


def test_decisions_9_ids_follow_the_order_units_of_work_write_not_when_they_began() -> None:
    """docs/decisions.md: a unit of work that began first but wrote second (it waited for a
    payment's row lock) sorts second, whatever its ``now``: the ledger's ID order is the order it
    was applied in. Drawn at each unit of work's ``now`` (c1ea4d1, reverted), 112 of 200
    concurrent refunds of one payment sorted out of that order (probe AM)."""
    clock = ManualClock(datetime(2026, 1, 1, 0, 0, 0, 292_000, tzinfo=UTC))
    runtime = memory_runtime(clock=clock)
    began_first = Tx(uow=None, now=clock.now(), ids=runtime.ids)  # type: ignore[arg-type]
    clock.advance(timedelta(milliseconds=5))
    began_second = Tx(uow=None, now=clock.now(), ids=runtime.ids)  # type: ignore[arg-type]
    written_first = began_second.new_id("txn")
    clock.advance(timedelta(milliseconds=2))
    written_second = began_first.new_id("txn")
    assert began_first.now < began_second.now
    assert written_first < written_second


def test_decisions_9_prefix_of_values_without_prefix_is_empty() -> None:
    assert prefix_of("nonsense") == ""
    assert prefix_of("com_01abc") == "com"
    assert prefix_of("") == ""


def test_decisions_9_ids_made_together_are_increasing_and_follow_and_precede_single_ones() -> None:
    clock = ManualClock()  # one millisecond throughout: order comes from the generator alone
    ids = TimeOrderedIds(clock)
    before = ids.new("clk")
    batch = ids.new_many("clk", 500)
    after = ids.new("clk")
    assert len(batch) == 500 and len(set(batch)) == 500
    assert [before, *batch, after] == sorted([before, *batch, after])
    assert all(value.startswith("clk_") and len(value) == len("clk_") + 26 for value in batch)


def test_decisions_9_ids_made_together_carry_the_clocks_millisecond() -> None:
    clock = ManualClock(datetime(2026, 1, 1, tzinfo=UTC))
    ids = TimeOrderedIds(clock)
    clock.advance(timedelta(minutes=5))
    (value,) = ids.new_many("clk", 1)
    later = TimeOrderedIds(ManualClock(datetime(2026, 1, 1, 0, 5, 0, 1_000, tzinfo=UTC))).new("clk")
    earlier = TimeOrderedIds(ManualClock(datetime(2026, 1, 1, 0, 4, 59, 999_000, tzinfo=UTC))).new("clk")
    assert earlier < value < later


def test_decisions_9_ids_made_together_are_random_beyond_the_millisecond() -> None:
    batches = [TimeOrderedIds(ManualClock()).new_many("clk", 4) for _ in range(2)]
    assert batches[0] != batches[1]  # same clock, separate generators: only the random part differs
    assert TimeOrderedIds(ManualClock()).new_many("clk", 0) == []


def test_decisions_9_ids_made_together_spell_their_values_when_an_increment_reaches_the_millisecond(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A batch spells its millisecond once; an ID whose increment carried into the millisecond
    (random parts all ones, so every ID after the first is the one before plus one) spells the next."""
    clock = ManualClock(datetime(2026, 1, 1, tzinfo=UTC))
    millis = int(clock.now().timestamp() * 1000)
    generator = TimeOrderedIds(clock)
    monkeypatch.setattr(generator, "_random", lambda size: b"\xff" * size)
    batch = generator.new_many("clk", 3)
    first = (millis << 80) | (2**80 - 1)
    assert batch == [f"clk_{digit_by_digit(first + step)}" for step in range(3)]
    assert batch[0][:14] != batch[1][:14] == batch[2][:14]  # "clk_" and the millisecond's ten digits


def _random_part(identifier: str) -> str:
    return identifier[-16:]  # 80 bits: the last 16 of the 26 digits


def test_decisions_9_ids_take_fresh_random_bits_across_refills_of_the_drawn_bytes() -> None:
    """The random bytes are drawn 4 KiB at a time: 1,000 IDs (two refills), each in a
    millisecond of its own so that its random part is its draw (within one millisecond an ID
    below the last is the last plus one), all differ; a batch larger than a draw is in order."""
    clock = ManualClock()
    generator = TimeOrderedIds(clock)
    made = []
    for _ in range(1000):
        clock.advance(timedelta(milliseconds=1))
        made.append(generator.new("txn"))
    assert len({_random_part(made_id) for made_id in made}) == len(made)
    batch = generator.new_many("clk", 500)
    assert len(set(batch)) == 500 and batch == sorted(batch) and batch[0][4:] > made[-1][4:]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the platform does not fork")
def test_decisions_9_a_forked_child_does_not_spend_the_random_bytes_its_parent_drew() -> None:
    """Parent and child would otherwise make the same ID in the same millisecond. The clock
    moves on first: an ID below the last of its millisecond is the last plus one, the same in
    both, whatever their random bytes."""
    clock = ManualClock()
    generator = TimeOrderedIds(clock)
    generator.new("txn")  # draws the pool
    clock.advance(timedelta(milliseconds=1))
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child
        os.write(write, generator.new("txn").encode())
        os._exit(0)
    os.close(write)
    os.waitpid(child, 0)
    with os.fdopen(read) as pipe:
        made_in_child = pipe.read()
    assert made_in_child.startswith("txn_")
    assert _random_part(made_in_child) != _random_part(generator.new("txn"))
