"""The SecretBox: webhook secrets sealed with a key derived from REFCORE_SECRET_KEY."""

from __future__ import annotations

import pytest

from refcore.crypto import DecryptionError, SecretBox, SecretKeyError
from refcore_http.processor.keys import processor_keys
from refcore_http.settings import Settings
from refcore_http.webhooks.keys import secret_box
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


# -- a fallback key, while a fleet changes REFCORE_SECRET_KEY ----------------------------------

OLD_KEY = "the key the fleet is moving away from, 32+"
NEW_KEY = "the key the fleet is moving to, 32+ chars"


def test_with_a_fallback_the_box_opens_what_the_old_key_sealed_and_seals_with_the_current_key() -> None:
    sealed_before = SecretBox(OLD_KEY).seal(PLAIN, context="app_1")
    box = SecretBox(NEW_KEY, fallback_key=OLD_KEY)
    assert box.open(sealed_before, context="app_1") == PLAIN
    sealed_now = box.seal(PLAIN, context="app_1")
    # Sealed under the current key alone: the new key opens it without any fallback, the old cannot.
    assert SecretBox(NEW_KEY).open(sealed_now, context="app_1") == PLAIN
    with pytest.raises(DecryptionError):
        SecretBox(OLD_KEY).open(sealed_now, context="app_1")


def test_the_fallback_also_opens_for_a_fleet_that_has_not_switched_yet() -> None:
    """Step (a) of the procedure: old key current, new key as fallback, and a token a process
    already on the new key sealed opens there too."""
    sealed_by_switched = SecretBox(NEW_KEY).seal(PLAIN, context="app_1")
    assert SecretBox(OLD_KEY, fallback_key=NEW_KEY).open(sealed_by_switched, context="app_1") == PLAIN


def test_without_a_fallback_a_token_of_the_old_key_fails_as_before() -> None:
    sealed_before = SecretBox(OLD_KEY).seal(PLAIN, context="app_1")
    with pytest.raises(DecryptionError, match="was REFCORE_SECRET_KEY changed"):
        SecretBox(NEW_KEY).open(sealed_before, context="app_1")


def test_the_fallback_does_not_lift_the_context_binding() -> None:
    sealed_before = SecretBox(OLD_KEY).seal(PLAIN, context="app_1")
    with pytest.raises(DecryptionError):
        SecretBox(NEW_KEY, fallback_key=OLD_KEY).open(sealed_before, context="app_2")


def test_a_token_neither_key_opens_is_refused_naming_both_settings_and_neither_key() -> None:
    sealed = SecretBox("a third key, neither the old nor the new one").seal(PLAIN, context="app_1")
    with pytest.raises(DecryptionError) as refused:
        SecretBox(NEW_KEY, fallback_key=OLD_KEY).open(sealed, context="app_1")
    message = str(refused.value)
    assert "REFCORE_SECRET_KEY" in message and "REFCORE_SECRET_KEY_FALLBACK" in message
    assert NEW_KEY not in message and OLD_KEY not in message


def test_reseal_moves_a_fallback_token_to_the_current_key_and_leaves_a_current_one() -> None:
    box = SecretBox(NEW_KEY, fallback_key=OLD_KEY)
    old_token = SecretBox(OLD_KEY).seal(PLAIN, context="app_1")
    moved = box.reseal(old_token, context="app_1")
    assert moved is not None and moved != old_token
    assert SecretBox(NEW_KEY).open(moved, context="app_1") == PLAIN
    # Under the current key already: nothing to do, and a second reseal says so.
    assert box.reseal(moved, context="app_1") is None
    with pytest.raises(DecryptionError):
        box.reseal(
            SecretBox("a third key, neither the old nor the new one").seal(PLAIN, context="a"), context="a"
        )


def test_a_short_fallback_is_refused_naming_its_setting_not_its_value() -> None:
    with pytest.raises(SecretKeyError, match="REFCORE_SECRET_KEY_FALLBACK") as refused:
        SecretBox(NEW_KEY, fallback_key="short-fallback")
    assert "short-fallback" not in str(refused.value)


def test_a_box_with_a_fallback_shows_neither_key() -> None:
    shown = repr(SecretBox(NEW_KEY, fallback_key=OLD_KEY))
    assert NEW_KEY not in shown and OLD_KEY not in shown


def test_a_server_derives_its_keys_once_per_pair_of_keys_not_per_request() -> None:
    """Hot path: without a fallback, the box is the cached one of the key alone, as before."""
    alone = Settings(database_url="memory://", secret_key=NEW_KEY)
    paired = Settings(database_url="memory://", secret_key=NEW_KEY, secret_key_fallback=OLD_KEY)
    assert secret_box(alone) is secret_box(alone)
    assert secret_box(paired) is secret_box(paired) is not secret_box(alone)
    assert processor_keys(paired) is processor_keys(paired) is not processor_keys(alone)
    old_token = SecretBox(OLD_KEY).seal(PLAIN, context="app_1")
    assert secret_box(paired).open(old_token, context="app_1") == PLAIN
    with pytest.raises(DecryptionError):
        secret_box(alone).open(old_token, context="app_1")
