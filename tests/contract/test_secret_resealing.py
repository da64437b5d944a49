"""Moving stored secrets to the current server key (:mod:`refcore.services.secret_resealing`) on
every store: what opens under the fallback is resealed, what is current is left, what opens under
neither is reported without stopping the pass, a secret changed between the read and the write is
never overwritten, pages of any size add up to the whole table, and a second pass writes nothing."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager

import pytest
from attrs import frozen

from refcore.clocks import ManualClock
from refcore.crypto import SecretBox
from refcore.models import App, Mode
from refcore.ports import Replacement, SealedSecret, SealedSecrets, SecretKind
from refcore.services import processor_connection as connections
from refcore.services import tenancy
from refcore.services import webhooks as webhook_service
from refcore.services.runtime import Runtime, Tx
from refcore.services.secret_resealing import ResealReport, Unopenable, reseal_secrets
from refcore_memstore import MemoryDatabase, MemorySealedSecrets, memory_runtime
from tests.contract.scenario import World, build_world, unique
from tests.stores import STORES, emptied_postgres_store, fresh_sqlite_store

OLD_KEY = "reseal-tests-old-server-key-0123456789abcdef"
NEW_KEY = "reseal-tests-new-server-key-0123456789abcdef"
OTHER_KEY = "reseal-tests-a-key-neither-old-nor-new-0123"
CONNECT_URL = "https://processor.example/apps/install"

OLD_BOX, NEW_BOX, OTHER_BOX = SecretBox(OLD_KEY), SecretBox(NEW_KEY), SecretBox(OTHER_KEY)
OLD_KEYS = connections.ProcessorKeys(OLD_KEY)
NEW_KEYS = connections.ProcessorKeys(NEW_KEY)
OTHER_KEYS = connections.ProcessorKeys(OTHER_KEY)
#: The servers after step (b): the new key current, the old one as fallback.
SWITCHED_BOX = SecretBox(NEW_KEY, fallback_key=OLD_KEY)
SWITCHED_KEYS = connections.ProcessorKeys(NEW_KEY, fallback_key=OLD_KEY)


@frozen
class Store:
    rt: Runtime
    secrets: SealedSecrets


@contextmanager
def _store(name: str, clock: ManualClock) -> Iterator[Store]:
    """A fresh store of ``tests/stores.py`` with its runtime and its sealed-secrets port."""
    if name == "memory":
        database = MemoryDatabase()
        yield Store(memory_runtime(clock=clock, database=database), MemorySealedSecrets(database))
    elif name == "sqlite":
        with fresh_sqlite_store() as sql:
            yield Store(sql.runtime(clock=clock), sql.sealed_secrets)
    else:
        with emptied_postgres_store() as sql:
            yield Store(sql.runtime(clock=clock), sql.sealed_secrets)


@pytest.fixture(params=sorted(STORES))
def store(request: pytest.FixtureRequest, clock: ManualClock) -> Iterator[Store]:
    with _store(request.param, clock) as opened:
        yield opened


@pytest.fixture
def world(store: Store, clock: ManualClock) -> World:
    return build_world(store.rt, clock)


@frozen
class Sealed:
    """One App's secrets as created: plain text, to compare with what opens later."""

    app: App
    endpoint_secret: str
    connection_id: str
    connection_secret: str


def _app(world: World, n: int) -> App:
    if n == 0:
        return world.app
    return tenancy.create_app(world.rt, world.session, world.organization.id, f"App {n}")


def _seal_for(world: World, app: App, box: SecretBox, keys: connections.ProcessorKeys) -> Sealed:
    """An endpoint and a Test processor connection for ``app``, sealed by a server with these keys."""
    configured = webhook_service.configure_endpoint(
        world.rt, world.session, box, app.id, {"url": "https://hooks.example.com/refcore"}
    )
    link = connections.create_connect_link(
        world.rt, world.session, keys, CONNECT_URL, app_id=app.id, mode="test"
    )
    secret = f"whsec_{unique('conn')}"
    claimed = connections.claim_pending_install(
        world.rt, world.session, keys, state=link.state, account_id=unique("acct_"), webhook_secret=secret
    )
    assert configured.secret is not None
    return Sealed(app, configured.secret, claimed.connection.id, secret)


def _apps_sealed(world: World, *sealers: tuple[SecretBox, connections.ProcessorKeys]) -> list[Sealed]:
    return [_seal_for(world, _app(world, n), box, keys) for n, (box, keys) in enumerate(sealers)]


