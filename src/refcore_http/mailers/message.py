"""A core :class:`~refcore.ports.mailer.Message` as a standard e-mail (``email.message.EmailMessage``)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from email.message import EmailMessage
from email.utils import format_datetime, make_msgid

from refcore.ports.mailer import Message


def to_email(message: Message, *, sender: str) -> EmailMessage:
    email = EmailMessage()
    email["From"] = sender
    email["To"] = message.to
    email["Subject"] = message.subject
    email["Date"] = format_datetime(datetime.now(UTC))
    domain = sender.rpartition("@")[2] or "refcore.invalid"
    email["Message-ID"] = make_msgid(idstring=uuid.uuid4().hex, domain=domain)
    email.set_content(message.text)
    return email
