"""Sending e-mail as a port: the core composes a :class:`Message`, an adapter delivers it.

The bundled adapters (``refcore_http.mailers``) are ``console`` (the default, for development),
``file:DIR`` (one ``.eml`` file per message) and ``smtp://host:port`` (decisions 6, 11). The
sender address belongs to the adapter's configuration, not to the message: the core has no
opinion on which domain a deployment sends from.

A mailer is called after the unit of work that decided to send has committed, never inside it:
a slow mail server must not hold a database transaction (on SQLite, the write lock) open.
"""

from __future__ import annotations

from typing import Protocol

from attrs import frozen


@frozen
class Message:
    """A plain-text e-mail to one recipient."""

    to: str
    subject: str
    text: str


class Mailer(Protocol):
    def send(self, message: Message) -> None:
        """Deliver ``message`` or raise. Implementations must never log the message text: it may
        carry a one-time token."""
        ...
