"""Refunds plus disputes in ``opened`` or ``lost`` never exceed the payment (interface 3.1 rule 4);
no dispute is larger than its payment, whatever its status."""

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


def require_dispute_within_payment(payment: Payment, amount: int, *, param: str = "amount") -> None:
    """A dispute that starts ``won`` or ``withdrawn`` consumes nothing, so rule 4 does not limit
    it; but no card network disputes more than was charged, and a dispute of 2**31 - 1 on a
    payment of 1000 had been recorded. A reported amount that cannot be the payment's is refused
    as one that would exceed it."""
    if amount > payment.amount:
        raise AmountExceedsPayment(
            f"A dispute of payment {payment.payment_id} can be at most its amount, {payment.amount}",
            param=param,
        )
