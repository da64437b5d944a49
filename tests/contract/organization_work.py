"""Small units of work on organizations, for the tests of how units of work are shared."""

from __future__ import annotations

from collections.abc import Callable

from refcore.errors import NotFound
from refcore.models import Organization
from refcore.services.runtime import Tx


def add_organization(name: str) -> Callable[[Tx], Organization]:
    def work(tx: Tx) -> Organization:
        organization = Organization(id=tx.new_id("org"), name=name, created_at=tx.now)
        tx.uow.organizations.add(organization)
        return organization

    return work


def find_organization(organization_id: str) -> Callable[[Tx], Organization | None]:
    return lambda tx: tx.uow.organizations.get(organization_id)


def missing_organization(tx: Tx) -> None:
    raise NotFound.of("organization", "org_missing")
