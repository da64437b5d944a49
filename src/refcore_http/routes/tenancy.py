"""Organizations, API keys and Apps (interface 4.2, decisions 1).

API keys are managed with a session only. The create response is the one place a key's secret
appears; later reads show ``last4``.
"""

from __future__ import annotations

from typing import Literal

from attrs import field, frozen

from refcore.representation import represent
from refcore.services import lookups, tenancy
from refcore_http.endpoints import (
    DEVELOPER,
    NO_STORE,
    PAGING,
    SESSION,
    Call,
    Endpoint,
    QueryParam,
    Reply,
    created,
    ok,
    returns,
    returns_list,
)
from refcore_http.replies import listing
from refcore_http.schemas import PATCH


@frozen
class OrganizationBody:
    """A new organization; its creator becomes its owner."""

    name: str


@frozen
class ApiKeyBody:
    """A new API key of an App (decisions 1); the secret is in the response only."""

    app_id: str
    kind: Literal["app", "managed_revenue"]
    mode: Literal["test", "live"]


@frozen
class AppBody:
    """A new App in an organization."""

    organization_id: str
    name: str


@frozen
class AppPatch:
    """Changes to an App."""

    name: str | None = field(default=None, metadata={**PATCH, "description": "A new name"})


def create_organization(call: Call) -> Reply:
    body: OrganizationBody = call.body
    return created(represent(tenancy.create_organization(call.runtime, call.who, body.name)))


def list_organizations(call: Call) -> Reply:
    page = lookups.page_organizations(
        call.runtime,
        call.who,
        limit=call.query.get("limit"),
        starting_after=call.query.get("starting_after"),
    )
    return listing(page)


def get_organization(call: Call) -> Reply:
    return ok(represent(tenancy.get_organization(call.runtime, call.who, call.params["id"])))


def create_api_key(call: Call) -> Reply:
    body: ApiKeyBody = call.body
    issued = tenancy.create_api_key(call.runtime, call.who, body.app_id, body.kind, body.mode)
    return created({**represent(issued.key), "secret": issued.secret}, headers=NO_STORE)


def list_api_keys(call: Call) -> Reply:
    page = tenancy.list_api_keys(
        call.runtime,
        call.who,
        call.query["app_id"],
        limit=call.query.get("limit"),
        starting_after=call.query.get("starting_after"),
    )
    return listing(page)


def get_api_key(call: Call) -> Reply:
    return ok(represent(lookups.get_api_key(call.runtime, call.who, call.params["id"])))


def revoke_api_key(call: Call) -> Reply:
    return ok(represent(tenancy.revoke_api_key(call.runtime, call.who, call.params["id"])))


def create_app(call: Call) -> Reply:
    body: AppBody = call.body
    return created(represent(tenancy.create_app(call.runtime, call.who, body.organization_id, body.name)))


def list_apps(call: Call) -> Reply:
    page = tenancy.list_apps(
        call.runtime,
        call.who,
        organization_id=call.query.get("organization_id"),
        limit=call.query.get("limit"),
        starting_after=call.query.get("starting_after"),
    )
    return listing(page)


def get_app(call: Call) -> Reply:
    return ok(represent(tenancy.get_app(call.runtime, call.who, call.params["id"])))


def update_app(call: Call) -> Reply:
    body: AppPatch = call.body
    app_id = call.params["id"]
    if "name" not in call.sent:
        return ok(represent(tenancy.get_app(call.runtime, call.who, app_id)))
    return ok(represent(tenancy.update_app(call.runtime, call.who, app_id, body.name)))


_TAGS = ("organizations",)

ROUTES = (
    Endpoint(
        "GET",
        "/v1/organizations",
        "List the session's organizations",
        list_organizations,
        SESSION,
        returns_list("Organization"),
        query=PAGING,
        tags=_TAGS,
    ),
    Endpoint(
        "POST",
        "/v1/organizations",
        "Create an organization",
        create_organization,
        SESSION,
        returns("Organization", 201),
        body=OrganizationBody,
        tags=_TAGS,
    ),
    Endpoint(
        "GET",
        "/v1/organizations/:id",
        "Read an organization",
        get_organization,
        SESSION,
        returns("Organization"),
        tags=_TAGS,
    ),
    Endpoint(
        "GET",
        "/v1/api-keys",
        "List an App's API keys",
        list_api_keys,
        SESSION,
        returns_list("ApiKey"),
        query=(QueryParam("app_id", "The App whose keys are listed", required=True), *PAGING),
        tags=_TAGS,
    ),
    Endpoint(
        "POST",
        "/v1/api-keys",
        "Create an API key (the secret is shown once)",
        create_api_key,
        SESSION,
        returns("IssuedApiKey", 201),
        body=ApiKeyBody,
        tags=_TAGS,
    ),
    Endpoint(
        "GET", "/v1/api-keys/:id", "Read an API key", get_api_key, SESSION, returns("ApiKey"), tags=_TAGS
    ),
    Endpoint(
        "DELETE",
        "/v1/api-keys/:id",
        "Revoke an API key at once",
        revoke_api_key,
        SESSION,
        returns("ApiKey"),
        tags=_TAGS,
    ),
    Endpoint(
        "GET",
        "/v1/apps",
        "List Apps",
        list_apps,
        DEVELOPER,
        returns_list("App"),
        query=(
            QueryParam(
                "organization_id",
                "The organization whose Apps are listed (required when the session has several)",
            ),
            *PAGING,
        ),
        tags=_TAGS,
    ),
    Endpoint(
        "POST",
        "/v1/apps",
        "Create an App",
        create_app,
        SESSION,
        returns("App", 201),
        body=AppBody,
        tags=_TAGS,
    ),
    Endpoint("GET", "/v1/apps/:id", "Read an App", get_app, DEVELOPER, returns("App"), tags=_TAGS),
    Endpoint(
        "PATCH",
        "/v1/apps/:id",
        "Update an App",
        update_app,
        DEVELOPER,
        returns("App"),
        body=AppPatch,
        tags=_TAGS,
    ),
)
