"""The webhook dispatcher: drains the event outbox inside the server process.

Services write events into the outbox in the same unit of work as the change, so an event exists
exactly when its change committed. The dispatcher then, for each event, once:

1. **claims** it through the :class:`~refcore.ports.EventOutbox` (a short transaction with a lease;
   ``FOR UPDATE SKIP LOCKED`` on PostgreSQL), so that several server processes never take the
   same event;
2. decides whether a request is due at all (:func:`~refcore.rules.webhook_subscription.should_deliver`):
   no endpoint, a disabled one or an unsubscribed type closes the event without a request (the
   claimed batch's quiet events are closed together, in one unit of work);
3. signs and **delivers** it with one attempt (:class:`~refcore_http.webhooks.delivery.Deliverer`);
4. writes the :class:`~refcore.models.WebhookDelivery` record and marks the event delivered in
   **one** unit of work, so a record exists exactly when the event is closed. The unique key on
   ``event_id`` makes a second record impossible even if two processes ever raced here.

It wakes when a unit of work commits events (it is the runtime's
:class:`~refcore.ports.EventNotifier`) and on a short poll interval, which picks up events
committed by other processes and events left behind by a restart. While commits keep coming, a
pass starts at most every ``MIN_PASS_INTERVAL_SECONDS``, so that each gathers many events. A
process that dies between claim and record leaves the event claimed; once the lease expires
another dispatcher claims it again, so an event committed before a crash is still delivered
after restart (in that one case possibly a second time: receivers de-duplicate by ``id``,
interface 6.3).

Database work runs in worker threads and deliveries are coroutines bounded by ``concurrency``,
so the server's event loop, and with it every request, is never blocked by a slow receiver.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from urllib.parse import urlsplit

from attrs import evolve

from refcore.crypto import DecryptionError, SecretBox
from refcore.models import DeliveryStatus, Event, WebhookDelivery, WebhookEndpoint
from refcore.ports import EventOutbox
from refcore.rules.webhook_subscription import should_deliver
from refcore.services.runtime import Runtime, Tx
from refcore.services.webhooks import DELIVERY_PREFIX, signing_secret
from refcore_http.event_wait import wait_for_event
from refcore_http.webhooks.delivery import TIMEOUT_SECONDS, Deliverer, Outcome
from refcore_http.webhooks.signing import body_of, signed_headers

logger = logging.getLogger("refcore.webhooks")

POLL_INTERVAL_SECONDS = 2.0
#: Longer than a pass's attempts (``CLAIM_BATCH / CONCURRENCY`` rounds of at most 3 s each)
#: plus their bookkeeping, so a live claim never expires under a working dispatcher; short
#: enough that a crashed process's events go out within a minute.
LEASE_SECONDS = 60.0
#: Requests in flight at once.
CONCURRENCY = 8
#: Events claimed per pass. Every pass costs three units of work (claim, endpoint read, closing
#: the quiet events) whatever it claims, and most events need no request: under a burst of
#: payments, passes of 8 events ran about one unit of work in the outbox for every payment.
CLAIM_BATCH = 64
#: The shortest time from the start of one pass to the start of the next, unless a pass filled
#: its batch. Under a steady stream of commits every commit wakes the dispatcher, and passes ran
#: back to back, each claiming the few events committed during the last: three units of work
#: every few events. Waiting out the rest of this interval lets a pass gather what the stream
#: committed meanwhile: under PostgreSQL payments it halved the CPU of the dispatcher's threads,
#: though not the server's throughput (``bench/history.md``, eleventh session). The cost is at
#: most this long a delay before a request, and only while commits keep coming.
MIN_PASS_INTERVAL_SECONDS = 0.1


class WebhookDispatcher:
    def __init__(
        self,
        runtime: Runtime,
        outbox: EventOutbox,
        box: SecretBox,
        deliverer: Deliverer,
        *,
        poll_interval: float = POLL_INTERVAL_SECONDS,
        lease_seconds: float = LEASE_SECONDS,
        concurrency: int = CONCURRENCY,
        claim_batch: int = CLAIM_BATCH,
        min_pass_interval: float = MIN_PASS_INTERVAL_SECONDS,
    ) -> None:
        if concurrency < 1 or claim_batch < 1:
            raise ValueError("concurrency and claim_batch must be at least 1")
        if -(-claim_batch // concurrency) * TIMEOUT_SECONDS >= lease_seconds:
            # The last request of a pass would start after its event's lease ran out, and
            # another dispatcher could claim and send that event too.
            raise ValueError("lease_seconds must outlast a pass: claim_batch / concurrency attempts")
        self._rt = runtime
        self._outbox = outbox
        self._box = box
        self._deliverer = deliverer
        self._poll_interval = poll_interval
        self._lease = lease_seconds
        self._concurrency = concurrency
        self._claim_batch = claim_batch
        self._min_pass_interval = min_pass_interval
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Event | None = None
        #: Set by stop(): ends the loop and cuts short the wait between passes, which a commit's
        #: wake-up must not.
        self._halt: asyncio.Event | None = None
        #: Set while a wake-up is scheduled on the loop and has not run yet (see events_committed).
        self._wake_scheduled = False
        self._task: asyncio.Task[None] | None = None

    def __repr__(self) -> str:
        return f"WebhookDispatcher(concurrency={self._concurrency}, running={self.running})"

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    # -- EventNotifier ---------------------------------------------------------------------

    def events_committed(self, events: Sequence[Event]) -> None:
        """Called after commit, from whichever thread ran the unit of work: wake the loop.

        One wake-up in flight is enough: a commit that finds one already scheduled skips its
        own, since that wake-up runs after this commit and the claim it causes sees this event.
        Under 32 concurrent writers each scheduling its own (a write to the loop's self-pipe),
        the wake-ups were about 8 % of the server's CPU."""
        loop, wake = self._loop, self._wake
        if loop is None or wake is None or not events or self._wake_scheduled:
            return
        self._wake_scheduled = True
        # A closed loop raises RuntimeError: the server is stopping, and the next start polls anyway.
        try:
            loop.call_soon_threadsafe(self._wake_up, wake)
        except RuntimeError:
            self._wake_scheduled = False

    def _wake_up(self, wake: asyncio.Event) -> None:
        self._wake_scheduled = False
        wake.set()

    # -- lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        if self.running:
            return
        self._loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        self._halt = asyncio.Event()
        self._wake_scheduled = False  # a wake-up scheduled on an earlier, closed loop never ran
        self._task = asyncio.create_task(self._run(), name="refcore-webhook-dispatcher")

    async def stop(self) -> None:
        """Finish the attempts in flight (at most one time budget), then return."""
        if self._wake is not None:
            self._wake.set()
        if self._halt is not None:
            self._halt.set()
        if self._task is not None:
            await self._task
            self._task = None

    async def _run(self) -> None:
        assert self._wake is not None and self._halt is not None
        loop = asyncio.get_running_loop()
        while not self._halt.is_set():
            self._wake.clear()
            started = loop.time()
            try:
                claimed = await self.run_once()
            except Exception:
                logger.exception("webhook dispatcher: claiming from the outbox failed")
                claimed = 0
            if claimed >= self._claim_batch:
                continue  # probably more waiting
            await wait_for_event(self._wake, self._poll_interval)
            await wait_for_event(self._halt, started + self._min_pass_interval - loop.time())

    # -- the work --------------------------------------------------------------------------

    async def run_once(self) -> int:
        """Claim up to ``claim_batch`` events and finish each, sending at most ``concurrency``
        requests at a time; returns how many were claimed."""
        events = await asyncio.to_thread(
            self._outbox.claim,
            now=self._rt.clock.now(),
            limit=self._claim_batch,
            lease_seconds=self._lease,
        )
        if events:
            due = await asyncio.to_thread(self._close_quiet, events)
            # Made per pass: an asyncio primitive belongs to the loop that first waits on it.
            in_flight = asyncio.Semaphore(self._concurrency)
            await asyncio.gather(
                *(self._finish_safely(event, endpoint, in_flight) for event, endpoint in due)
            )
        return len(events)

    async def drain(self) -> int:
        """Run until the outbox has nothing claimable; returns how many events were handled."""
        total = 0
        while claimed := await self.run_once():
            total += claimed
        return total

    def _close_quiet(self, events: Sequence[Event]) -> list[tuple[Event, WebhookEndpoint]]:
        """The claimed events a request is due for, each with its endpoint. The others (no
        endpoint, a disabled one, an unsubscribed type) are closed here: one endpoint read per
        App, then one ``UPDATE`` for the whole batch. Reading and rewriting each event (its whole
        JSON payload) was most of the server's CPU under a burst of writes, and a commit per
        event had left the outbox ever further behind."""

        def read_endpoints(tx: Tx) -> dict[str, WebhookEndpoint | None]:
            apps = sorted({event.app_id for event in events})
            return {app_id: tx.uow.webhook_endpoints.find_one({"app_id": app_id}) for app_id in apps}

        endpoints = self._rt.read(read_endpoints)
        due: list[tuple[Event, WebhookEndpoint]] = []
        quiet: list[str] = []
        for event in events:
            endpoint = endpoints[event.app_id]
            if endpoint is not None and should_deliver(endpoint, event):
                due.append((event, endpoint))
            else:
                quiet.append(event.id)
                logger.debug("webhook event %s (%s): no request due", event.id, event.type.value)
        self._outbox.mark_all_delivered(quiet, now=self._rt.clock.now())
        return due

    async def _finish_safely(
        self, event: Event, endpoint: WebhookEndpoint, in_flight: asyncio.Semaphore
    ) -> None:
        try:
            async with in_flight:
                await self._finish(event, endpoint)
        except Exception:
            # Left claimed: after the lease another pass (here or in another process) takes it.
            logger.exception("webhook dispatcher: event %s could not be processed", event.id)

    async def _finish(self, event: Event, endpoint: WebhookEndpoint) -> None:
        outcome = await self._attempt(endpoint, event)
        await asyncio.to_thread(self._record, event, endpoint.url, outcome)
        logger.info(
            "webhook event %s (%s) to %s: %s, http_status=%s, %d ms%s",
            event.id,
            event.type.value,
            logged_url(endpoint.url),
            "succeeded" if outcome.succeeded else "failed",
            outcome.http_status,
            outcome.duration_ms,
            f", error: {outcome.error}" if outcome.error else "",
        )

    async def _attempt(self, endpoint: WebhookEndpoint, event: Event) -> Outcome:
        try:
            secret = signing_secret(self._box, endpoint)
        except DecryptionError:
            return Outcome(
                succeeded=False,
                duration_ms=0,
                error="not sent: the signing secret does not decrypt with this server's "
                "REFCORE_SECRET_KEY; rotate the secret",
            )
        body = body_of(event)
        headers = signed_headers(event, body, secret=secret, timestamp=int(self._rt.clock.now().timestamp()))
        return await self._deliverer.deliver(endpoint.url, body, headers)

    def _record(self, event: Event, url: str, outcome: Outcome) -> None:
        """The delivery record and the event's closing, atomically."""

        def work(tx: Tx) -> None:
            if tx.uow.webhook_deliveries.find_one({"event_id": event.id}) is None:
                tx.uow.webhook_deliveries.add(
                    WebhookDelivery(
                        id=tx.new_id(DELIVERY_PREFIX),
                        app_id=event.app_id,
                        event_id=event.id,
                        event_type=event.type.value,
                        status=DeliveryStatus.SUCCEEDED if outcome.succeeded else DeliveryStatus.FAILED,
                        duration_ms=outcome.duration_ms,
                        created_at=tx.now,
                        url=url,
                        http_status=outcome.http_status,
                        error=outcome.error,
                        response_body=outcome.response_body,
                    )
                )
            stored = tx.uow.events.get(event.id, for_update=True)
            if stored is not None and stored.delivered_at is None:
                tx.uow.events.replace(evolve(stored, delivered_at=tx.now))

        self._rt.transaction(work)


def logged_url(url: str) -> str:
    """``url`` as the log shows it: scheme, host, port and path; a query as ``?…``, no fragment.

    Receivers often take a shared token in the query string (``?token=…``): the Developer's own
    delivery records keep the whole URL, but an operator's log is read by more people."""
    parts = urlsplit(url)
    shown = f"{parts.scheme}://{parts.netloc}{parts.path}"
    return shown + "?…" if parts.query else shown
