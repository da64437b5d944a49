"""Affiliate self-service with ``key_aff_…``: own links only; nothing of others is visible.

Each affiliate here joined through the hosted signup, so the keys are the real thing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from refcore.services import affiliate_links
from refcore.services.runtime import Runtime
from tests.http.world import JSON, Client, Tenant, expect, new_tenant
from tests.selfservice.world import join


class Two:
    """Two affiliates who joined the same program, and one who joined another App's program."""

    def __init__(self, client: Client, runtime: Runtime, mail_dir: Path) -> None:
        self.acme: Tenant = new_tenant(client, runtime, "acme")
        self.other: Tenant = new_tenant(client, runtime, "other")
        self.sam: JSON = join(client, mail_dir, "acme-partners", "sam@x.example")
        self.kim: JSON = join(client, mail_dir, "acme-partners", "kim@x.example")
        self.zed: JSON = join(client, mail_dir, "other-partners", "zed@x.example")

    @staticmethod
    def key(member: JSON) -> str:
        return str(member["api_key"]["secret"])


@pytest.fixture
def two(client: Client, runtime: Runtime, mail_dir: Path) -> Two:
    return Two(client, runtime, mail_dir)


def _links(program_id: str) -> str:
    return f"/v1/affiliate/programs/{program_id}/links"


def test_an_affiliate_creates_lists_reads_and_deletes_its_named_links(client: Client, two: Two) -> None:
    sam, path = Two.key(two.sam), _links(two.acme.program_id)
    blog = expect(client.post(path, sam, {"name": "Blog"}), 201)
    video = expect(client.post(path, sam, {"name": "Video", "code": "Sam-Video"}), 201)
    assert video["code"] == "sam-video"
    assert blog["program_id"] == two.acme.program_id
    listed = expect(client.get(path, sam), 200)
    assert [link["id"] for link in listed["data"]] == [video["id"], blog["id"]]
    assert expect(client.get(f"{path}/{blog['id']}", sam), 200)["name"] == "Blog"
    deleted = expect(client.delete(f"{path}/{blog['id']}", sam), 200)
    assert deleted["deleted"] is True
    assert [link["id"] for link in expect(client.get(path, sam), 200)["data"]] == [video["id"]]
    expect(client.get(f"{path}/{blog['id']}", sam), 404, "link_not_found")
    # A deleted link's code stays reserved, and stops attributing.
    expect(client.post("/v1/capture", json={"via": blog["code"]}), 404, "link_not_found")
    expect(client.post(path, sam, {"name": "Again", "code": blog["code"]}), 400, "validation_error")


def test_the_developer_sees_links_the_affiliate_made(client: Client, two: Two) -> None:
    made = expect(client.post(_links(two.acme.program_id), Two.key(two.sam), {"name": "Blog"}), 201)
    affiliate_id = two.sam["program_affiliate"]["id"]
    listed = expect(client.get(f"/v1/program-affiliates/{affiliate_id}/links", two.acme.session), 200)
    assert [link["id"] for link in listed["data"]] == [made["id"]]


def test_another_affiliates_links_are_not_found(client: Client, two: Two) -> None:
    path = _links(two.acme.program_id)
    kims = expect(client.post(path, Two.key(two.kim), {"name": "Kim's"}), 201)
    sam = Two.key(two.sam)
    assert expect(client.get(path, sam), 200)["data"] == []
    expect(client.get(f"{path}/{kims['id']}", sam), 404, "link_not_found")
    expect(client.delete(f"{path}/{kims['id']}", sam), 404, "link_not_found")
    # The Developer's own link of the tenant's first affiliate is not Sam's either.
    expect(client.get(f"{path}/{two.acme.link_id}", sam), 404, "link_not_found")
    # Kim's link is untouched.
    assert expect(client.get(f"{path}/{kims['id']}", Two.key(two.kim)), 200)["name"] == "Kim's"


def test_another_program_is_not_found(client: Client, two: Two) -> None:
    sam = Two.key(two.sam)
    other = _links(two.other.program_id)
    expect(client.get(other, sam), 404, "program_not_found")
    expect(client.post(other, sam, {"name": "Sneaky"}), 404, "program_not_found")
    zeds = expect(client.post(other, Two.key(two.zed), {"name": "Zed's"}), 201)
    expect(client.delete(f"{other}/{zeds['id']}", sam), 404, "program_not_found")
    # A link ID of another program under the caller's own program is still not its own.
    expect(client.get(f"{_links(two.acme.program_id)}/{zeds['id']}", sam), 404, "link_not_found")
    expect(client.get(_links("prg_doesnotexist"), sam), 404, "program_not_found")


def test_a_cursor_from_another_affiliates_list_is_refused(client: Client, two: Two) -> None:
    path = _links(two.acme.program_id)
    kims = expect(client.post(path, Two.key(two.kim), {"name": "Kim's"}), 201)
    expect(client.get(path, Two.key(two.sam), starting_after=kims["id"]), 400, "invalid_starting_after")


