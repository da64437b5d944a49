"""Running the webhook dispatcher for as long as the server runs (the Starlette lifespan).

The dispatcher joins the runtime's :class:`~refcore.ports.EventNotifier` at start-up, so every
unit of work that commits events wakes it, and is stopped (attempts in flight finish) at shutdown.
Without an outbox (an app built for tests or embedded by a library user) nothing is started.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from refcore.models import Event
from refcore.ports import EventNotifier, EventOutbox
from refcore.services.runtime import Runtime
from refcore_http.settings import Settings
from refcore_http.webhooks.delivery import Deliverer
from refcore_http.webhooks.dispatcher import WebhookDispatcher
from refcore_http.webhooks.keys import secret_box


class _BothNotifiers:
    """Keeps whatever notifier the runtime already had, and wakes the dispatcher too."""

    def __init__(self, first: EventNotifier, second: EventNotifier) -> None:
        self._first = first
        self._second = second

    def events_committed(self, events: Sequence[Event]) -> None:
        self._first.events_committed(events)
        self._second.events_committed(events)


def build_dispatcher(runtime: Runtime, outbox: EventOutbox, settings: Settings) -> WebhookDispatcher:
    deliverer = Deliverer(
        allow_private_networks=settings.webhook_allow_private_networks,
        ca_bundle=settings.webhook_ca_bundle,
    )
    return WebhookDispatcher(runtime, outbox, secret_box(settings), deliverer)


def webhook_lifespan(
    runtime: Runtime, outbox: EventOutbox | None, settings: Settings
) -> Callable[[Any], AbstractAsyncContextManager[None]]:
    @asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[None]:
        if outbox is None:
            yield
            return
        dispatcher = build_dispatcher(runtime, outbox, settings)
        previous = runtime.notifier
        runtime.notifier = _BothNotifiers(previous, dispatcher)
        app.state.webhook_dispatcher = dispatcher
        await dispatcher.start()
        try:
            yield
        finally:
            await dispatcher.stop()
            runtime.notifier = previous

    return lifespan