def _ciphertexts(world: World) -> dict[str, str]:
    def work(tx: Tx) -> dict[str, str]:
        uow = tx.uow
        found = {e.id: e.secret_ciphertext for e in uow.webhook_endpoints.find_all({})}
        found.update({c.id: c.webhook_secret_ciphertext for c in uow.processor_connections.find_all({})})
        return found

    return world.rt.read(work)


def _opens_under_the_new_key_alone(world: World, sealed: Sealed) -> bool:
    """Whether both secrets of the App open under the new key without any fallback, to the
    plain text they were created with."""
    endpoint = world.rt.read(lambda tx: tx.uow.webhook_endpoints.find_one({"app_id": sealed.app.id}))
    connection = world.rt.read(lambda tx: tx.uow.processor_connections.get(sealed.connection_id))
    assert endpoint is not None and connection is not None
    return (
        webhook_service.signing_secret(NEW_BOX, endpoint) == sealed.endpoint_secret
        and NEW_KEYS.open_secret(connection) == sealed.connection_secret
    )


def test_every_secret_sealed_under_the_fallback_is_resealed_under_the_current_key_across_pages(
    store: Store, world: World
) -> None:
    """Three Apps, two secrets each, in pages of two: every page is read and written, and each
    secret then opens under the new key alone, to its original plain text."""
    apps = _apps_sealed(world, *[(OLD_BOX, OLD_KEYS)] * 3)
    report = reseal_secrets(store.secrets, SWITCHED_BOX, SWITCHED_KEYS, batch=2)
    assert report == ResealReport(resealed=6, already_current=0, changed_meanwhile=0, unopenable=())
    assert all(_opens_under_the_new_key_alone(world, sealed) for sealed in apps)


def test_a_second_pass_reseals_nothing_and_changes_no_row(store: Store, world: World) -> None:
    """Idempotent: everything is current after the first pass, so the second only counts."""
    _apps_sealed(world, (OLD_BOX, OLD_KEYS), (OLD_BOX, OLD_KEYS))
    reseal_secrets(store.secrets, SWITCHED_BOX, SWITCHED_KEYS, batch=3)
    after_first = _ciphertexts(world)
    again = reseal_secrets(store.secrets, SWITCHED_BOX, SWITCHED_KEYS, batch=3)
    assert again == ResealReport(resealed=0, already_current=4)
    assert _ciphertexts(world) == after_first


def test_secrets_already_under_the_current_key_are_skipped_and_left_as_stored(
    store: Store, world: World
) -> None:
    apps = _apps_sealed(world, (NEW_BOX, NEW_KEYS), (OLD_BOX, OLD_KEYS), (NEW_BOX, NEW_KEYS))
    before = _ciphertexts(world)
    report = reseal_secrets(store.secrets, SWITCHED_BOX, SWITCHED_KEYS, batch=2)
    assert (report.resealed, report.already_current) == (2, 4)
    after = _ciphertexts(world)
    changed = {id for id in before if before[id] != after[id]}
    old_app = apps[1]
    old_endpoint = world.rt.read(lambda tx: tx.uow.webhook_endpoints.find_one({"app_id": old_app.app.id}))
    assert old_endpoint is not None
    assert changed == {old_endpoint.id, old_app.connection_id}
    assert all(_opens_under_the_new_key_alone(world, sealed) for sealed in apps)


def test_a_secret_that_opens_under_neither_key_is_reported_by_id_and_the_pass_goes_on(
    store: Store, world: World
) -> None:
    """The unopenable App sits between two others, in pages of one: the pass reports it and
    reseals the rest; its rows are left untouched (whoever can open them still can)."""
    apps = _apps_sealed(world, (OLD_BOX, OLD_KEYS), (OTHER_BOX, OTHER_KEYS), (OLD_BOX, OLD_KEYS))
    lost = apps[1]
    lost_endpoint = world.rt.read(lambda tx: tx.uow.webhook_endpoints.find_one({"app_id": lost.app.id}))
    assert lost_endpoint is not None
    before = _ciphertexts(world)
    report = reseal_secrets(store.secrets, SWITCHED_BOX, SWITCHED_KEYS, batch=1)
    assert report.resealed == 4
    assert set(report.unopenable) == {
        Unopenable(SecretKind.WEBHOOK_ENDPOINT, lost_endpoint.id),
        Unopenable(SecretKind.PROCESSOR_CONNECTION, lost.connection_id),
    }
    after = _ciphertexts(world)
    assert after[lost_endpoint.id] == before[lost_endpoint.id]
    assert after[lost.connection_id] == before[lost.connection_id]
    assert _opens_under_the_new_key_alone(world, apps[0]) and _opens_under_the_new_key_alone(world, apps[2])
    assert "whsec_" not in report.summary() and report.summary() == (
        "resealed 4, already current 0, unopenable 2, changed meanwhile 0"
    )


