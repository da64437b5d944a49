"""A server key that the settings accept but that is likely a mistake is warned about at start,
never refused (a running fleet would stop at upgrade) and never quoted: whitespace at either
end, which tools keep or strip differently between processes, and a key of few different
characters, which is no random string (probe R: 40 spaces, and a trailing newline, accepted
without a word)."""

from __future__ import annotations

import io

import pytest

from refcore_http.settings import Settings
from refcore_http.webhooks import keys

RANDOM = "q7Vd2LpX9sKe4TzR1mWb8NcH3yFu6GjA"


@pytest.fixture(autouse=True)
def _fresh_warnings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(keys, "_doubted", set())


def _warnings(settings: Settings) -> str:
    stderr = io.StringIO()
    keys.require_secret_key(settings, stderr=stderr)
    return stderr.getvalue()


def test_a_random_key_and_fallback_start_without_a_warning() -> None:
    assert _warnings(Settings(secret_key=RANDOM, secret_key_fallback=RANDOM[::-1])) == ""


@pytest.mark.parametrize(
    ("key", "doubt"),
    [
        (RANDOM + "\n", "begins or ends with whitespace"),
        (" " + RANDOM, "begins or ends with whitespace"),
        (RANDOM + "\t", "begins or ends with whitespace"),
        ("-" * 40, "fewer than 10 different characters"),
        ("ab" * 20, "fewer than 10 different characters"),
    ],
)
def test_a_doubtful_key_starts_with_one_warning_that_names_the_variable_not_the_key(
    key: str, doubt: str
) -> None:
    printed = _warnings(Settings(secret_key=key))
    assert printed.count("\n") == 1
    assert printed.startswith("refcore: WARNING: REFCORE_SECRET_KEY ") and doubt in printed
    assert "docs/deployment.md" in printed
    assert key.strip() not in printed or not key.strip()  # the key is never quoted


def test_a_key_of_forty_spaces_gets_both_doubts_and_each_once_per_process() -> None:
    settings = Settings(secret_key=RANDOM, secret_key_fallback=" " * 40)
    first = _warnings(settings)
    assert first.count("REFCORE_SECRET_KEY_FALLBACK") == 2
    assert "whitespace" in first and "different characters" in first
    assert "REFCORE_SECRET_KEY " not in first  # the key itself is random
    assert _warnings(settings) == ""  # the server checks its settings twice at start


def test_the_doubts_are_the_rules_own() -> None:
    assert keys.doubts_about(RANDOM) == []
    assert len(keys.doubts_about(" " * 40)) == 2
    assert keys.doubts_about("0123456789" * 4) == []  # ten different characters are enough
    assert len(keys.doubts_about("012345678" * 4)) == 1
