"""A core :class:`~refcore.ports.mailer.Message` as a standard e-mail (``email.message.EmailMessage``)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from email.message import EmailMessage
from email.utils import format_datetime, make_msgid

from refcore.ports.mailer import Message
from refcore.validation import idna_ascii_domain


def ascii_domain(address: str) -> str:
    """``address`` with its domain in the ASCII form of internationalised names
    (:func:`refcore.validation.idna_ascii_domain`), which every relay takes. With the domain as
    it was, smtplib needed the relay's SMTPUTF8 extension, and each join to such an address
    failed with ``internal_error`` after using its allowances (probe M); the ``file:`` mailer
    wrote it as encoded words, which no address may hold (RFC 2047, 5; probe AI). A local part
    outside ASCII still needs SMTPUTF8, which only the relay can offer. A domain IDNA 2008
    refuses (the API refuses such addresses now; one stored before) is left as it is, and the
    relay judges it."""
    local, at, domain = address.rpartition("@")
    if not at or domain.isascii():
        return address
    encoded = idna_ascii_domain(domain)
    return address if encoded is None else f"{local}@{encoded}"


def to_email(message: Message, *, sender: str) -> EmailMessage:
    email = EmailMessage()
    email["From"] = sender
    email["To"] = ascii_domain(message.to)
    email["Subject"] = message.subject
    email["Date"] = format_datetime(datetime.now(UTC))
    domain = sender.rpartition("@")[2] or "refcore.invalid"
    email["Message-ID"] = make_msgid(idstring=uuid.uuid4().hex, domain=domain)
    email.set_content(message.text)
    return email
