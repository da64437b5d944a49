"""The dispute lifecycle of interface 3.1 as a pure transition function.

Reports move a dispute along ``opened -> (won | withdrawn | lost)`` and ``lost ->
funds_reinstated``. A report of a status the dispute has already passed (a delayed ``opened``,
or ``lost`` after ``funds_reinstated``) changes nothing; any other move is a conflict.

A processor's **inquiry** (``warning_needs_response``, ``warning_under_review``) is an ``opened``
dispute that consumes nothing of its payment (rule 4 counts disputes that take money; an inquiry
takes none), and still holds the commission. Counted, it had refused every refund the merchant
made during the inquiry, which the processor stops retrying after days while an inquiry can stay
open for months: the refund, and the reversal it owed, were lost. The inquiry **escalates** when
the same dispute is reported ``opened`` as a chargeback: from then on it consumes its amount, as
one reported ``lost`` does. A late inquiry report never moves a chargeback back.
"""

from __future__ import annotations

import enum

from refcore.models import DisputeStatus

_S = DisputeStatus

#: Statuses a dispute may be created in directly (interface 3.1, first and last rows).
INITIAL_STATUSES = frozenset({_S.OPENED, _S.WON, _S.WITHDRAWN, _S.LOST})

_NEXT: dict[DisputeStatus, frozenset[DisputeStatus]] = {
    _S.OPENED: frozenset({_S.WON, _S.WITHDRAWN, _S.LOST}),
    _S.LOST: frozenset({_S.FUNDS_REINSTATED}),
    _S.WON: frozenset(),
    _S.WITHDRAWN: frozenset(),
    _S.FUNDS_REINSTATED: frozenset(),
}

_PASSED: dict[DisputeStatus, frozenset[DisputeStatus]] = {
    _S.OPENED: frozenset(),
    _S.WON: frozenset({_S.OPENED}),
    _S.WITHDRAWN: frozenset({_S.OPENED}),
    _S.LOST: frozenset({_S.OPENED}),
    _S.FUNDS_REINSTATED: frozenset({_S.OPENED, _S.LOST}),
}

#: Statuses in which a dispute consumes the payment's balance.
CONSUMING = frozenset({_S.OPENED, _S.LOST})


class Move(enum.Enum):
    UNCHANGED = "unchanged"
    ADVANCE = "advance"
    #: An open inquiry reported ``opened`` as a chargeback: same status, now consuming.
    ESCALATE = "escalate"
    CONFLICT = "conflict"


def classify_report(
    current: DisputeStatus,
    reported: DisputeStatus,
    *,
    current_inquiry: bool = False,
    reported_inquiry: bool = False,
) -> Move:
    """The move a report makes; ``*_inquiry``: whether the stored dispute is an open inquiry,
    and whether the report is one (see the module docstring)."""
    if current is _S.OPENED and current_inquiry and reported is _S.OPENED and not reported_inquiry:
        return Move.ESCALATE
    if reported is current or reported in _PASSED[current]:
        return Move.UNCHANGED
    if reported in _NEXT[current]:
        return Move.ADVANCE
    return Move.CONFLICT


def consumes(status: DisputeStatus, *, inquiry: bool = False) -> bool:
    """Whether a dispute in ``status`` consumes its payment's balance (interface 3.1 rule 4); an
    open inquiry does not."""
    if inquiry and status is _S.OPENED:
        return False
    return status in CONSUMING
