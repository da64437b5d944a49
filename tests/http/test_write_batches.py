"""Keyed writes batched on SQLite (refcore_http.write_batches): requests that arrive together run in
one write batch, each still gets its own answer (its record, or its own error), a batch that
fails at its commit is run again, request by request, and a request that lost a race inside a
batch is run again alone after it.

The app runs over a real SQLite store here (batches exist only there); requests are sent
concurrently through ``httpx.ASGITransport`` on one event loop, as a server's connections are.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any, cast

import httpx
import pytest
from attrs import evolve

from refcore.clocks import ManualClock
from refcore.errors import ConcurrentWrite, Unauthenticated
from refcore.ports import UnitOfWork
from refcore.services.principal import Principal
from refcore.services.runtime import Runtime, Tx
from refcore_http import auth
from refcore_http.app import all_endpoints, create_app
from refcore_http.endpoints import Reply
from refcore_http.settings import Settings
from refcore_http.workers import WorkerThreads
from refcore_http.write_batches import WriteBatches
from refcore_memstore import memory_runtime
from refcore_sqlstore import SqlStore
from tests.http.world import Activity, Client, Tenant, new_activity, new_tenant
from tests.sqlstore.raw import count
from tests.stores import fresh_sqlite_store


@pytest.fixture
def store() -> Iterator[SqlStore]:
    with fresh_sqlite_store() as sqlite:
        yield sqlite


class Batches:
    """``Runtime.write_batch`` with the size of each batch counted (the write units of work it
    held), and the first ``fail`` batches made to fail inside the block: nothing of them is
    committed."""

    def __init__(self, runtime: Runtime, *, fail: int = 0) -> None:
        real = runtime.write_batch
        assert real is not None
        self._real = real
        self._fail = fail
        self._runtime = runtime
        self.sizes: list[int] = []
        #: Whether a batch's block is running now.
        self.open = False

    def __call__(self) -> AbstractContextManager[None]:
        return self._counted()

    @contextmanager
    def _counted(self) -> Iterator[None]:
        held = [0]
        factory = self._runtime.unit_of_work

        def counted() -> UnitOfWork:
            held[0] += 1
            return factory()

        self._runtime.unit_of_work = counted
        self.open = True
        try:
            with self._real():
                yield
                if len(self.sizes) < self._fail:
                    self.sizes.append(held[0])
                    raise ConcurrentWrite("this batch's commit failed (the test says so)")
        finally:
            self.open = False
            self._runtime.unit_of_work = factory
        self.sizes.append(held[0])


@pytest.fixture
def runtime(store: SqlStore) -> Runtime:
    return store.runtime(clock=ManualClock())


@pytest.fixture
def app(runtime: Runtime) -> Any:
    return create_app(runtime, Settings(database_url="sqlite://"))


@pytest.fixture
def tenant(app: Any, runtime: Runtime) -> Tenant:
    return new_tenant(Client(app), runtime, "batch")


@pytest.fixture
def activity(app: Any, tenant: Tenant) -> Activity:
    return new_activity(Client(app), tenant, tenant.live_key, "first")


def _payment(tenant: Tenant, customer_id: str, payment_id: str, **changes: Any) -> dict[str, Any]:
    return {
        "payment_id": payment_id,
        "customer_id": customer_id,
        "program_id": tenant.program_id,
        "amount": 5000,
        "currency": "usd",
        **changes,
    }


def _send_together(app: Any, key: str, bodies: list[dict[str, Any]]) -> list[httpx.Response]:
    async def main() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://refcore.test") as client:
            headers = {"Authorization": f"Bearer {key}"}
            return await asyncio.gather(
                *(client.post("/v1/transactions", json=body, headers=headers) for body in bodies)
            )

    return asyncio.run(main())


def test_payments_sent_together_run_in_a_batch_and_each_gets_its_own_record(
    app: Any, runtime: Runtime, store: SqlStore, tenant: Tenant, activity: Activity
) -> None:
    batches = Batches(runtime)
    runtime.write_batch = batches
    bodies = [_payment(tenant, activity.customer_id, f"pay_batch_{n}", amount=1000 + n) for n in range(8)]
    responses = _send_together(app, tenant.live_key, bodies)
    assert [r.status_code for r in responses] == [201] * 8
    assert [(r.json()["payment_id"], r.json()["amount"]) for r in responses] == [
        (body["payment_id"], body["amount"]) for body in bodies
    ]
    assert sum(batches.sizes) == 8 and max(batches.sizes) > 1  # batched, not one by one
    assert count(store, "payments") == 1 + 8  # the activity's payment and these
    assert count(store, "commission_entries", transaction_id=responses[0].json()["id"]) == 1


def test_a_request_that_fails_in_a_batch_answers_its_own_error_and_the_others_are_written(
    app: Any, runtime: Runtime, store: SqlStore, tenant: Tenant, activity: Activity
) -> None:
    batches = Batches(runtime)
    runtime.write_batch = batches
    bodies = [
        _payment(tenant, activity.customer_id, "pay_ok_1"),
        _payment(tenant, "cus_nobody", "pay_unknown_customer"),
        _payment(tenant, activity.customer_id, "pay_wrong_currency", currency="eur"),
        _payment(tenant, activity.customer_id, activity.payment_id, amount=1),  # its ID, other details
        _payment(tenant, activity.customer_id, "pay_ok_2"),
    ]
    responses = _send_together(app, tenant.live_key, bodies)
    assert [(r.status_code, r.json().get("error", {}).get("code")) for r in responses] == [
        (201, None),
        (404, "customer_not_found"),
        (400, "currency_mismatch"),
        (409, "idempotency_conflict"),
        (201, None),
    ]
    assert max(batches.sizes) > 1
    assert sum(batches.sizes) == 5  # each ran once: the errors failed no batch
    assert count(store, "payments") == 1 + 2


def test_the_same_payment_twice_in_one_batch_is_created_once_and_found_once(
    app: Any, runtime: Runtime, store: SqlStore, tenant: Tenant, activity: Activity
) -> None:
    batches = Batches(runtime)
    runtime.write_batch = batches
    body = _payment(tenant, activity.customer_id, "pay_twice")
    responses = _send_together(app, tenant.live_key, [body, body])
    assert sorted(r.status_code for r in responses) == [200, 201]
    assert responses[0].json() == responses[1].json()
    assert count(store, "payments", payment_id="pay_twice") == 1


def test_a_batch_whose_commit_fails_is_run_again_request_by_request(
    app: Any, runtime: Runtime, store: SqlStore, tenant: Tenant, activity: Activity
) -> None:
    batches = Batches(runtime, fail=1)
    runtime.write_batch = batches
    bodies = [_payment(tenant, activity.customer_id, f"pay_again_{n}") for n in range(4)]
    responses = _send_together(app, tenant.live_key, bodies)
    # Nothing of the failed batch was written, so each request is created (201) by its rerun.
    assert [r.status_code for r in responses] == [201] * 4
    assert batches.sizes == [4]  # then each alone, outside any batch
    assert count(store, "payments") == 1 + 4


class LosesTheFirstCommit:
    """A unit of work whose commit raises ``ConcurrentWrite`` if it is the first to commit of
    those sharing ``commits``, which records whether a batch was open at each commit."""

    def __init__(self, uow: UnitOfWork, commits: list[bool], batches: Batches) -> None:
        self._uow = uow
        self._commits = commits
        self._batches = batches

    def __enter__(self) -> LosesTheFirstCommit:
        self._uow.__enter__()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self._uow.__exit__(*exc_info)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._uow, name)

    def commit(self) -> None:
        self._commits.append(self._batches.open)
        if len(self._commits) == 1:
            raise ConcurrentWrite("another process took this payment's row first (the test says so)")
        self._uow.commit()


def test_a_request_that_loses_a_race_in_a_batch_runs_again_alone_after_it(
    app: Any, runtime: Runtime, store: SqlStore, tenant: Tenant, activity: Activity
) -> None:
    """Inside a batch a lost race is not retried (the retry would wait holding the batch's
    locks): the request runs again by itself once the batch has committed the others."""
    batches = Batches(runtime)
    runtime.write_batch = batches
    commits: list[bool] = []
    factory = runtime.unit_of_work
    runtime.unit_of_work = lambda: cast(UnitOfWork, LosesTheFirstCommit(factory(), commits, batches))
    bodies = [_payment(tenant, activity.customer_id, f"pay_race_{n}") for n in range(4)]
    responses = _send_together(app, tenant.live_key, bodies)
    assert [r.status_code for r in responses] == [201] * 4
    assert [r.json()["payment_id"] for r in responses] == [body["payment_id"] for body in bodies]
    assert batches.sizes == [4]
    # Four commits in the batch (the first lost its race), then the loser's own, after it.
    assert commits == [True, True, True, True, False]
    assert count(store, "payments") == 1 + 4


def test_no_request_of_a_batch_is_answered_before_the_batch_has_committed() -> None:
    """The batch's block ends with its ``COMMIT``: until it has ended, every answer waits."""
    committing = threading.Event()
    commit = threading.Event()

    @contextmanager
    def write_batch() -> Iterator[None]:
        yield
        committing.set()
        assert commit.wait(10)

    runtime = memory_runtime()
    runtime.write_batch = write_batch
    batches = WriteBatches(runtime, WorkerThreads(2))

    async def main() -> list[Reply]:
        answers = [asyncio.ensure_future(batches.record(lambda n=n: Reply(body={"n": n}))) for n in range(3)]
        while not committing.is_set():
            await asyncio.sleep(0.001)
        await asyncio.sleep(0.02)
        assert not any(answer.done() for answer in answers)
        commit.set()
        return await asyncio.gather(*answers)

    assert [reply.body for reply in asyncio.run(main())] == [{"n": 0}, {"n": 1}, {"n": 2}]


