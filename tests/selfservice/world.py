"""Helpers of the self-service tests: the mailbox of the ``file:`` mailer, signup through HTTP."""

from __future__ import annotations

import email
import email.policy
import re
from email.message import EmailMessage
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from tests.http.world import JSON, Client, expect

_LINK = re.compile(r"https?://\S+")


def mailbox(directory: Path) -> list[EmailMessage]:
    """Every ``.eml`` file the ``file:`` mailer wrote, oldest first."""
    messages = []
    for path in sorted(directory.glob("*.eml")):
        message = email.message_from_bytes(path.read_bytes(), policy=email.policy.default)
        assert isinstance(message, EmailMessage)
        messages.append(message)
    return messages


def body_of(message: EmailMessage) -> str:
    part = message.get_body(preferencelist=("plain",))
    assert part is not None
    content = part.get_content()
    assert isinstance(content, str)
    return content


def link_in(message: EmailMessage) -> str:
    found = _LINK.findall(body_of(message))
    assert len(found) == 1, found
    return str(found[0])


def token_in(message: EmailMessage) -> str:
    """The ``token`` query parameter of the one link in the message (decisions 11)."""
    query = parse_qs(urlsplit(link_in(message)).query)
    assert list(query["token"]) == query["token"] and len(query["token"]) == 1
    return query["token"][0]


def sign_up(client: Client, mail_dir: Path, slug: str, address: str, name: str = "Sam") -> str:
    """Ask to join and return the token from the message that arrived for ``address``."""
    expect(client.post(f"/v1/join/{slug}", json={"email": address, "name": name}), 202)
    mine = [m for m in mailbox(mail_dir) if m["To"] == address]
    assert mine, f"no message for {address}"
    return token_in(mine[-1])


def join(client: Client, mail_dir: Path, slug: str, address: str, name: str = "Sam") -> JSON:
    """Sign up and confirm: the confirmation body (program affiliate and its key)."""
    token = sign_up(client, mail_dir, slug, address, name)
    return expect(client.post(f"/v1/join/{slug}/confirm", json={"token": token}), 201)
