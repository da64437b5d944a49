"""A ``DELETE`` answers the object as it was, with ``"deleted": true`` (docs/api.md).

The logo's delete had answered the cleared row instead (``content_type``, ``sha256`` and ``url``
``null``, ``size`` 0, a new ``updated_at``): a client could not tell from the answer what it had
removed, unlike the deletes of a link or of the webhook endpoint.
"""

from __future__ import annotations

from typing import Any

import pytest

from refcore.services.runtime import Runtime
from refcore_http.app import create_app
from refcore_http.settings import Settings
from tests.http.world import Client, Tenant, expect, new_tenant
from tests.selfservice.images import png


@pytest.fixture
def client(runtime: Runtime) -> Client:
    settings = Settings(database_url="memory://", secret_key="deletes-test-server-key-0123456789abcdef")
    return Client(create_app(runtime, settings))


@pytest.fixture
def tenant(client: Client, runtime: Runtime) -> Tenant:
    return new_tenant(client, runtime, "deletes")


def _as_it_was(before: dict[str, Any], removed: dict[str, Any]) -> None:
    assert removed == {**before, "deleted": True}


def test_deleting_the_logo_answers_the_logo_as_it_was(client: Client, tenant: Tenant) -> None:
    logo_path = f"/v1/apps/{tenant.app_id}/logo"
    uploaded = expect(
        client.request(
            "POST", logo_path, tenant.session, content=png(), headers={"Content-Type": "image/png"}
        ),
        200,
    )
    removed = expect(client.delete(logo_path, tenant.session), 200)
    _as_it_was(uploaded, removed)
    assert removed["content_type"] == "image/png" and removed["size"] == len(png())
    expect(client.get(removed["url"]), 404, "logo_not_found")
    expect(client.delete(logo_path, tenant.session), 404, "logo_not_found")


def test_deleting_a_link_or_the_webhook_endpoint_answers_it_as_it_was(client: Client, tenant: Tenant) -> None:
    link_path = f"/v1/program-affiliates/{tenant.affiliate_id}/links/{tenant.link_id}"
    link = expect(client.get(link_path, tenant.session), 200)
    _as_it_was(link, expect(client.delete(link_path, tenant.session), 200))
    hook_path = f"/v1/apps/{tenant.app_id}/webhook"
    expect(client.request("PUT", hook_path, tenant.session, json={"url": "https://hooks.example.com/"}), 201)
    endpoint = expect(client.get(hook_path, tenant.session), 200)
    _as_it_was(endpoint, expect(client.delete(hook_path, tenant.session), 200))
