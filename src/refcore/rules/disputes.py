"""The dispute lifecycle of interface 3.1 as a pure transition function.

Reports move a dispute along ``opened -> (won | withdrawn | lost)`` and ``lost ->
funds_reinstated``. A report of a status the dispute has already passed (a delayed ``opened``,
or ``lost`` after ``funds_reinstated``) changes nothing; any other move is a conflict.
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
    CONFLICT = "conflict"


def classify_report(current: DisputeStatus, reported: DisputeStatus) -> Move:
    if reported is current or reported in _PASSED[current]:
        return Move.UNCHANGED
    if reported in _NEXT[current]:
        return Move.ADVANCE
    return Move.CONFLICT


def consumes(status: DisputeStatus) -> bool:
    return status in CONSUMING
