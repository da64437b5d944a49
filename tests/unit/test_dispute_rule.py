"""The dispute lifecycle of interface 3.1 as a table: every (current, reported) pair, exhaustively."""

from __future__ import annotations

import pytest

from refcore.models import DisputeStatus
from refcore.rules.disputes import INITIAL_STATUSES, Move, classify_report, consumes

OP, W, X, L, R = (
    DisputeStatus.OPENED,
    DisputeStatus.WON,
    DisputeStatus.WITHDRAWN,
    DisputeStatus.LOST,
    DisputeStatus.FUNDS_REINSTATED,
)
U, ADV, C = Move.UNCHANGED, Move.ADVANCE, Move.CONFLICT

#: Written out by hand from interface 3.1 and decisions 11, independently of the rule module.
#: Rows: current status; columns: reported status in the order O, W, X, L, R.
TABLE: dict[DisputeStatus, tuple[Move, Move, Move, Move, Move]] = {
    OP: (U, ADV, ADV, ADV, C),  # opened -> won/withdrawn/lost; funds_reinstated without lost: conflict
    W: (U, U, C, C, C),  # delayed opened unchanged (rule 1); other outcomes conflict (rule 2)
    X: (U, C, U, C, C),
    L: (U, C, C, U, ADV),  # lost -> funds_reinstated
    R: (U, C, C, U, U),  # a delayed lost after reinstatement is already passed
}
CASES = [
    (current, reported, row[i])
    for current, row in TABLE.items()
    for i, reported in enumerate((OP, W, X, L, R))
]


def test_interface_3_1_table_covers_every_pair() -> None:
    assert len(CASES) == len(DisputeStatus) ** 2


@pytest.mark.parametrize(("current", "reported", "move"), CASES, ids=lambda v: getattr(v, "value", v))
def test_interface_3_1_transition(current: DisputeStatus, reported: DisputeStatus, move: Move) -> None:
    assert classify_report(current, reported) is move


def test_interface_3_1_a_dispute_starts_as_opened_or_a_terminal_status_never_as_funds_reinstated() -> None:
    assert frozenset({OP, W, X, L}) == INITIAL_STATUSES


def test_interface_3_1_rule_4_only_opened_and_lost_consume_the_payment() -> None:
    assert {s for s in DisputeStatus if consumes(s)} == {OP, L}


# -- a processor's inquiry ---------------------------------------------------------------------


def test_an_open_inquiry_consumes_nothing_and_a_lost_one_consumes() -> None:
    assert {s for s in DisputeStatus if consumes(s, inquiry=True)} == {L}


def test_an_open_inquiry_reported_as_a_chargeback_escalates() -> None:
    assert classify_report(OP, OP, current_inquiry=True, reported_inquiry=False) is Move.ESCALATE


@pytest.mark.parametrize(
    ("current_inquiry", "reported_inquiry"), [(True, True), (False, True), (False, False)]
)
def test_every_other_opened_report_on_an_opened_dispute_is_unchanged(
    current_inquiry: bool, reported_inquiry: bool
) -> None:
    """A repeated inquiry report is a replay, and a late one never turns a chargeback back."""
    move = classify_report(OP, OP, current_inquiry=current_inquiry, reported_inquiry=reported_inquiry)
    assert move is Move.UNCHANGED


@pytest.mark.parametrize(
    ("current", "reported", "move"),
    [case for case in CASES if case[:2] != (OP, OP)],  # opened -> opened: the escalation, above
    ids=lambda v: getattr(v, "value", v),
)
def test_an_inquiry_moves_through_the_table_like_any_dispute_but_its_escalation(
    current: DisputeStatus, reported: DisputeStatus, move: Move
) -> None:
    for current_inquiry in (False, True):
        for reported_inquiry in (False, True):
            got = classify_report(
                current, reported, current_inquiry=current_inquiry, reported_inquiry=reported_inquiry
            )
            assert got is move
