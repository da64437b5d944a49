"""The processor integration's keys, derived once per server key (see :mod:`refcore_http.webhooks.keys`
for how a server without ``REFCORE_SECRET_KEY`` is allowed to run on loopback only)."""

from __future__ import annotations

import functools

from refcore.services.processor_connection import ProcessorKeys
from refcore_http.settings import Settings
from refcore_http.webhooks.keys import effective_secret_key


@functools.lru_cache(maxsize=4)
def _keys(secret_key: str) -> ProcessorKeys:
    return ProcessorKeys(secret_key)


def processor_keys(settings: Settings) -> ProcessorKeys:
    return _keys(effective_secret_key(settings))
