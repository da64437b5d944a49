"""Input no database can keep is a ``400`` that names the field, on SQLite and PostgreSQL alike.

Found by fuzzing the API with schemathesis: a lone UTF-16 surrogate (``"\\ud800"``) in any JSON
string was a ``500`` on both databases (no UTF-8 encoder writes it), a NUL character (``"\\u0000"``
or ``%00`` in a path or query) a ``500`` on PostgreSQL (its ``text`` cannot hold it) and stored
on SQLite, and an overview period at the edges of the calendar a ``500`` too. Each is now refused
before any store sees it, and nothing is written.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from refcore.clocks import ManualClock
from refcore.services.runtime import Runtime, Tx
from refcore_http.app import create_app
from refcore_http.settings import Settings
from refcore_sqlstore import SqlStore
from tests.http.world import Client, Tenant, expect, new_tenant

_JSON = {"Content-Type": "application/json"}


@pytest.fixture
def runtime(sql_store: SqlStore) -> Runtime:
    return sql_store.runtime(clock=ManualClock())


@pytest.fixture
def client(runtime: Runtime) -> Iterator[Client]:
    yield Client(create_app(runtime, Settings(database_url="memory://")))


@pytest.fixture
def tenant(client: Client, runtime: Runtime) -> Tenant:
    return new_tenant(client, runtime, "acme")


def _clicks(runtime: Runtime) -> int:
    def count(tx: Tx) -> int:
        return len(tx.uow.clicks.find_all({}))

    return runtime.read(count)


@pytest.mark.parametrize(
    ("raw", "code", "param"),
    [
        (b'{"via": "\\ud800"}', "validation_error", "via"),
        (b'{"via": "x\\udfffy"}', "validation_error", "via"),
        (b'{"via": "x\\u0000y"}', "validation_error", "via"),
        (b'{"via": "ok", "page": "https://shop.example/\\u0000"}', "validation_error", "page"),
        (b'{"via\\u0000": "x"}', "validation_error", "via\x00"),
        (b'{"via": "\xed\xa0\x80"}', "invalid_json", None),  # a surrogate spelt in UTF-8 bytes
    ],
    ids=["lone high surrogate", "lone low surrogate", "NUL", "NUL in a second field", "NUL in a key", "raw"],
)
def test_a_capture_with_unstorable_text_is_refused_and_records_nothing(
    client: Client, runtime: Runtime, tenant: Tenant, raw: bytes, code: str, param: str | None
) -> None:
    before = _clicks(runtime)
    error = expect(client.request("POST", "/v1/capture", None, content=raw, headers=_JSON), 400, code)[
        "error"
    ]
    assert error.get("param") == param
    assert _clicks(runtime) == before
    # A surrogate pair is text (an emoji), and an escaped one is stored as that text.
    expect(
        client.request(
            "POST",
            "/v1/capture",
            None,
            content=b'{"via": "%s", "page": "\\ud83d\\ude00"}' % tenant.link_code.encode(),
            headers=_JSON,
        ),
        201,
    )


def test_keyed_writes_refuse_unstorable_text_before_touching_the_store(
    client: Client, tenant: Tenant
) -> None:
    cases = [
        ("/v1/organizations", tenant.session, b'{"name": "a\\u0000b"}', "name"),
        ("/v1/transactions", tenant.live_key, b'{"payment_id": "\\ud800", "amount": 1}', "payment_id"),
        (
            "/v1/api-keys",
            tenant.session,
            b'{"app_id": "app_\\udfff", "kind": "app", "mode": "live"}',
            "app_id",
        ),
    ]
    for path, token, raw, param in cases:
        response = client.request("POST", path, token, content=raw, headers=_JSON)
        assert expect(response, 400, "validation_error")["error"]["param"] == param, path


def test_a_nul_in_a_path_or_a_query_is_refused(client: Client, tenant: Tenant) -> None:
    expect(client.get("/v1/organizations/org_%00", tenant.session), 400, "validation_error")
    # As for a bad body, a credential is checked first: an unknown key is 401, not 400.
    expect(client.get("/v1/organizations/org_%00", "sk_live_unknown"), 401, "unauthenticated")
    expect(client.get("/v1/join/a%00b"), 400, "validation_error")
    response = client.get("/v1/customers", tenant.session, app_id=tenant.app_id, email="a\x00b")
    assert expect(response, 400, "validation_error")["error"]["param"] == "email"


@pytest.mark.parametrize(
    ("query", "param"),
    [
        ({"to": "0001-01-01"}, "to"),
        ({"to": "0001-01-30"}, "to"),
        ({"to": "0001-01-01T00:00:00+01:00"}, "to"),
        ({"to": "9999-12-31T23:59:59-14:00"}, "to"),
        ({"from": "0001-01-01T00:00:00+14:00"}, "from"),
        ({"from": "1969-12-31T23:59:59Z"}, "from"),
    ],
)
def test_an_overview_period_outside_1970_to_9999_is_a_validation_error(
    client: Client, tenant: Tenant, query: dict[str, str], param: str
) -> None:
    response = client.get(f"/v1/apps/{tenant.app_id}/overview", tenant.session, **query)
    assert expect(response, 400, "validation_error")["error"]["param"] == param
    expect(client.get(f"/v1/apps/{tenant.app_id}/overview", tenant.session, to="1970-02-01"), 200)
