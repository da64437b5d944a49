"""An App's connection to its payment processor, one per mode (interface 1 item 3a, 4.7).

A connection binds a processor account (``acct_…``) in one mode to one App. The processor signs
every event it delivers with a per-installation webhook secret; the service must read that secret
back to verify each delivery, so it is stored sealed (AES-GCM, :class:`~refcore.crypto.SecretBox`),
never in plain text, like the App's own webhook secret.

"One active connection per App and mode" is a unique key, not a check, so that two concurrent
claims cannot both win on any store: ``active_app_mode`` holds a value only while the connection is
active, and every store refuses two rows with the same non-null value (a disconnected row sets it
to ``None``, which never clashes). ``install_nonce`` is unique for the same reason: a connect link
is claimed at most once. Rows are never deleted: a disconnected connection stays as history.

An account is *not* unique to one App: refcore cannot tell who owns an account, and refusing a
second App's claim let anyone claim another tenant's account first, with an invented secret, to
block its owner and learn which accounts are connected (probe AG). ``active_account_mode`` (set
while active, like ``active_app_mode``) finds an account's active connections; a delivery belongs
to the one whose secret its signature verifies with (``docs/processor.md``).
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
    #: ``account_mode_key(account_id, mode)`` while active, ``None`` after: indexed, not unique.
    active_account_mode: str | None = None

    @property
    def active(self) -> bool:
        return self.disconnected_at is None
