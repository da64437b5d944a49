"""The dashboard session itself (decisions 1): ``DELETE /v1/session`` ends the session that calls it.

Sessions are made by an operator (``refcore session``) and expire on their own
(``REFCORE_SESSION_TTL_HOURS``); this is how their holder ends one sooner, on signing out or on
leaving a shared machine, without an operator. It takes a session only: a key is ``403``, as on
every session route, and a key is revoked with ``DELETE /v1/api-keys/:id`` instead.
"""

from __future__ import annotations

from refcore.representation import JsonObject, timestamp
from refcore.services import tenancy
from refcore_http.auth import credential_in
from refcore_http.endpoints import SESSION, Call, Endpoint, Reply, ok, returns
from refcore_http.schemas import OBJECTS, resource


def _own_token(call: Call) -> str:
    """The token this request authenticated with, read from its one ``Authorization`` header as
    the dispatcher read it (:func:`refcore_http.auth.credential_in`); the principal alone would
    not do, since it names the user and a user may hold several sessions."""
    return credential_in(call.headers.get("authorization", ""))


def end_session(call: Call) -> Reply:
    """Answers the ended session as Stripe answers a deleted object: ``id``, ``object`` and
    ``deleted: true`` (with ``created_at``, as every object has). A second call with the same
    token is ``401``: the token authenticates as nothing any more."""
    ended = tenancy.end_session(call.runtime, call.who, _own_token(call))
    body: JsonObject = {
        "id": ended.id,
        "object": "session",
        "created_at": timestamp(ended.created_at),
        "deleted": True,
    }
    return ok(body)


#: Registered with the other response objects of :mod:`refcore_http.schemas` for the OpenAPI document.
SCHEMAS: dict[str, JsonObject] = {
    "DeletedSession": resource("session", deleted={"const": True}),
}
OBJECTS.update(SCHEMAS)

ROUTES = (
    Endpoint(
        "DELETE",
        "/v1/session",
        "End the calling session (sign out)",
        end_session,
        SESSION,
        returns("DeletedSession"),
        description=(
            "Ends the session whose token authenticates this request; from then on that token is "
            "401 on every server process. The user's other sessions are not affected. "
            "An operator ends all of a user's sessions with `refcore session --email X --end-all`."
        ),
        tags=("sessions",),
    ),
)
