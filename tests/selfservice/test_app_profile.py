"""The App profile: agreement versions and the logo (PNG, JPEG or WebP by their bytes, ≤ 1 MiB)."""

from __future__ import annotations

import hashlib

import httpx
import pytest

from refcore.services.runtime import Runtime
from refcore_http.app import create_app
from refcore_http.settings import Settings
from tests.http.world import Client, Tenant, expect, new_tenant
from tests.selfservice.images import BARE_SVG, HTML, SVG, jpeg, png, webp

ONE_MIB = 1024 * 1024


@pytest.fixture
def acme(client: Client, runtime: Runtime) -> Tenant:
    return new_tenant(client, runtime, "acme")


def _upload(client: Client, tenant: Tenant, data: bytes, content_type: str = "image/png") -> httpx.Response:
    return client.request(
        "POST",
        f"/v1/apps/{tenant.app_id}/logo",
        tenant.session,
        content=data,
        headers={"Content-Type": content_type},
    )


# -- agreement ------------------------------------------------------------------------------------


def test_publishing_an_agreement_keeps_every_version_and_the_newest_is_current(
    client: Client, acme: Tenant
) -> None:
    path = f"/v1/apps/{acme.app_id}/agreement"
    empty = expect(client.get(path, acme.session), 200)
    assert (empty["object"], empty["current"], empty["history"]) == ("app_agreement", None, [])
    first = expect(client.patch(path, acme.session, {"text": "Version one"}), 200)
    second = expect(client.patch(path, acme.live_key, {"text": "Version two"}), 200)
    assert first["current"]["text"] == "Version one"
    assert second["current"]["text"] == "Version two"
    assert [v["text"] for v in second["history"]] == ["Version two", "Version one"]
    old = first["current"]
    assert expect(client.get(f"{path}/versions/{old['id']}", acme.session), 200) == old
    assert expect(client.get(path, acme.session), 200) == second


def test_the_agreement_history_is_paged_over_http(client: Client, acme: Tenant) -> None:
    """decisions 9 on the history: ``limit`` and ``starting_after``, ``has_more``, refusals in the
    envelope; ``current`` stays the newest on every page."""
    path = f"/v1/apps/{acme.app_id}/agreement"
    for n in range(3):
        expect(client.patch(path, acme.session, {"text": f"Version {n}"}), 200)
    first = expect(client.get(path, acme.session, limit="2"), 200)
    assert [v["text"] for v in first["history"]] == ["Version 2", "Version 1"] and first["has_more"] is True
    rest = expect(client.get(path, acme.session, starting_after=first["history"][-1]["id"]), 200)
    assert [v["text"] for v in rest["history"]] == ["Version 0"] and rest["has_more"] is False
    assert rest["current"] == first["current"] and first["current"]["text"] == "Version 2"
    for bad in ("0", "101", "two", "2.0"):
        refused = expect(client.get(path, acme.session, limit=bad), 400, "validation_error")
        assert refused["error"]["param"] == "limit"
    not_a_version = client.get(path, acme.session, starting_after=acme.app_id)
    foreign = expect(not_a_version, 400, "invalid_starting_after")
    assert foreign["error"]["param"] == "starting_after"


def test_an_agreement_needs_text(client: Client, acme: Tenant) -> None:
    path = f"/v1/apps/{acme.app_id}/agreement"
    expect(client.patch(path, acme.session, {}), 400, "validation_error")
    expect(client.patch(path, acme.session, {"text": "   "}), 400, "validation_error")
    expect(client.patch(path, acme.session, {"text": "x" * 100_001}), 400, "validation_error")
    assert expect(client.get(path, acme.session), 200)["history"] == []


def test_another_tenants_agreement_is_not_found(client: Client, runtime: Runtime, acme: Tenant) -> None:
    beta = new_tenant(client, runtime, "beta")
    version = expect(client.patch(f"/v1/apps/{acme.app_id}/agreement", acme.session, {"text": "Mine"}), 200)
    version_id = version["current"]["id"]
    expect(client.get(f"/v1/apps/{acme.app_id}/agreement", beta.session), 404, "app_not_found")
    expect(client.patch(f"/v1/apps/{acme.app_id}/agreement", beta.live_key, {"text": "Theirs"}), 404)
    expect(client.get(f"/v1/apps/{beta.app_id}/agreement/versions/{version_id}", beta.session), 404)
    assert (
        expect(client.get(f"/v1/apps/{acme.app_id}/agreement", acme.session), 200)["current"]["text"]
        == "Mine"
    )


# -- logo -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("make", "declared", "sniffed"),
    [
        (png, "image/png", "image/png"),
        (jpeg, "image/jpeg", "image/jpeg"),
        (webp, "image/webp", "image/webp"),
        (png, "application/octet-stream", "image/png"),
        (jpeg, "image/png", "image/jpeg"),
        (webp, "text/plain", "image/webp"),
    ],
)
def test_a_logo_is_stored_with_the_type_its_bytes_have(
    client: Client, acme: Tenant, make: object, declared: str, sniffed: str
) -> None:
    assert callable(make)
    data: bytes = make()
    logo = expect(_upload(client, acme, data, declared), 200)
    assert (logo["object"], logo["content_type"], logo["size"]) == ("app_logo", sniffed, len(data))
    assert logo["sha256"] == hashlib.sha256(data).hexdigest()
    served = client.get(logo["url"])
    assert served.status_code == 200 and served.content == data
    assert served.headers["content-type"] == sniffed
    assert served.headers["x-content-type-options"] == "nosniff"
    assert served.headers["etag"] == f'"{logo["sha256"]}"'