def test_affiliate_keys_reach_nothing_of_the_developer(client: Client, two: Two) -> None:
    sam = Two.key(two.sam)
    affiliate_id = two.sam["program_affiliate"]["id"]
    for path in (
        f"/v1/program-affiliates/{affiliate_id}",
        f"/v1/program-affiliates/{affiliate_id}/links",
        f"/v1/programs/{two.acme.program_id}",
        f"/v1/apps/{two.acme.app_id}",
        f"/v1/apps/{two.acme.app_id}/setup-status",
        "/v1/clicks",
    ):
        expect(client.get(path, sam), 403, "forbidden")
    expect(client.post(f"/v1/program-affiliates/{affiliate_id}/approve", sam), 403, "forbidden")


def test_developer_credentials_cannot_use_the_affiliate_routes(client: Client, two: Two) -> None:
    path = _links(two.acme.program_id)
    for credential in (two.acme.session, two.acme.live_key):
        expect(client.get(path, credential), 403, "forbidden")
        expect(client.post(path, credential, {"name": "X"}), 403, "forbidden")
    expect(client.get(path), 401, "unauthenticated")


def test_a_disabled_affiliate_cannot_create_links_but_can_still_read_them(client: Client, two: Two) -> None:
    sam, path = Two.key(two.sam), _links(two.acme.program_id)
    blog = expect(client.post(path, sam, {"name": "Blog"}), 201)
    expect(
        client.post(f"/v1/program-affiliates/{two.sam['program_affiliate']['id']}/disable", two.acme.session),
        200,
    )
    expect(client.post(path, sam, {"name": "More"}), 409, "state_conflict")
    assert [link["id"] for link in expect(client.get(path, sam), 200)["data"]] == [blog["id"]]


def test_a_revoked_affiliate_key_stops_working(client: Client, two: Two) -> None:
    expect(client.delete(f"/v1/api-keys/{two.sam['api_key']['id']}", two.acme.session), 200)
    expect(client.get(_links(two.acme.program_id), Two.key(two.sam)), 401, "unauthenticated")


def test_a_named_link_needs_a_name_and_a_valid_code(client: Client, two: Two) -> None:
    sam, path = Two.key(two.sam), _links(two.acme.program_id)
    expect(client.post(path, sam, {}), 400, "validation_error")
    expect(client.post(path, sam, {"name": "X", "code": "no spaces"}), 400, "validation_error")
    expect(client.post(path, sam, {"name": "X", "code": "acme-ally"}), 400, "validation_error")  # taken


def _affiliate_id(member: JSON) -> str:
    return str(member["program_affiliate"]["id"])


def test_a_pending_affiliate_creates_at_most_five_links_deleted_ones_included(
    client: Client, two: Two
) -> None:
    """Codes are taken installation-wide for good, and joining takes only a mailbox: probe J
    reserved another tenant's brand from a pending signup (affiliate_links.PENDING_LINKS)."""
    sam, path = Two.key(two.sam), _links(two.acme.program_id)
    assert two.sam["program_affiliate"]["status"] == "pending"
    made = [
        expect(client.post(path, sam, {"name": f"L{n}"}), 201) for n in range(affiliate_links.PENDING_LINKS)
    ]
    expect(client.delete(f"{path}/{made[0]['id']}", sam), 200)

    refused = expect(
        client.post(path, sam, {"name": "One more", "code": "other-brand"}), 409, "state_conflict"
    )

    assert "pending" in refused["error"]["message"]
    expect(client.post("/v1/capture", json={"via": "other-brand"}), 404, "link_not_found")  # not reserved
    expect(client.post(f"/v1/program-affiliates/{_affiliate_id(two.sam)}/approve", two.acme.session), 200)
    expect(client.post(path, sam, {"name": "Approved now", "code": "other-brand"}), 201)


def test_an_affiliate_creates_at_most_its_limit_of_links(
    client: Client, two: Two, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(affiliate_links, "OWN_LINKS", affiliate_links.PENDING_LINKS + 2)
    sam, path = Two.key(two.sam), _links(two.acme.program_id)
    expect(client.post(f"/v1/program-affiliates/{_affiliate_id(two.sam)}/approve", two.acme.session), 200)
    for n in range(affiliate_links.OWN_LINKS):
        expect(client.post(path, sam, {"name": f"L{n}"}), 201)
    expect(client.post(path, sam, {"name": "One more"}), 409, "state_conflict")
    # The Developer may still add links for the affiliate.
    expect(
        client.post(
            f"/v1/program-affiliates/{_affiliate_id(two.sam)}/links", two.acme.session, {"name": "Dev"}
        ),
        201,
    )


def test_an_affiliate_of_a_disabled_program_cannot_create_links(client: Client, two: Two) -> None:
    sam, path = Two.key(two.sam), _links(two.acme.program_id)
    expect(client.post(f"/v1/programs/{two.acme.program_id}/disable", two.acme.session), 200)
    expect(client.post(path, sam, {"name": "After"}), 409, "state_conflict")
    assert expect(client.get(path, sam), 200)["data"] == []