class ChangedBeforeTheWrite:
    """The store's port, with ``before_write`` run between a page's read and its write: an API
    call that lands while the pass is resealing the secret it changes."""

    def __init__(self, inner: SealedSecrets, before_write: Callable[[SecretKind], None]) -> None:
        self._inner = inner
        self._before_write = before_write

    def sealed_after(self, kind: SecretKind, after: str | None, *, limit: int) -> list[SealedSecret]:
        return self._inner.sealed_after(kind, after, limit=limit)

    def replace_unchanged(self, kind: SecretKind, replacements: Collection[Replacement]) -> frozenset[str]:
        self._before_write(kind)
        return self._inner.replace_unchanged(kind, replacements)


def test_a_secret_changed_between_read_and_write_is_not_overwritten(store: Store, world: World) -> None:
    """An endpoint's secret rotated and a connection disconnected (its secret destroyed) after
    the pass read them: the pass's compare-and-set writes neither, and counts both."""
    rotated, disconnected, untouched = _apps_sealed(world, *[(OLD_BOX, OLD_KEYS)] * 3)
    fresh: dict[str, str] = {}

    def api_calls_meanwhile(kind: SecretKind) -> None:
        if kind is SecretKind.WEBHOOK_ENDPOINT:
            result = webhook_service.rotate_secret(world.rt, world.session, SWITCHED_BOX, rotated.app.id)
            assert result.secret is not None
            fresh["endpoint"] = result.secret
        else:
            connections.disconnect(world.rt, world.session, app_id=disconnected.app.id, mode=Mode.TEST.value)

    report = reseal_secrets(
        ChangedBeforeTheWrite(store.secrets, api_calls_meanwhile), SWITCHED_BOX, SWITCHED_KEYS
    )
    assert (report.resealed, report.changed_meanwhile, report.unopenable) == (4, 2, ())
    endpoint = world.rt.read(lambda tx: tx.uow.webhook_endpoints.find_one({"app_id": rotated.app.id}))
    assert endpoint is not None
    assert webhook_service.signing_secret(NEW_BOX, endpoint) == fresh["endpoint"]
    gone = world.rt.read(lambda tx: tx.uow.processor_connections.get(disconnected.connection_id))
    assert gone is not None and gone.webhook_secret_ciphertext == "" and not gone.active
    assert _opens_under_the_new_key_alone(world, untouched)
    # Nothing is left for a second pass but what the API calls sealed under the new key.
    assert reseal_secrets(store.secrets, SWITCHED_BOX, SWITCHED_KEYS) == ResealReport(already_current=5)


def test_removed_endpoints_and_disconnected_connections_hold_nothing_to_reseal(
    store: Store, world: World
) -> None:
    (sealed,) = _apps_sealed(world, (OLD_BOX, OLD_KEYS))
    webhook_service.remove_endpoint(world.rt, world.session, sealed.app.id)
    connections.disconnect(world.rt, world.session, app_id=sealed.app.id, mode="test")
    for kind in SecretKind:
        assert store.secrets.sealed_after(kind, None, limit=10) == []
    assert reseal_secrets(store.secrets, SWITCHED_BOX, SWITCHED_KEYS) == ResealReport()


def test_pages_follow_id_order_from_after_and_never_overlap(store: Store, world: World) -> None:
    _apps_sealed(world, *[(OLD_BOX, OLD_KEYS)] * 5)
    for kind in SecretKind:
        everything = store.secrets.sealed_after(kind, None, limit=100)
        assert [s.id for s in everything] == sorted(s.id for s in everything) and len(everything) == 5
        paged: list[SealedSecret] = []
        after: str | None = None
        while page := store.secrets.sealed_after(kind, after, limit=2):
            paged.extend(page)
            after = page[-1].id
        assert paged == everything
        assert all(s.kind is kind and s.ciphertext.startswith("v1.") for s in everything)
        assert all(s.ciphertext not in repr(s) for s in everything)
