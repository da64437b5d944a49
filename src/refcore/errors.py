"""The one error catalog of refcore.

Every failure the domain can report is a :class:`RefcoreError` carrying a stable ``code``
(the value clients branch on), a human ``message`` and, for input problems, the ``param``
at fault. The core knows nothing of HTTP: adapters map each :class:`ErrorKind` to their
own vocabulary (the HTTP adapter maps kinds to status codes in one table).

Messages never contain secrets: callers pass identifiers and field names only, and a message
that quotes what a caller sent (an ID, a code, ``via``) leaves it out when it is shaped like a
credential (:func:`refcore.credentials.quotable`): a key pasted where its ID belongs is not
written back in the answer, as the access log does not write it either. Every error also
writes any credential-shaped token of its message and ``param`` as ``[redacted]`` when it is
made, so a library caller gets the same guarantee the HTTP answers have: a key used as a
program setting's name, a session token as a filter's, had come back whole (probe AD).
"""

from __future__ import annotations

import enum

from refcore.credentials import quotable, without_credentials


class ErrorKind(enum.Enum):
    """The family of an error; one family maps to one HTTP status in the HTTP adapter."""

    INVALID_INPUT = "invalid_input"
    UNAUTHENTICATED = "unauthenticated"
    FORBIDDEN = "forbidden"
    NOT_FOUND = "not_found"
    CONFLICT = "conflict"
    TOO_LARGE = "too_large"
    RATE_LIMITED = "rate_limited"
    METHOD_NOT_ALLOWED = "method_not_allowed"
    INTERNAL = "internal"


class RefcoreError(Exception):
    """Base of every error refcore reports to a caller."""

    code: str = "internal_error"
    kind: ErrorKind = ErrorKind.INTERNAL

    def __init__(self, message: str, *, param: str | None = None, code: str | None = None) -> None:
        # str(): a library caller's field name may be any key of its mapping (a number, say),
        # which a refusal names as text rather than failing to be made.
        message = without_credentials(str(message))
        super().__init__(message)
        self.message = message
        self.param = None if param is None else without_credentials(str(param))
        if code is not None:
            self.code = code

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code!r}, message={self.message!r})"


# -- 400: input ------------------------------------------------------------------------------


class InvalidInput(RefcoreError):
    kind = ErrorKind.INVALID_INPUT


class InvalidJson(InvalidInput):
    code = "invalid_json"


class ValidationError(InvalidInput):
    code = "validation_error"


class FieldNotAllowed(InvalidInput):
    code = "field_not_allowed"


class AmountExceedsPayment(InvalidInput):
    code = "amount_exceeds_payment"


class CurrencyMismatch(InvalidInput):
    code = "currency_mismatch"


class InvalidStartingAfter(InvalidInput):
    code = "invalid_starting_after"


class InvalidSignupToken(InvalidInput):
    """A hosted-signup confirmation token that is unknown, expired or already used."""

    code = "invalid_signup_token"


class InvalidSignature(InvalidInput):
    """A processor event whose signature header is missing, malformed, wrong or too old."""

    code = "invalid_signature"


# -- 401 / 403 -------------------------------------------------------------------------------


class Unauthenticated(RefcoreError):
    code = "unauthenticated"
    kind = ErrorKind.UNAUTHENTICATED


class Forbidden(RefcoreError):
    code = "forbidden"
    kind = ErrorKind.FORBIDDEN


class PromotionCodeNotAllowed(Forbidden):
    code = "promotion_code_not_allowed"


class LiveKeyRequired(Forbidden):
    code = "live_key_required"


# -- 404 -------------------------------------------------------------------------------------


class NotFound(RefcoreError):
    """``<resource>_not_found``; another tenant's resource is reported exactly like this."""

    code = "not_found"
    kind = ErrorKind.NOT_FOUND

    @classmethod
    def of(cls, resource: str, resource_id: str | None = None) -> NotFound:
        """``No such <resource>: <resource_id>``, without the ID when there is none or it is a
        secret sent in its place (``DELETE /v1/api-keys/key_app_…``)."""
        detail = f": {resource_id}" if resource_id and quotable(resource_id) else ""
        return cls(f"No such {resource.replace('_', ' ')}{detail}", code=f"{resource}_not_found")


# -- 409 -------------------------------------------------------------------------------------


class Conflict(RefcoreError):
    kind = ErrorKind.CONFLICT
    code = "conflict"


class IdempotencyConflict(Conflict):
    code = "idempotency_conflict"


class DisputeConflict(Conflict):
    code = "dispute_conflict"


class ModeMismatch(Conflict):
    code = "mode_mismatch"


class RevenueSourceConflict(Conflict):
    code = "revenue_source_conflict"


class StateConflict(Conflict):
    code = "state_conflict"


# -- others ----------------------------------------------------------------------------------


class BodyTooLarge(RefcoreError):
    code = "body_too_large"
    kind = ErrorKind.TOO_LARGE


class RateLimited(RefcoreError):
    """Carries when to try again, so that the answer can say it (``Retry-After``) as well as
    write it in the message."""

    code = "rate_limited"
    kind = ErrorKind.RATE_LIMITED

    def __init__(self, message: str, *, retry_after_seconds: int | None = None) -> None:
        super().__init__(message)
        self.retry_after_seconds = retry_after_seconds


class MethodNotAllowed(RefcoreError):
    code = "method_not_allowed"
    kind = ErrorKind.METHOD_NOT_ALLOWED


class InternalError(RefcoreError):
    code = "internal_error"
    kind = ErrorKind.INTERNAL


class ConcurrentWrite(Exception):
    """Raised by a store when a concurrent transaction won a race (unique key, serialization).

    Not a caller-facing error: services run their unit of work again, and the second run
    sees the winner's committed row (for example, answering a replay instead of a duplicate).
    """


#: Every code a caller can see, for documentation and the catalog test.
CATALOG: dict[str, ErrorKind] = {
    "invalid_json": ErrorKind.INVALID_INPUT,
    "validation_error": ErrorKind.INVALID_INPUT,
    "field_not_allowed": ErrorKind.INVALID_INPUT,
    "amount_exceeds_payment": ErrorKind.INVALID_INPUT,
    "currency_mismatch": ErrorKind.INVALID_INPUT,
    "invalid_starting_after": ErrorKind.INVALID_INPUT,
    "invalid_signature": ErrorKind.INVALID_INPUT,
    "invalid_signup_token": ErrorKind.INVALID_INPUT,
    "unauthenticated": ErrorKind.UNAUTHENTICATED,
    "forbidden": ErrorKind.FORBIDDEN,
    "promotion_code_not_allowed": ErrorKind.FORBIDDEN,
    "live_key_required": ErrorKind.FORBIDDEN,
    "not_found": ErrorKind.NOT_FOUND,
    "idempotency_conflict": ErrorKind.CONFLICT,
    "dispute_conflict": ErrorKind.CONFLICT,
    "mode_mismatch": ErrorKind.CONFLICT,
    "revenue_source_conflict": ErrorKind.CONFLICT,
    "state_conflict": ErrorKind.CONFLICT,
    "body_too_large": ErrorKind.TOO_LARGE,
    "rate_limited": ErrorKind.RATE_LIMITED,
    "method_not_allowed": ErrorKind.METHOD_NOT_ALLOWED,
    "internal_error": ErrorKind.INTERNAL,
}
#: ``<resource>_not_found`` codes are open-ended (one per resource type) and all NOT_FOUND.
