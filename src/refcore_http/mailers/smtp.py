"""``smtp://host:port``: hand each message to an SMTP server (one connection per message).

Plain SMTP to a relay the deployment trusts (a local MTA, a sidecar, a mail service's relay
port); authentication and TLS, when needed, belong to that relay. The connection times out
after :data:`TIMEOUT_SECONDS`, so a dead server fails a signup quickly instead of hanging it.
"""

from __future__ import annotations

import smtplib

from refcore.ports.mailer import Message
from refcore_http.mailers.message import to_email

TIMEOUT_SECONDS = 10.0


class SmtpMailer:
    def __init__(self, host: str, port: int, *, sender: str, timeout: float = TIMEOUT_SECONDS) -> None:
        self.host = host
        self.port = port
        self.sender = sender
        self.timeout = timeout

    def send(self, message: Message) -> None:
        email = to_email(message, sender=self.sender)
        with smtplib.SMTP(self.host, self.port, timeout=self.timeout) as server:
            server.send_message(email)
