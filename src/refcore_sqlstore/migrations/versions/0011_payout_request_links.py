"""An open payout request names the payout in flight that froze its money, as a batch now records.

Since 7adc370 a batch prepared while an affiliate's payout request is open names that request
(``payout_requests.payout_execution_id``), and only the payout it names closes it as ``paid``
(docs/payouts.md): a request made while a payout is in flight asks for money that came later.
Earlier code named nothing and closed any open request when a payout succeeded. A payout that was
in flight at the upgrade therefore named no request, and its success, reported to the new code,
left the request ``open`` for money already paid: it stayed in the Developer's queue, refused the
affiliate's next request, and would have been closed by a later payout of other money (found by
a probe that upgraded a database with a batch in flight).

This migration names, for each open request that names no payout, the affiliate's payout in
flight (``prepared`` or ``ready``; at most one, by the unique ``live_program_affiliate_id``)
when that payout was made after the request, which is when it froze the money asked for. A
request made after its affiliate's payout in flight is left as it is: that payout never paid it.
A declined request names no payout from now on (its decline clears the link), so the link kept
by a request declined before is cleared too.

The downgrade changes nothing back: earlier code ignores the link. A batch that a server of an
earlier release prepares after this migration names no request, as before it.

Revision ID: 0011_payout_request_links
Revises: 0010_payout_report_keys
Create Date: 2026-11-27
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0011_payout_request_links"
down_revision: str | None = "0010_payout_report_keys"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_IN_FLIGHT_AFTER_THE_REQUEST = """
    SELECT x.id FROM payout_executions AS x
    WHERE x.live_program_affiliate_id = payout_requests.program_affiliate_id
      AND x.created_at >= payout_requests.created_at
"""


def upgrade() -> None:
    op.execute(
        f"""
        UPDATE payout_requests
        SET payout_execution_id = ({_IN_FLIGHT_AFTER_THE_REQUEST})
        WHERE status = 'open' AND payout_execution_id IS NULL
          AND EXISTS ({_IN_FLIGHT_AFTER_THE_REQUEST})
        """
    )
    op.execute(
        "UPDATE payout_requests SET payout_execution_id = NULL"
        " WHERE status = 'declined' AND payout_execution_id IS NOT NULL"
    )


def downgrade() -> None:
    pass  # earlier code ignores the link
