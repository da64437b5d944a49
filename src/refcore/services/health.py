"""Whether this process can use its store: what a load balancer's readiness check asks.

``GET /v1`` answers from memory, so a process whose database had stopped accepting connections
still answered it ``200`` while every other request failed (probe M), and a balancer kept
sending it traffic. This runs one real read through the same unit of work every request uses.
"""

from __future__ import annotations

from refcore.services.runtime import Runtime

#: An ID no record has (IDs are a prefix, an underscore and 26 characters): the read finds
#: nothing, by the primary key, on any store.
_NO_APP = "app_health"


def check_store(rt: Runtime) -> None:
    """Read the store once. Raises what a request would: ``internal_error`` when the database
    cannot be reached."""
    rt.read(lambda tx: tx.uow.apps.get(_NO_APP))
