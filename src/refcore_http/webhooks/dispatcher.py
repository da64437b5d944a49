"""The webhook dispatcher: drains the event outbox inside the server process.

Services write events into the outbox in the same unit of work as the change, so an event exists
exactly when its change committed. The dispatcher then, for each event, once:

1. **claims** it through the :class:`~refcore.ports.EventOutbox` (a short transaction with a lease;
   ``FOR UPDATE SKIP LOCKED`` on PostgreSQL), so that several server processes never take the
   same event;
2. decides whether a request is due at all (:func:`~refcore.rules.webhook_subscription.should_deliver`):
   no endpoint, a disabled one or an unsubscribed type closes the event without a request (the
   claimed batch's quiet events are closed together: one endpoint read per App, one ``UPDATE``);
3. right before the request, reads the App's endpoint **again**, in the attempt's own read unit
   of work, and decides once more: a request goes out only to the endpoint as it is then, to its
   current URL, signed with its current secret. An endpoint disabled, removed or unsubscribed
   from the type since the claim gets nothing (the event is closed like a quiet one), and a
   rotated secret or a changed URL applies at once, also to events already claimed;
4. signs and **delivers** it with one attempt (:class:`~refcore_http.webhooks.delivery.Deliverer`);
5. writes the :class:`~refcore.models.WebhookDelivery` record (with the URL the request went to)
   and marks the event delivered in **one** unit of work, so a record exists exactly when the
   event is closed. The unique key on ``event_id`` makes a second record impossible even if two
   processes ever raced here.

**A pipeline.** A pass claims, closes the quiet events and queues the due ones; each queued event
then starts its attempt as a task as soon as a delivery slot is free, and the next pass may claim
while attempts run. At most ``concurrency`` attempts run at once in the process, and at most
``per_app_concurrency`` (half of them) for one App, so one App's slow receiver never holds up
another App's events. Attempts start in claim order, each taking the oldest queued event whose App
is under its share. A finished attempt starts the next queued ones and, when passes had stopped
claiming for want of room, wakes the loop.

**The lease bound.** A claimed event must be finished before its lease (``LEASE_SECONDS``, 60 s)
ends, or another dispatcher may claim and send it too. So claimed but unfinished events are
bounded: a pass claims at most ``claim_batch`` minus the events still queued or in flight, and
none while there are ``claim_batch`` of them (64), so at most 63 are ahead of any event. While an
event waits, either its App has its whole share in flight or every slot is busy (otherwise it
would start), and an attempt of its App, or any attempt while every slot is busy, hands its slot
on ending to an event claimed before it or to it. So at least ``per_app_concurrency`` (4) events
ahead of it start each time budget, and the worst case is all 64 events of one App, each taking
the whole 3 s: ``ceil(claim_batch / per_app_concurrency)`` = 16 rounds, the last attempt starting
45 s and ending 48 s after the claim, within the 60 s lease with ``LEASE_MARGIN_SECONDS`` (5 s)
to spare for the endpoint reads and records (milliseconds each). The constructor refuses settings
that break this bound. As a last guard, an attempt that could no longer end within its event's
lease (its database work was held up, say) is not started: the event stays claimed, unsent, and
goes out once after the lease.

It wakes when a unit of work commits events (it is the runtime's
:class:`~refcore.ports.EventNotifier`) and on a short poll interval, which picks up events
committed by other processes and events left behind by a restart. While commits keep coming, a
pass starts at most every ``MIN_PASS_INTERVAL_SECONDS``, so that each gathers many events. A
process that dies between claim and record leaves the event claimed; once the lease expires
another dispatcher claims it again, so an event committed before a crash is still delivered
after restart (in that one case possibly a second time: receivers de-duplicate by ``id``,
interface 6.3). Stopping finishes the attempts in flight and leaves the queued ones claimed, not
sent: they go out after their lease, from whichever process claims them then.

Database work runs in worker threads and deliveries are coroutines, so the server's event loop,
and with it every request, is never blocked by a slow receiver.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import math
from collections import deque
from collections.abc import Sequence
from datetime import datetime, timedelta
from urllib.parse import urlsplit

from attrs import evolve

from refcore.crypto import DecryptionError, SecretBox
from refcore.models import DeliveryStatus, Event, Mode, WebhookDelivery, WebhookEndpoint
from refcore.ports import EventOutbox
from refcore.rules.webhook_subscription import should_deliver
from refcore.services.runtime import Runtime, Tx
from refcore.services.webhooks import DELIVERY_PREFIX, listed_in, signing_secret
from refcore_http.event_wait import wait_for_event
from refcore_http.webhooks.delivery import TIMEOUT_SECONDS, Deliverer, Outcome
from refcore_http.webhooks.signing import body_of, signed_headers

logger = logging.getLogger("refcore.webhooks")

POLL_INTERVAL_SECONDS = 2.0
#: Longer than the worst wait of a claimed event (see "The lease bound" above) plus its
#: bookkeeping, so a live claim never expires under a working dispatcher; short enough that a
#: crashed process's events go out within a minute.
LEASE_SECONDS = 60.0
#: Requests in flight at once, in the whole process.
CONCURRENCY = 8
#: Requests in flight at once for one App: half the slots, so that an App whose receiver hangs
#: for its whole time budget leaves the other half to every other App.
PER_APP_CONCURRENCY = CONCURRENCY // 2
#: Events claimed per pass, and the most claimed events unfinished at any time. Every pass costs
#: three units of work (claim, endpoint read, closing the quiet events) whatever it claims, and
#: most events need no request: under a burst of payments, passes of 8 events ran about one unit
#: of work in the outbox for every payment.
CLAIM_BATCH = 64
#: The shortest time from the start of one pass to the start of the next, unless a pass filled
#: its batch. Under a steady stream of commits every commit wakes the dispatcher, and passes ran
#: back to back, each claiming the few events committed during the last: three units of work
#: every few events. Waiting out the rest of this interval lets a pass gather what the stream
#: committed meanwhile: under PostgreSQL payments it halved the CPU of the dispatcher's threads,
#: though not the server's throughput (``bench/history.md``, eleventh session). The cost is at
#: most this long a delay before a request, and only while commits keep coming.
MIN_PASS_INTERVAL_SECONDS = 0.1
#: What the lease must leave, beyond the attempts' time budgets, for an attempt's endpoint read
#: and record. An attempt is started only while this much and its time budget remain of the lease.
LEASE_MARGIN_SECONDS = 5.0


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
        per_app_concurrency: int | None = None,
        claim_batch: int = CLAIM_BATCH,
        min_pass_interval: float = MIN_PASS_INTERVAL_SECONDS,
    ) -> None:
        if per_app_concurrency is None:
            per_app_concurrency = max(1, concurrency // 2)
        if concurrency < 1 or claim_batch < 1 or per_app_concurrency < 1:
            raise ValueError("concurrency, per_app_concurrency and claim_batch must be at least 1")
        if per_app_concurrency > concurrency:
            raise ValueError("per_app_concurrency cannot exceed concurrency")
        rounds = math.ceil(claim_batch / per_app_concurrency)
        if rounds * TIMEOUT_SECONDS + LEASE_MARGIN_SECONDS > lease_seconds:
            # The last of claim_batch events of one App would start after its event's lease ran
            # out, and another dispatcher could claim and send that event too.
            raise ValueError(
                "lease_seconds must outlast the claimed events: claim_batch / per_app_concurrency "
                f"attempts of {TIMEOUT_SECONDS:g} s each, plus {LEASE_MARGIN_SECONDS:g} s"
            )
        self._rt = runtime
        self._outbox = outbox
        self._box = box
        self._deliverer = deliverer
        self._poll_interval = poll_interval
        self._lease = lease_seconds
        self._concurrency = concurrency
        self._per_app = per_app_concurrency
        self._claim_batch = claim_batch
        self._min_pass_interval = min_pass_interval
        #: How long after its claim an attempt may still start and end within the lease.
        self._latest_start = timedelta(seconds=lease_seconds - TIMEOUT_SECONDS - LEASE_MARGIN_SECONDS)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Event | None = None
        #: Set by stop(): ends the loop and cuts short the wait between passes, which a commit's
        #: wake-up must not.
        self._halt: asyncio.Event | None = None
        #: Set while a wake-up is scheduled on the loop and has not run yet (see events_committed).
        self._wake_scheduled = False
        self._task: asyncio.Task[None] | None = None
        #: Claimed events due for a request whose attempt has not started, in claim order, each
        #: with the time of its claim.
        self._queue: deque[tuple[Event, datetime]] = deque()
        #: The attempts running, and how many of them each App has.
        self._attempts: set[asyncio.Task[None]] = set()
        self._attempts_per_app: dict[str, int] = {}
        #: Whether the last pass took all it had room for (more is probably waiting): then an
        #: attempt that ends, making room, wakes the loop.
        self._held_back = False
        #: While stopping, no attempt starts.
        self._stopping = False

    def __repr__(self) -> str:
        return (
            f"WebhookDispatcher(concurrency={self._concurrency}, per_app_concurrency={self._per_app}, "
            f"running={self.running})"
        )

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    @property
    def pending(self) -> int:
        """Claimed events due for a request and not finished: queued, or their attempt running."""
        return len(self._queue) + len(self._attempts)

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
        self._stopping = False
        self._task = asyncio.create_task(self._run(), name="refcore-webhook-dispatcher")

    async def stop(self) -> None:
        """Stop claiming, finish the attempts in flight (each within one time budget, plus its
        record), then return. Claimed events whose attempt had not started are left claimed and
        unsent: after their lease a dispatcher (this process restarted, or another) claims them
        again and sends each once."""
        self._stopping = True
        try:
            if self._wake is not None:
                self._wake.set()
            if self._halt is not None:
                self._halt.set()
            if self._task is not None:
                await self._task
                self._task = None
            if self._queue:
                logger.info(
                    "webhook dispatcher stopping: %d claimed events not attempted; they are sent "
                    "after their lease",
                    len(self._queue),
                )
                self._queue.clear()
            while self._attempts:
                await asyncio.wait(set(self._attempts))
        finally:
            self._stopping = False

    async def _run(self) -> None:
        assert self._wake is not None and self._halt is not None
        loop = asyncio.get_running_loop()
        while not self._halt.is_set():
            self._wake.clear()
            started = loop.time()
            try:
                claimed, room = await self._pass()
            except Exception:
                logger.exception("webhook dispatcher: claiming from the outbox failed")
                claimed, room = 0, 1
            # A pass that took all it had room for probably left events behind: claim again at
            # once while there is room, else when an attempt ends and makes some.
            self._held_back = claimed >= room
            if self._held_back and self.pending < self._claim_batch:
                continue
            await wait_for_event(self._wake, self._poll_interval)
            await wait_for_event(self._halt, started + self._min_pass_interval - loop.time())

    # -- the work --------------------------------------------------------------------------

    async def _pass(self) -> tuple[int, int]:
        """Claim as many events as there is room for, close the quiet ones, queue the due ones and
        start what the slots allow; returns (events claimed, room there was)."""
        room = self._claim_batch - self.pending
        if room <= 0 or self._stopping:
            return 0, max(room, 0)
        now = self._rt.clock.now()
        events = await asyncio.to_thread(self._outbox.claim, now=now, limit=room, lease_seconds=self._lease)
        if events:
            due = await asyncio.to_thread(self._close_quiet, events)
            self._queue.extend((event, now) for event in due)
            self._start_attempts()
        return len(events), room

    async def run_once(self) -> int:
        """One pass, then wait until every attempt has finished; returns how many events were
        claimed. For tests and tools: the server's loop does not wait."""
        claimed, _ = await self._pass()
        while self._attempts:
            await asyncio.wait(set(self._attempts))
        return claimed

    async def drain(self) -> int:
        """Run until the outbox has nothing claimable and every attempt has finished; returns how
        many events were claimed."""
        total = 0
        while True:
            claimed, room = await self._pass()
            total += claimed
            if claimed and claimed >= room:
                continue  # probably more waiting
            if self._attempts:
                await asyncio.wait(set(self._attempts), return_when=asyncio.FIRST_COMPLETED)
                continue
            if not claimed:
                return total

    def _start_attempts(self) -> None:
        """Start the queued events' attempts, oldest first, while the slots allow: ``concurrency``
        in all, ``per_app_concurrency`` for each App."""
        if self._stopping:
            return
        waiting: deque[tuple[Event, datetime]] = deque()
        while self._queue:
            if len(self._attempts) >= self._concurrency:
                waiting.extend(self._queue)
                self._queue.clear()
                break
            event, claimed_at = self._queue.popleft()
            app_id = event.app_id
            if self._attempts_per_app.get(app_id, 0) >= self._per_app:
                waiting.append((event, claimed_at))
                continue
            self._attempts_per_app[app_id] = self._attempts_per_app.get(app_id, 0) + 1
            task = asyncio.create_task(self._attempt_safely(event, claimed_at))
            self._attempts.add(task)
            task.add_done_callback(functools.partial(self._attempt_ended, app_id))
        self._queue = waiting

    def _attempt_ended(self, app_id: str, task: asyncio.Task[None]) -> None:
        self._attempts.discard(task)
        left = self._attempts_per_app.get(app_id, 0) - 1
        if left > 0:
            self._attempts_per_app[app_id] = left
        else:
            self._attempts_per_app.pop(app_id, None)
        self._start_attempts()
        if self._held_back and self.running and self._wake is not None:
            self._wake.set()  # room to claim what the last pass had to leave

    def _close_quiet(self, events: Sequence[Event]) -> list[Event]:
        """The claimed events a request is due for. The others (no endpoint, a disabled one, an
        unsubscribed type) are closed here: one endpoint read per App, then one ``UPDATE`` for
        the whole batch. Reading and rewriting each event (its whole JSON payload) was most of
        the server's CPU under a burst of writes, and a commit per event had left the outbox ever
        further behind. The endpoints read here only sort the batch: each due event's attempt
        reads its endpoint again (:meth:`_endpoint_if_due`)."""

        def read_endpoints(tx: Tx) -> dict[str, WebhookEndpoint | None]:
            apps = sorted({event.app_id for event in events})
            return {app_id: tx.uow.webhook_endpoints.find_one({"app_id": app_id}) for app_id in apps}

        endpoints = self._rt.read(read_endpoints)
        due: list[Event] = []
        quiet: list[str] = []
        for event in events:
            if should_deliver(endpoints[event.app_id], event):
                due.append(event)
            else:
                quiet.append(event.id)
                logger.debug("webhook event %s (%s): no request due", event.id, event.type.value)
        self._outbox.mark_all_delivered(quiet, now=self._rt.clock.now())
        return due

    def _endpoint_if_due(self, event: Event) -> WebhookEndpoint | None:
        """The App's endpoint as it is now, if a request is still due to it; otherwise the event
        is closed without one, as a quiet event is (no delivery record)."""
        endpoint = self._rt.read(lambda tx: tx.uow.webhook_endpoints.find_one({"app_id": event.app_id}))
        if endpoint is not None and should_deliver(endpoint, event):
            return endpoint
        self._outbox.mark_all_delivered([event.id], now=self._rt.clock.now())
        logger.debug(
            "webhook event %s (%s): no request due any more (the endpoint changed)",
            event.id,
            event.type.value,
        )
        return None

    async def _attempt_safely(self, event: Event, claimed_at: datetime) -> None:
        try:
            await self._attempt_claimed(event, claimed_at)
        except Exception:
            # Left claimed: after the lease another pass (here or in another process) takes it.
            logger.exception("webhook dispatcher: event %s could not be processed", event.id)

    async def _attempt_claimed(self, event: Event, claimed_at: datetime) -> None:
        endpoint = await asyncio.to_thread(self._endpoint_if_due, event)
        if endpoint is None:
            return
        if self._rt.clock.now() - claimed_at > self._latest_start:
            logger.warning(
                "webhook event %s (%s): not sent now, its claim could expire before the attempt "
                "ends; it is sent after the lease",
                event.id,
                event.type.value,
            )
            return
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
                "REFCORE_SECRET_KEY (nor its REFCORE_SECRET_KEY_FALLBACK, if set); give the server "
                "the key it was sealed with (docs/deployment.md) or rotate the secret",
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
                        listed_in_test=listed_in(event, Mode.TEST),
                        listed_in_live=listed_in(event, Mode.LIVE),
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
    """``url`` as the log shows it: scheme, host and port; a path as ``/…``, a query as ``?…``.

    Receivers often take a shared token in the URL: in the query string (``?token=…``) or in
    the path itself (chat services' hooks, ``/services/T0/B0/<token>``); a probe's endpoint
    ``https://example.com/hooks/<live key>`` put the key in the log. The Developer's own
    delivery records keep the whole URL, but an operator's log is read by more people, and
    it needs only the host to tell which receiver failed. A user and password before the
    host are left out too."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    port = f":{parts.port}" if parts.port is not None else ""
    path = "/…" if parts.path not in ("", "/") else parts.path
    return f"{parts.scheme}://{host}{port}{path}" + ("?…" if parts.query else "")
