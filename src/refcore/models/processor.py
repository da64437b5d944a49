"""An App's connection to its payment processor, one per mode (interface 1 item 3a, 4.7).

A connection binds one processor account (``acct_…``) in one mode to one App. The processor signs
every event it delivers with a per-installation webhook secret; the service must read that secret
back to verify each delivery, so it is stored sealed (AES-GCM, :class:`~refcore.crypto.SecretBox`),
never in plain text, like the App's own webhook secret.

"One active connection per App and mode" and "one App per account and mode" are unique keys, not
checks, so that two concurrent claims cannot both win on any store: ``active_app_mode`` and
``active_account_mode`` hold a value only while the connection is active, and every store refuses
two rows with the same non-null value (a disconnected row sets them to ``None``, which never
clashes). ``install_nonce`` is unique for the same reason: a connect link is claimed at most once.
Rows are never deleted: a disconnected connection stays as history.
"""

from __future__ import annotations

from datetime import datetime

from attrs import frozen

from refcore.models.mode import Mode

CONNECTION_PREFIX = "pcn"


def app_mode_key(app_id: str, mode: Mode) -> str:
    """The value of ``active_app_mode`` while a connection of this App and mode is active."""
    return f"{app_id}:{mode.value}"


def account_mode_key(account_id: str, mode: Mode) -> str:
    """The value of ``active_account_mode`` while this processor account is connected in ``mode``."""
    return f"{account_id}:{mode.value}"


@frozen
class ProcessorConnection:
    id: str
    app_id: str
    mode: Mode
    #: The processor's account ID (``acct_…``); its events name it in their ``account`` field.
    account_id: str
    #: The webhook signing secret, sealed for this connection; ``""`` once disconnected.
    webhook_secret_ciphertext: str
    #: The nonce of the connect-link ``state`` this connection was claimed with (unique).
    install_nonce: str
    created_at: datetime
    connected_at: datetime
    disconnected_at: datetime | None = None
    #: ``app_mode_key(app_id, mode)`` while active, ``None`` after: unique on every store.
    active_app_mode: str | None = None
    #: ``account_mode_key(account_id, mode)`` while active, ``None`` after: unique on every store.
    active_account_mode: str | None = None

    @property
    def active(self) -> bool:
        return self.disconnected_at is None
