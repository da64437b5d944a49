"""The path and query are taken as sent (``refcore_http.request_target``): an encoded slash is
no separator, and text that is not UTF-8 is refused instead of read as U+FFFD (probe Q)."""

from __future__ import annotations

import pytest

from refcore.services.runtime import Runtime
from tests.http.world import Client, Tenant, expect, new_tenant


@pytest.fixture
def acme(client: Client, runtime: Runtime) -> Tenant:
    return new_tenant(client, runtime, "acme")


def test_an_encoded_slash_in_an_id_does_not_reach_another_route(client: Client, acme: Tenant) -> None:
    refused = expect(
        client.post(f"/v1/programs/{acme.program_id}%2Fpause", acme.session), 400, "validation_error"
    )
    assert "%2F" in refused["error"]["message"]
    assert expect(client.get(f"/v1/programs/{acme.program_id}", acme.session), 200)["status"] == "active"
    # The route itself still works, written plainly.
    expect(client.post(f"/v1/programs/{acme.program_id}/pause", acme.session), 200)


@pytest.mark.parametrize("path", ["/v1%2Fprograms", "/v1/programs%2f", "/v1/clicks/clk_0%2F1"])
def test_an_encoded_slash_anywhere_in_the_path_is_refused(client: Client, acme: Tenant, path: str) -> None:
    """Also where the decoded path has no route (``clk_0/1``): the answer says why, not ``404``."""
    refused = expect(client.get(path, acme.session), 400, "validation_error")
    assert "%2F" in refused["error"]["message"]


def test_an_encoded_slash_is_refused_on_the_public_capture_shortcut_too(client: Client, acme: Tenant) -> None:
    expect(client.post("/v1%2Fcapture", None, {"via": acme.link_code}), 400, "validation_error")
    clicks = expect(client.get("/v1/clicks", acme.live_key), 200)["data"]
    assert clicks == []


@pytest.mark.parametrize("escape", ["%FF", "%C3%28", "%C0%AF", "%ED%A0%80"])
def test_a_path_that_is_not_utf8_is_refused_not_read_as_a_replacement_character(
    client: Client, acme: Tenant, escape: str
) -> None:
    refused = expect(client.get(f"/v1/programs/prg_{escape}", acme.session), 400, "validation_error")
    assert "UTF-8" in refused["error"]["message"]


def test_other_escapes_in_a_path_still_decode(client: Client, acme: Tenant) -> None:
    """``%63`` is ``c``: an escape of an unreserved character means the character (RFC 3986)."""
    expect(client.get(f"/v1/programs/{acme.program_id.replace('p', '%70', 1)}", acme.session), 200)


@pytest.mark.parametrize("escape", ["%FF", "%C3%28"])
def test_a_query_value_that_is_not_utf8_is_refused_naming_its_parameter(
    client: Client, acme: Tenant, escape: str
) -> None:
    refused = expect(
        client.request("GET", f"/v1/commissions?program_id=prg_{escape}", acme.session),
        400,
        "validation_error",
    )
    assert refused["error"]["param"] == "program_id"


def test_a_query_name_that_is_not_utf8_is_refused(client: Client, acme: Tenant) -> None:
    expect(client.request("GET", "/v1/commissions?%FF=1", acme.session), 400, "validation_error")


def test_a_query_with_valid_escapes_reads_as_before(client: Client, acme: Tenant) -> None:
    """``%5F`` is ``_`` and ``+`` a space; a repeated parameter is still refused by name."""
    listed = expect(
        client.request("GET", f"/v1/commissions?program%5Fid={acme.program_id}", acme.session), 200
    )
    assert listed["data"] == []
    refused = expect(
        client.request("GET", f"/v1/commissions?program_id=a+b&program%5Fid={acme.program_id}", acme.session),
        400,
        "validation_error",
    )
    assert refused["error"]["param"] == "program_id"