def test_a_file_that_claims_to_be_a_png_but_is_not_is_refused(client: Client, acme: Tenant) -> None:
    for impostor in (HTML, b"GIF89a\x01\x00\x01\x00", b"\x89PNG but not really", png()[:20]):
        body = expect(_upload(client, acme, impostor, "image/png"), 400, "validation_error")
        assert body["error"]["param"] == "logo"
    expect(client.get(f"/v1/apps/{acme.app_id}/logo"), 404, "logo_not_found")


@pytest.mark.parametrize("svg", [SVG, BARE_SVG])
def test_an_svg_logo_is_refused(client: Client, acme: Tenant, svg: bytes) -> None:
    body = expect(_upload(client, acme, svg, "image/svg+xml"), 400, "validation_error")
    assert "SVG" in body["error"]["message"]


def test_an_oversized_logo_is_refused_by_the_server_limit(client: Client, acme: Tenant) -> None:
    big = png() + b"\x00" * ONE_MIB
    expect(_upload(client, acme, big), 413, "body_too_large")
    expect(client.get(f"/v1/apps/{acme.app_id}/logo"), 404, "logo_not_found")


def test_the_logo_limit_holds_even_when_the_server_takes_larger_bodies(runtime: Runtime) -> None:
    """The 1 MiB rule belongs to logos, not to the HTTP body limit of the day."""
    client = Client(create_app(runtime, Settings(database_url="memory://", max_body_bytes=4 * ONE_MIB)))
    acme = new_tenant(client, runtime, "roomy")
    just_too_big = png() + b"\x00" * (ONE_MIB - len(png()) + 1)
    assert len(just_too_big) == ONE_MIB + 1
    expect(_upload(client, acme, just_too_big), 413, "body_too_large")
    at_the_limit = just_too_big[:-1]
    assert expect(_upload(client, acme, at_the_limit), 200)["size"] == ONE_MIB


def test_an_empty_logo_is_refused(client: Client, acme: Tenant) -> None:
    expect(_upload(client, acme, b""), 400, "validation_error")


def test_uploading_again_replaces_the_logo_and_its_url(client: Client, acme: Tenant) -> None:
    first = expect(_upload(client, acme, png(1, 1)), 200)
    second = expect(_upload(client, acme, png(2, 2)), 200)
    assert first["id"] == second["id"] and first["url"] != second["url"]
    assert client.get(second["url"]).content == png(2, 2)


def test_removing_the_logo(client: Client, acme: Tenant) -> None:
    expect(_upload(client, acme, png()), 200)
    removed = expect(client.delete(f"/v1/apps/{acme.app_id}/logo", acme.session), 200)
    assert removed["deleted"] is True and removed["url"] and removed["content_type"] == "image/png"
    expect(client.get(f"/v1/apps/{acme.app_id}/logo"), 404, "logo_not_found")
    expect(client.delete(f"/v1/apps/{acme.app_id}/logo", acme.session), 404, "logo_not_found")
    assert expect(client.get("/v1/join/acme-partners"), 200)["app"]["logo_url"] is None


def test_another_tenant_cannot_change_or_remove_the_logo(
    client: Client, runtime: Runtime, acme: Tenant
) -> None:
    beta = new_tenant(client, runtime, "beta")
    expect(_upload(client, acme, png()), 200)
    for credential in (beta.session, beta.live_key):
        expect(
            client.request(
                "POST",
                f"/v1/apps/{acme.app_id}/logo",
                credential,
                content=jpeg(),
                headers={"Content-Type": "image/jpeg"},
            ),
            404,
            "app_not_found",
        )
        expect(client.delete(f"/v1/apps/{acme.app_id}/logo", credential), 404, "app_not_found")
    assert client.get(f"/v1/apps/{acme.app_id}/logo").content == png()


def test_uploading_needs_a_credential(client: Client, acme: Tenant) -> None:
    response = client.request(
        "POST", f"/v1/apps/{acme.app_id}/logo", content=png(), headers={"Content-Type": "image/png"}
    )
    expect(response, 401, "unauthenticated")


def test_a_logo_the_client_has_is_not_sent_again(client: Client, acme: Tenant) -> None:
    """``If-None-Match`` with the logo's ``ETag`` is ``304`` without a body; another tag, or a
    replaced logo, gets the image."""
    logo = expect(_upload(client, acme, png(), "image/png"), 200)
    etag = f'"{logo["sha256"]}"'
    for sent in (etag, f"W/{etag}", f'"other", {etag}', "*"):
        again = client.request("GET", logo["url"], headers={"If-None-Match": sent})
        assert (again.status_code, again.content, again.headers["etag"]) == (304, b"", etag), sent
    changed = client.request("GET", logo["url"], headers={"If-None-Match": '"other"'})
    assert changed.status_code == 200 and changed.content == png()
    replaced = expect(_upload(client, acme, jpeg(), "image/jpeg"), 200)
    fresh = client.request("GET", replaced["url"], headers={"If-None-Match": etag})
    assert fresh.status_code == 200 and fresh.content == jpeg()
