"""The bundled mailers and ``REFCORE_MAILER`` (decisions 6, 11): console, ``file:DIR``, ``smtp://``."""

from __future__ import annotations

import email
import email.policy
import io
import socketserver
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest

from refcore.ports.mailer import Message
from refcore_http.mailers import ConsoleMailer, FileMailer, SmtpMailer, open_mailer, parse_mailer_spec
from refcore_http.mailers.message import ascii_domain
from refcore_http.mailers.smtp import RelayBusy
from refcore_http.settings import Settings, SettingsError
from tests.selfservice.world import mailbox

MESSAGE = Message(
    to="sam@x.example", subject="Confirm your request", text="Open https://x.example/?token=abc\n"
)


def test_the_file_mailer_writes_one_eml_file_per_message(tmp_path: Path) -> None:
    mailer = FileMailer(tmp_path / "spool", sender="join@acme.example")
    mailer.send(MESSAGE)
    mailer.send(Message(to="kim@x.example", subject="Second", text="Hi\n"))
    files = sorted((tmp_path / "spool").iterdir())
    assert [f.suffix for f in files] == [".eml", ".eml"]  # no temporary files are left behind
    first, second = mailbox(tmp_path / "spool")
    assert (first["From"], first["To"], first["Subject"]) == (
        "join@acme.example",
        "sam@x.example",
        "Confirm your request",
    )
    assert first.get_body(preferencelist=("plain",)).get_content() == MESSAGE.text  # type: ignore[union-attr]
    assert second["To"] == "kim@x.example"
    assert first["Message-ID"] and first["Date"]


@pytest.mark.parametrize(
    ("address", "written"),
    [
        ("j@b\u00fccher.example", "j@xn--bcher-kva.example"),
        ("zo\u00e9@example.com", "zo\u00e9@example.com"),
        ("zo\u00e9@b\u00fccher.example", "zo\u00e9@xn--bcher-kva.example"),
    ],
)
def test_the_file_mailer_writes_an_address_outside_ascii_as_an_address(
    tmp_path: Path, address: str, written: str
) -> None:
    """Its domain in ASCII, its local part in raw UTF-8 (RFC 6532): written as encoded words, as
    the default policy wrote it, it was no address at all (RFC 2047, 5; probe AI)."""
    FileMailer(tmp_path, sender="join@acme.example").send(Message(to=address, subject="Hi", text="x\n"))
    (path,) = tmp_path.iterdir()
    raw = path.read_bytes()
    assert b"=?utf-8?" not in raw
    assert f"To: {written}".encode() in raw
    (message,) = mailbox(tmp_path)
    assert message["To"] == written


def test_the_console_mailer_prints_the_whole_message(capsys: pytest.CaptureFixture[str]) -> None:
    stream = io.StringIO()
    ConsoleMailer(sender="refcore@localhost", stream=stream).send(MESSAGE)
    printed = stream.getvalue()
    assert "To: sam@x.example" in printed and "token=abc" in printed
    ConsoleMailer(sender="refcore@localhost").send(MESSAGE)
    assert "Subject: Confirm your request" in capsys.readouterr().out


class _FakeSmtp(socketserver.StreamRequestHandler):
    """Just enough SMTP for smtplib: greeting, EHLO, MAIL, RCPT, DATA, QUIT."""

    received: ClassVar[list[tuple[str, list[str], bytes]]] = []

    def _reply(self, line: str) -> None:
        self.wfile.write(line.encode() + b"\r\n")

    def handle(self) -> None:
        self._reply("220 fake.smtp ESMTP")
        sender, recipients = "", []
        while True:
            line = self.rfile.readline().decode().rstrip("\r\n")
            verb = line.split(" ", 1)[0].upper()
            if verb in ("EHLO", "HELO"):
                self._reply("250 fake.smtp")
            elif verb == "MAIL":
                sender = line.split(":", 1)[1].strip().strip("<>")
                self._reply("250 OK")
            elif verb == "RCPT":
                recipients.append(line.split(":", 1)[1].strip().strip("<>"))
                self._reply("250 OK")
            elif verb == "DATA":
                self._reply("354 End data with <CR><LF>.<CR><LF>")
                data = b""
                while (chunk := self.rfile.readline()) != b".\r\n":
                    data += chunk
                _FakeSmtp.received.append((sender, recipients, data))
                self._reply("250 OK queued")
            elif verb == "QUIT" or not line:
                self._reply("221 Bye")
                return
            else:
                self._reply("502 not implemented")


@pytest.fixture
def smtp_server() -> Iterator[tuple[str, int]]:
    _FakeSmtp.received = []
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _FakeSmtp)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        host, port = server.server_address[:2]
        yield str(host), int(port)
    finally:
        server.shutdown()
        server.server_close()


def test_the_smtp_mailer_hands_the_message_to_the_server(smtp_server: tuple[str, int]) -> None:
    host, port = smtp_server
    mailer = open_mailer(f"smtp://{host}:{port}", "join@acme.example")
    assert isinstance(mailer, SmtpMailer)
    mailer.send(MESSAGE)
    ((sender, recipients, data),) = _FakeSmtp.received
    assert (sender, recipients) == ("join@acme.example", ["sam@x.example"])
    parsed = email.message_from_bytes(data, policy=email.policy.default)
    assert parsed["Subject"] == "Confirm your request"
    assert "token=abc" in data.decode()


