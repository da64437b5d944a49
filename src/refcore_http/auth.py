"""``Authorization: Bearer <credential>`` to a :class:`~refcore.services.principal.Principal`.

The header is read on the event loop (:func:`credential_of`: a missing or malformed one is
``401`` before anything else is read, and so is a request that sends it more than once: RFC 9110
allows one ``Authorization`` field, and a proxy that read the other one would have authorised
the request on a credential refcore never saw). The credential is then resolved by
:func:`refcore.services.tenancy.authenticate` (sessions and keys are stored only as digests, and
checked on every request, so a revoked key fails at once; the requests of one write batch,
which arrived together and are committed together, share one lookup of a key, see
:func:`principals_shared`; on PostgreSQL a write with a key authenticated before checks only
that it still stands, in its first read, see :mod:`refcore_http.known_keys`) in the *same*
worker thread as the handler (:func:`principal_of`, called by :mod:`refcore_http.dispatch`):
one thread hop per request instead of two, each hop costing a thread wake-up. Then the
endpoint's :class:`Access` decides whether this kind of credential may call it at all
(``403 forbidden``); which objects it may touch is decided by the services (``404`` for another
tenant).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from starlette.requests import Request

from refcore.errors import Forbidden, Unauthenticated
from refcore.services.principal import Principal
from refcore.services.runtime import Runtime
from refcore.services.tenancy import authenticate
from refcore_http.endpoints import Access
from refcore_http.known_keys import KnownKeys
from refcore_http.request_headers import header, repeated

_MAX_CREDENTIAL = 512
#: What HTTP allows around a header's value and between its words (RFC 9110's ``OWS``).
_BLANKS = " \t"

#: ``found``: the principals looked up so far by this thread's :func:`principals_shared` block.
_SHARED = threading.local()


def bearer_credential(request: Request) -> str | None:
    """The credential, ``None`` without an Authorization header; a malformed header is 401, and
    so are several Authorization headers, whatever their values (even equal ones)."""
    sent = header(request, b"authorization")
    if sent is None:
        return None
    if repeated(request, b"authorization"):
        raise Unauthenticated("Send one Authorization header; this request has several")
    return credential_in(sent)


def credential_in(authorization: str) -> str:
    """The credential of an ``Authorization`` header's value; not ``Bearer <credential>`` is 401."""
    # Only HTTP's own blanks: ``str.strip()`` also takes NO-BREAK SPACE and NEXT LINE (the
    # header is decoded as Latin-1), so ``<key>\xa0`` had authenticated as ``<key>`` (probe Q).
    scheme, _, credential = authorization.strip(_BLANKS).partition(" ")
    credential = credential.strip(_BLANKS)
    if scheme.lower() != "bearer" or not credential or len(credential) > _MAX_CREDENTIAL:
        raise Unauthenticated("Send the credential as Authorization: Bearer <key or session token>")
    return credential


def credential_of(request: Request, access: Access) -> str | None:
    """The credential this request must be authenticated with, ``None`` when it needs none.

    Raises ``401`` at once when the endpoint needs one and it is missing or malformed."""
    if access.ignored:
        return None
    credential = bearer_credential(request)
    if credential is None and not access.optional:
        raise Unauthenticated("This endpoint needs an Authorization: Bearer credential")
    return credential


@contextmanager
def principals_shared() -> Iterator[None]:
    """Inside the block (in this thread), each credential is looked up once: the requests of one
    write batch (:mod:`refcore_http.write_batches`), which arrived together, are authenticated
    as of the batch's first lookup of their key, as the captures of one batch are. A key's
    lookup was 40 µs of a batched payment's 440 of CPU (``bench/history.md``, twenty-sixth
    session). A credential that fails is looked up again by each request that sends it."""
    _SHARED.found = {}
    try:
        yield
    finally:
        _SHARED.found = None


def principal_of(
    runtime: Runtime, access: Access, credential: str, known: KnownKeys | None = None
) -> Principal:
    """The principal of ``credential`` (``401`` when unknown or revoked), if ``access`` takes its
    kind (``403`` otherwise). Synchronous: it reads the database, so it runs in a worker thread.

    With ``known``, a key authenticated before is taken as it was, and the write running now
    checks in its first read that it still stands (:mod:`refcore_http.known_keys`)."""
    found: dict[str, Principal] | None = getattr(_SHARED, "found", None)
    principal = found.get(credential) if found is not None else None
    if principal is None and known is not None:
        principal = known.principal(runtime, credential)
    if principal is None:
        principal = authenticate(runtime, credential)
        if found is not None:
            found[credential] = principal
        if known is not None:
            known.remember(runtime, credential, principal)
    if principal.kind not in access.kinds:
        raise Forbidden(f"This endpoint needs {access.description}")
    return principal
