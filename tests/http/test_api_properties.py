"""Property-based API test: Schemathesis over the server's own OpenAPI document, in-process.

For every operation it generates requests that follow the document and requests that break it
(wrong types, missing or extra fields, out-of-range values), sends them with the credential the
operation takes, and checks that no response is a 5xx, that every status, content type and body
is what the document says, and that invalid requests are refused. The checks that a schema-valid
request must succeed is left out: business rules (an unknown ID, a taken slug) legitimately
refuse requests the schema cannot rule out.
"""

from __future__ import annotations

import warnings

import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import positive_data_acceptance
from starlette.exceptions import StarletteDeprecationWarning

from refcore.clocks import ManualClock
from refcore.services.runtime import Runtime
from refcore.services.tenancy import issue_affiliate_key
from refcore_http.app import create_app
from refcore_http.settings import Settings
from refcore_memstore import memory_runtime
from tests.http.world import Client, Tenant, new_activity, new_session, new_tenant

#: Per operation and generation mode; with about 55 operations this takes some 20 seconds.
EXAMPLES = 20


def _target() -> tuple[schemathesis.BaseSchema, Tenant, str, Runtime]:
    """The app over a memory store with one tenant and some activity, and its loaded document.

    Built when the module is collected (Schemathesis parametrizes from the document), which costs
    a few milliseconds; the lazy fixture loader does not support this pytest version.
    """
    runtime = memory_runtime(clock=ManualClock())
    app = create_app(runtime, Settings(database_url="memory://"))
    client = Client(app)
    tenant = new_tenant(client, runtime, "props")
    new_activity(client, tenant, tenant.live_key, "1")
    affiliate_key = runtime.transaction(
        lambda tx: issue_affiliate_key(tx, tenant.app_id, tenant.affiliate_id).secret
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StarletteDeprecationWarning)
        return schemathesis.openapi.from_asgi("/v1/openapi.json", app), tenant, affiliate_key, runtime


#: ``AFFILIATE_KEY``: a key of the tenant's affiliate, for the affiliate side of payouts.
schema, TENANT, AFFILIATE_KEY, RUNTIME = _target()


def _credential(auth: str, tenant: Tenant) -> dict[str, str]:
    token = {
        "session": tenant.session,
        "session_or_app_key": tenant.session,
        "app_key": tenant.live_key,
        "live_app_key": tenant.live_key,
        "affiliate_key": AFFILIATE_KEY,
        "affiliate_key_or_developer": AFFILIATE_KEY,
        "none_or_app_key": None,
        "none": None,
    }[auth]
    return {"Authorization": f"Bearer {token}"} if token else {}


@schema.parametrize()
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
def test_the_api_never_fails_and_always_matches_its_document(case: schemathesis.Case) -> None:
    auth = case.operation.definition.raw["x-refcore-auth"]
    headers = _credential(auth, TENANT)
    if (case.operation.method.upper(), case.operation.path) == ("DELETE", "/v1/session"):
        # Signing out ends the session it is sent with: each call ends a session of its own,
        # so that the tenant's stays good for every other operation.
        headers = {"Authorization": f"Bearer {new_session(RUNTIME, 'owner@props.example')}"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StarletteDeprecationWarning)
        case.call_and_validate(headers=headers, excluded_checks=[positive_data_acceptance])
