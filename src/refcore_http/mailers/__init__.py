"""The bundled mailers and ``REFCORE_MAILER`` (decisions 6, 11).

=======================  ====================================================================
``console`` (default)    print each message to standard output (development)
``file:DIR``             write one ``.eml`` file per message into ``DIR`` (created if missing)
``smtp://host:port``     send through an SMTP server (port default 25)
=======================  ====================================================================

The sender address is ``REFCORE_MAIL_FROM`` (default ``refcore@localhost``).
"""

from __future__ import annotations

from functools import cache
from urllib.parse import urlsplit

from attrs import frozen

from refcore.ports.mailer import Mailer
from refcore_http.mailers.console import ConsoleMailer
from refcore_http.mailers.files import FileMailer
from refcore_http.mailers.smtp import SmtpMailer

DEFAULT_MAILER = "console"
DEFAULT_SENDER = "refcore@localhost"


@frozen
class MailerSpec:
    kind: str
    directory: str | None = None
    host: str | None = None
    port: int = 25


def parse_mailer_spec(value: str) -> MailerSpec:
    """``ValueError`` (naming the accepted forms) for anything but the three forms above."""
    text = value.strip()
    if text == "console":
        return MailerSpec(kind="console")
    if text.startswith("file:"):
        directory = text[len("file:") :]
        if not directory:
            raise ValueError("file: needs a directory, as in file:/var/spool/refcore")
        return MailerSpec(kind="file", directory=directory)
    if text.startswith("smtp://"):
        parts = urlsplit(text)
        try:
            given = parts.port
        except ValueError:
            given = 0
        if given == 0:  # 0, out of range or not a number; an omitted port is None
            raise ValueError("the SMTP port must be a number from 1 to 65535")
        port = given or 25
        if not parts.hostname or parts.path not in ("", "/") or parts.query or parts.username:
            raise ValueError("write the SMTP server as smtp://host:port")
        return MailerSpec(kind="smtp", host=parts.hostname, port=port)
    raise ValueError("expected console, file:DIR or smtp://host:port")


@cache
def open_mailer(value: str = DEFAULT_MAILER, sender: str = DEFAULT_SENDER) -> Mailer:
    """The mailer a ``REFCORE_MAILER`` value names (one per value and sender, shared)."""
    spec = parse_mailer_spec(value)
    if spec.kind == "file":
        assert spec.directory is not None
        return FileMailer(spec.directory, sender=sender)
    if spec.kind == "smtp":
        assert spec.host is not None
        return SmtpMailer(spec.host, spec.port, sender=sender)
    return ConsoleMailer(sender=sender)


__all__ = [
    "DEFAULT_MAILER",
    "DEFAULT_SENDER",
    "ConsoleMailer",
    "FileMailer",
    "MailerSpec",
    "SmtpMailer",
    "open_mailer",
    "parse_mailer_spec",
]
