"""The SecretBox: webhook secrets sealed with a key derived from REFCORE_SECRET_KEY."""

from __future__ import annotations

import pytest

from refcore.crypto import DecryptionError, SecretBox, SecretKeyError
from tests.webhooks.conftest import SECRET_KEY

PLAIN = "whsec_example-secret-value"


def test_a_sealed_secret_opens_with_the_same_key_and_context() -> None:
    box = SecretBox(SECRET_KEY)
    assert box.open(box.seal(PLAIN, context="app_1"), context="app_1") == PLAIN


def test_a_sealed_secret_does_not_contain_the_plain_text() -> None:
    sealed = SecretBox(SECRET_KEY).seal(PLAIN, context="app_1")
    assert PLAIN not in sealed
    assert "example-secret-value" not in sealed


def test_sealing_twice_gives_different_ciphertexts() -> None:
    box = SecretBox(SECRET_KEY)
    assert box.seal(PLAIN, context="app_1") != box.seal(PLAIN, context="app_1")


def test_another_server_key_cannot_open_it() -> None:
    sealed = SecretBox(SECRET_KEY).seal(PLAIN, context="app_1")
    with pytest.raises(DecryptionError):
        SecretBox("a different key that is also 32+ chars").open(sealed, context="app_1")


def test_a_ciphertext_copied_to_another_app_cannot_be_opened_there() -> None:
    box = SecretBox(SECRET_KEY)
    with pytest.raises(DecryptionError):
        box.open(box.seal(PLAIN, context="app_1"), context="app_2")


def test_a_tampered_ciphertext_is_refused() -> None:
    box = SecretBox(SECRET_KEY)
    sealed = box.seal(PLAIN, context="app_1")
    flipped = sealed[:-3] + ("A" if sealed[-3] != "A" else "B") + sealed[-2:]
    with pytest.raises(DecryptionError):
        box.open(flipped, context="app_1")
    with pytest.raises(DecryptionError):
        box.open("not a ciphertext", context="app_1")


def test_a_server_key_shorter_than_32_characters_is_refused() -> None:
    with pytest.raises(SecretKeyError) as refused:
        SecretBox("short-key")
    assert "short-key" not in str(refused.value)


def test_the_box_does_not_show_its_key() -> None:
    assert SECRET_KEY not in repr(SecretBox(SECRET_KEY))
