"""``Authorization: Bearer <credential>`` to a :class:`~refcore.services.principal.Principal`.

The credential is resolved by :func:`refcore.services.tenancy.authenticate` (sessions and keys
are stored only as digests) in a worker thread. Then the endpoint's :class:`Access` decides
whether this kind of credential may call it at all (``403 forbidden``); which objects it may
touch is decided by the services (``404`` for another tenant).
"""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from refcore.errors import Forbidden, Unauthenticated
from refcore.services.principal import Principal
from refcore.services.runtime import Runtime
from refcore.services.tenancy import authenticate
from refcore_http.endpoints import Access

_MAX_CREDENTIAL = 512


def bearer_credential(request: Request) -> str | None:
    """The credential, ``None`` without an Authorization header; a malformed header is 401."""
    header = request.headers.get("authorization")
    if header is None:
        return None
    scheme, _, credential = header.strip().partition(" ")
    credential = credential.strip()
    if scheme.lower() != "bearer" or not credential or len(credential) > _MAX_CREDENTIAL:
        raise Unauthenticated("Send the credential as Authorization: Bearer <key or session token>")
    return credential


async def authorize(request: Request, access: Access, runtime: Runtime) -> Principal | None:
    if access.ignored:
        return None
    credential = bearer_credential(request)
    if credential is None:
        if access.optional:
            return None
        raise Unauthenticated("This endpoint needs an Authorization: Bearer credential")
    principal = await run_in_threadpool(authenticate, runtime, credential)
    if principal.kind not in access.kinds:
        raise Forbidden(f"This endpoint needs {access.description}")
    return principal
