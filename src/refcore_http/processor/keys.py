"""The processor integration's keys, derived once per server key and fallback (see
:mod:`refcore_http.webhooks.keys` for how a server without ``REFCORE_SECRET_KEY`` is allowed to run
on loopback only)."""

from __future__ import annotations

import functools

from refcore.services.processor_connection import ProcessorKeys
from refcore_http.settings import Settings
from refcore_http.webhooks.keys import effective_secret_key


@functools.lru_cache(maxsize=4)
def _keys(secret_key: str, fallback_key: str | None) -> ProcessorKeys:
    return ProcessorKeys(secret_key, fallback_key=fallback_key)


def processor_keys(settings: Settings) -> ProcessorKeys:
    """This server's processor keys, with ``REFCORE_SECRET_KEY_FALLBACK`` opening and verifying
    too when it is set (derived once per pair of keys)."""
    return _keys(effective_secret_key(settings), settings.secret_key_fallback)
