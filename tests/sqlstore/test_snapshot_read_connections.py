"""A snapshot read inside a keyed ``GET``'s shared read takes no second connection.

``Runtime.read(snapshot=True)`` has a unit of work of its own; had the block's stayed open beside
it, each worker thread would hold two of the pool's connections at once, and a pool of one
(``REFCORE_DB_POOL_SIZE=1``, no overflow) would wait out its timeout on every overview.
"""

from __future__ import annotations

from refcore.models import Organization
from refcore.services.runtime import Runtime
from tests.contract.organization_work import add_organization, find_organization


def test_a_snapshot_read_in_a_shared_read_block_ends_the_blocks_idle_unit_of_work_first(
    one_connection_postgres_runtime: Runtime,
) -> None:
    rt = one_connection_postgres_runtime
    organization: Organization = rt.transaction(add_organization("One connection"))
    with rt.shared_read():
        assert rt.read(find_organization(organization.id)) == organization  # the key's lookup
        assert rt.read(find_organization(organization.id), snapshot=True) == organization
        assert rt.read(find_organization(organization.id)) == organization  # the block goes on


def test_a_snapshot_read_in_a_read_then_write_block_ends_the_blocks_idle_unit_of_work_first(
    one_connection_postgres_runtime: Runtime,
) -> None:
    rt = one_connection_postgres_runtime
    organization: Organization = rt.transaction(add_organization("One connection"))
    with rt.read_then_write():
        assert rt.read(find_organization(organization.id)) == organization
        assert rt.read(find_organization(organization.id), snapshot=True) == organization
        second = rt.transaction(add_organization("After"))
    assert rt.read(find_organization(second.id)) == second
