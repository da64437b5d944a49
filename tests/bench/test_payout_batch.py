"""``python -m bench.payout_batch``: the figures it prints are the batch's and the CSV's own."""

from __future__ import annotations

import re
from pathlib import Path

from bench.payout_batch import run


def test_it_times_a_batch_of_the_ready_affiliates_and_their_csv(tmp_path: Path) -> None:
    lines = run(f"sqlite:///{tmp_path / 'bench.db'}", affiliates=40, ready_every=4, repeats=2)
    assert len(lines) == 3
    batch = r"sqlite prepare_batch: 40 affiliates, 10 paid, \d+\.\d{3} s, [1-9]\d* statements"
    for line in lines[:2]:  # each batch canceled, so the next pays the same ten again
        assert re.fullmatch(batch, line)
    assert re.fullmatch(r"sqlite ready_payouts_csv: 10 rows, \d+\.\d{3} s, [1-9]\d* statements", lines[2])


def test_it_times_canceling_and_marking_paid_one_payout_of_many_entries(tmp_path: Path) -> None:
    lines = run(f"sqlite:///{tmp_path / 'bench.db'}", affiliates=4, ready_every=4, repeats=1, entries=7)
    assert len(lines) == 4
    # The batch: the earner's seven entries and the one ready affiliate's one.
    assert re.fullmatch(
        r"sqlite cancel_batch: 2 payouts, 8 entries, \d+\.\d{3} s, [1-9]\d* statements", lines[2]
    )
    # 20 % of seven payments of 10,000: the payout carries every entry the affiliate earned.
    assert re.fullmatch(
        r"sqlite mark_paid: 7 entries, 14000 paid, \d+\.\d{3} s, [1-9]\d* statements", lines[3]
    )