def test_an_internationalised_domain_reaches_a_relay_without_smtputf8(smtp_server: tuple[str, int]) -> None:
    """Probe M: ``sam@exämple.com`` passed validation, but the mailer needed the relay's SMTPUTF8
    (this relay, as many, offers none), so every join to it failed. The domain goes in its IDNA
    form, in the envelope and the header alike."""
    host, port = smtp_server
    mailer = SmtpMailer(host, port, sender="join@acme.example")
    mailer.send(Message(to="sam@ex\u00e4mple.com", subject="Confirm your request", text="token=abc"))
    ((_sender, recipients, data),) = _FakeSmtp.received
    assert recipients == ["sam@xn--exmple-cua.com"]
    assert email.message_from_bytes(data, policy=email.policy.default)["To"] == "sam@xn--exmple-cua.com"


@pytest.mark.parametrize(
    ("address", "sent"),
    [
        ("sam@example.com", "sam@example.com"),
        ("sam@b\u00fccher.example", "sam@xn--bcher-kva.example"),
        ("s\u00e4m@example.com", "s\u00e4m@example.com"),  # a local part needs SMTPUTF8 itself
        # IDNA 2008, never IDNA 2003's mapping, which sent these to other domains (probe O):
        ("sam@stra\u00dfe.de", "sam@xn--strae-oqa.de"),  # not strasse.de
        ("sam@a\u200db.example", "sam@a\u200db.example"),  # refused, not folded into ab.example
        ("sam@\u2165.example", "sam@\u2165.example"),  # Roman numeral six, not vi.example
        ("sam@B\u00fcCHER.example", "sam@xn--bcher-kva.example"),  # case means nothing in a domain
    ],
)
def test_only_a_domain_outside_ascii_is_rewritten(address: str, sent: str) -> None:
    assert ascii_domain(address) == sent


def test_an_unreachable_smtp_server_raises() -> None:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # bound but not listening: connections are refused
        with pytest.raises(OSError):
            SmtpMailer("127.0.0.1", port, sender="x@y.example", timeout=2).send(MESSAGE)


def test_a_hanging_relay_holds_at_most_two_sending_threads_and_the_next_message_fails_at_once() -> None:
    """Probe M: a relay that accepts and never answers held a worker thread for each join, all
    eight of them, and every write of the server waited. Two messages at most wait on the relay;
    a third fails at once with ``RelayBusy`` (the join answers "try again later")."""
    import socket

    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)  # accepts, never speaks: smtplib waits for the greeting
        port = listener.getsockname()[1]
        mailer = SmtpMailer("127.0.0.1", port, sender="x@y.example", timeout=1.0)
        outcomes: list[BaseException | None] = []

        def send() -> None:
            try:
                mailer.send(MESSAGE)
            except BaseException as exc:  # recorded for the assertions
                outcomes.append(exc)

        waiting = [threading.Thread(target=send) for _ in range(2)]
        for thread in waiting:
            thread.start()
        time.sleep(0.2)
        started = time.perf_counter()
        with pytest.raises(RelayBusy):
            mailer.send(MESSAGE)
        assert time.perf_counter() - started < 0.1
        for thread in waiting:
            thread.join(5)
        assert len(outcomes) == 2 and all(isinstance(o, OSError) for o in outcomes)  # timed out
        with pytest.raises(OSError):  # the slots are free again: it tries, and times out
            mailer.send(MESSAGE)


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        ("console", "console"),
        ("file:/tmp/mail", "file"),
        ("smtp://mail.internal:2525", "smtp"),
        ("smtp://relay", "smtp"),
    ],
)
def test_mailer_settings_that_are_understood(value: str, kind: str) -> None:
    assert parse_mailer_spec(value).kind == kind
    assert Settings.from_env({"REFCORE_MAILER": value}).mailer == value


@pytest.mark.parametrize(
    "value",
    [
        "sendmail",
        "file:",
        "smtp://",
        "smtp://host:99999",
        "smtp://host:0",
        "smtp://host:²",
        "smtps://host",
        "smtp://u:p@host:25",
    ],
)
def test_mailer_settings_that_are_refused_stop_the_server_at_start(value: str) -> None:
    with pytest.raises(SettingsError, match="REFCORE_MAILER"):
        Settings.from_env({"REFCORE_MAILER": value})


def test_join_settings_from_the_environment() -> None:
    settings = Settings.from_env(
        {
            "REFCORE_MAIL_FROM": "partners@acme.example",
            "REFCORE_JOIN_CONFIRM_URL": "https://acme.example/join/{slug}",
            "REFCORE_JOIN_LIMIT_PER_EMAIL": "3",
            "REFCORE_JOIN_LIMIT_PER_IP": "50",
        }
    )
    assert settings.mail_from == "partners@acme.example"
    assert settings.join_confirm_url == "https://acme.example/join/{slug}"
    assert (settings.join_limit_per_email, settings.join_limit_per_ip) == (3, 50)
    assert Settings().mailer == "console"
    with pytest.raises(SettingsError, match="REFCORE_JOIN_LIMIT_PER_IP"):
        Settings.from_env({"REFCORE_JOIN_LIMIT_PER_IP": "0"})
