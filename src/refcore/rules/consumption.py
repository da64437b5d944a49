"""Refunds plus disputes in ``opened`` or ``lost`` never exceed the payment (interface 3.1 rule 4)."""

from __future__ import annotations

from refcore.errors import AmountExceedsPayment
from refcore.models import Payment


def require_within_payment(payment: Payment, additional: int, *, param: str = "amount") -> None:
    if payment.consumed_amount + additional > payment.amount:
        remaining = payment.amount - payment.consumed_amount
        raise AmountExceedsPayment(
            f"Refunds plus open or lost disputes would exceed payment {payment.payment_id}; "
            f"at most {remaining} remains",
            param=param,
        )
