"""``file:DIR``: one ``.eml`` file per message in a directory (decisions 6).

Useful for tests and for deployments where another program picks the messages up. A file
appears whole or not at all: it is written under a temporary name and renamed, so a reader
polling the directory never sees half a message. Names sort in the order messages were sent.
"""

from __future__ import annotations

import os
import tempfile
import time
import uuid
from email.policy import SMTPUTF8
from pathlib import Path

from refcore.ports.mailer import Message
from refcore_http.mailers.message import to_email


class FileMailer:
    def __init__(self, directory: str | Path, *, sender: str) -> None:
        self.directory = Path(directory)
        self.sender = sender

    def send(self, message: Message) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        email = to_email(message, sender=self.sender)
        # A local part outside ASCII in raw UTF-8 (RFC 6532), as a relay offering SMTPUTF8 takes
        # it: the default policy wrote it as encoded words, which no address may hold (probe AI).
        data = email.as_bytes(policy=SMTPUTF8) if not message.to.isascii() else email.as_bytes()
        name = f"{time.time_ns():020d}-{uuid.uuid4().hex}.eml"
        handle, temporary = tempfile.mkstemp(dir=self.directory, prefix=".", suffix=".tmp")
        try:
            with os.fdopen(handle, "wb") as out:
                out.write(data)
            os.replace(temporary, self.directory / name)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
