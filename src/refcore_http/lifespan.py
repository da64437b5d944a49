"""What runs beside the requests for as long as the server runs: the Starlette lifespan.

The webhook dispatcher (:mod:`refcore_http.webhooks.lifespan`) and the store's pruning
(:mod:`refcore_http.pruning`) start with the app and stop with it, the pruning first. An app
built without an outbox or a pruning function (tests, a library user embedding the API) runs
neither.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from refcore.ports import EventOutbox
from refcore.services.runtime import Runtime
from refcore_http.pruning import Prune, Pruner
from refcore_http.settings import Settings
from refcore_http.webhooks.lifespan import webhook_lifespan


def server_lifespan(
    runtime: Runtime, settings: Settings, *, outbox: EventOutbox | None, prune: Prune | None
) -> Callable[[Any], AbstractAsyncContextManager[None]]:
    webhooks = webhook_lifespan(runtime, outbox, settings)

    @asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[None]:
        async with webhooks(app):
            if prune is None or settings.prune_interval_seconds == 0:
                yield
                return
            pruner = Pruner(prune, runtime.clock, settings.prune_interval_seconds)
            app.state.pruner = pruner
            await pruner.start()
            try:
                yield
            finally:
                await pruner.stop()

    return lifespan