def test_batched_endpoints_are_the_keyed_writes_of_one_transaction() -> None:
    """Each of them records one thing in one transaction and reads nothing after it."""
    batched = {(e.method, e.path) for e in all_endpoints() if e.batched}
    assert batched == {
        ("POST", "/v1/transactions"),
        ("POST", "/v1/transactions/refunds"),
        ("POST", "/v1/transactions/disputes"),
        ("POST", "/v1/identify"),
    }


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_only_a_worker_threads_write_can_be_batched(method: str) -> None:
    """A read, or a handler that runs on the event loop (capture), is refused at definition."""
    read = next(e for e in all_endpoints() if e.method == "GET")
    capture = next(e for e in all_endpoints() if e.path == "/v1/capture")
    with pytest.raises(ValueError, match="batched"):
        evolve(read if method == "GET" else capture, batched=True)


def test_a_batch_looks_each_key_up_once_and_a_bad_key_fails_its_own_request(
    app: Any,
    runtime: Runtime,
    store: SqlStore,
    tenant: Tenant,
    activity: Activity,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    batches = Batches(runtime)
    runtime.write_batch = batches
    looked_up: list[str] = []
    real = auth.authenticate

    def counted(rt: Runtime, credential: str) -> Principal:
        looked_up.append(credential)
        return real(rt, credential)

    monkeypatch.setattr(auth, "authenticate", counted)
    bodies = [_payment(tenant, activity.customer_id, f"pay_key_{n}") for n in range(6)]

    async def main() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://refcore.test") as client:
            keys = [tenant.live_key] * 3 + ["key_live_unknown"] + [tenant.live_key] * 2
            return await asyncio.gather(
                *(
                    client.post("/v1/transactions", json=body, headers={"Authorization": f"Bearer {key}"})
                    for body, key in zip(bodies, keys, strict=True)
                )
            )

    responses = asyncio.run(main())
    assert [r.status_code for r in responses] == [201, 201, 201, 401, 201, 201]
    assert len(batches.sizes) == 1 and batches.sizes == [5]  # the refused request wrote nothing
    assert looked_up.count(tenant.live_key) == 1
    assert looked_up.count("key_live_unknown") == 1
    assert count(store, "payments") == 1 + 5


def _revoke_every_key(runtime: Runtime, app_id: str) -> None:
    def work(tx: Tx) -> None:
        for key in tx.uow.api_keys.find_all({"app_id": app_id}):
            tx.uow.api_keys.replace(evolve(key, revoked_at=tx.now))

    runtime.transaction(work)


def test_principals_are_shared_only_inside_the_block(runtime: Runtime, tenant: Tenant) -> None:
    access = next(e.access for e in all_endpoints() if e.path == "/v1/transactions" and e.method == "POST")
    with auth.principals_shared():
        first = auth.principal_of(runtime, access, tenant.live_key)
        _revoke_every_key(runtime, tenant.app_id)
        assert auth.principal_of(runtime, access, tenant.live_key) == first  # as of the block's lookup
        with pytest.raises(Unauthenticated):
            auth.principal_of(runtime, access, tenant.test_key)
    with pytest.raises(Unauthenticated):
        auth.principal_of(runtime, access, tenant.live_key)  # a revocation holds for every later block
