"""``smtp://host:port``: hand each message to an SMTP server (one connection per message).

Plain SMTP to a relay the deployment trusts (a local MTA, a sidecar, a mail service's relay
port); authentication and TLS, when needed, belong to that relay. Each socket operation times
out after :data:`TIMEOUT_SECONDS`, so a relay that refuses connections fails a signup at once.

A relay that accepts the connection and then never answers holds the sending thread for that
long at every step, and the join route sends from the server's worker threads, which every
write shares: eight anonymous joins had held all eight for ten seconds, and an unrelated
payment or capture waited for them (probe M). So at most :data:`MAX_SENDING` messages are being
sent at once in a process; a join that finds them all busy fails at once, as when the relay is
down (``internal_error``, "try again later"), and leaves the other workers to everything else.
"""

from __future__ import annotations

import smtplib
import threading

from refcore.ports.mailer import Message
from refcore_http.mailers.message import to_email

TIMEOUT_SECONDS = 10.0
#: Messages being handed to the relay at once, per process (of the default eight workers).
MAX_SENDING = 2


class RelayBusy(Exception):
    """Every sending slot is taken: the relay is slow or hanging; the signup is to be retried."""


class SmtpMailer:
    def __init__(
        self,
        host: str,
        port: int,
        *,
        sender: str,
        timeout: float = TIMEOUT_SECONDS,
        max_sending: int = MAX_SENDING,
    ) -> None:
        self.host = host
        self.port = port
        self.sender = sender
        self.timeout = timeout
        self._sending = threading.BoundedSemaphore(max_sending)

    def send(self, message: Message) -> None:
        email = to_email(message, sender=self.sender)
        if not self._sending.acquire(blocking=False):
            raise RelayBusy(f"{self.host}:{self.port} is still busy with earlier messages")
        try:
            with smtplib.SMTP(self.host, self.port, timeout=self.timeout) as server:
                server.send_message(email)
        finally:
            self._sending.release()
