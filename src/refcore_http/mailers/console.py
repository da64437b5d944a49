"""``console``: write each message to standard output (the default; for development).

The message is printed whole, confirmation link included, because that is the only way a
developer without a mail server can finish a signup. It goes to stdout, not to the log, and a
production deployment sets ``REFCORE_MAILER`` to ``smtp://…`` or ``file:DIR``.
"""

from __future__ import annotations

import sys
import threading
from typing import TextIO

from refcore.ports.mailer import Message
from refcore_http.mailers.message import to_email


class ConsoleMailer:
    def __init__(self, *, sender: str, stream: TextIO | None = None) -> None:
        self.sender = sender
        self._stream = stream
        self._lock = threading.Lock()

    def send(self, message: Message) -> None:
        stream = self._stream or sys.stdout
        text = to_email(message, sender=self.sender).as_string()
        with self._lock:
            stream.write(f"----- refcore mail -----\n{text}\n----- end of mail -----\n")
            stream.flush()
