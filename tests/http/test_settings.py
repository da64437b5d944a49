"""Settings checked when they are read: where the server listens, the capture route's allowed
origin, the webhook CA bundle and the hosted-signup mail settings. A bad value stops every
command with one line naming its variable (exit status 2), before anything starts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import certifi
import pytest

from refcore.services.runtime import Runtime
from refcore_http import cli
from refcore_http.app import create_app
from refcore_http.routes.join import join_policy
from refcore_http.settings import Settings, SettingsError
from tests.http.world import Client

# -- REFCORE_HOST and --host ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "host", ["localhost", "0.0.0.0", "::", "127.0.0.1", "::1", "api.internal", "refcore-1.example.com."]
)
def test_addresses_and_host_names_are_taken_as_where_to_listen(host: str) -> None:
    assert Settings.from_env({"REFCORE_HOST": host}).host == host
    assert Settings.from_env({}, host=host).host == host


@pytest.mark.parametrize(
    "host", ["999.1.1.1", "256.0.0.1", "1.2.3", "", "-bad.example", "a..example", "[::1]", "a b", "x,y"]
)
def test_a_host_that_is_no_address_nor_host_name_is_refused(host: str) -> None:
    with pytest.raises(SettingsError, match="REFCORE_HOST must be an IP address or a host name"):
        Settings.from_env({"REFCORE_HOST": host})
    with pytest.raises(SettingsError, match="--host"):
        Settings.from_env({}, host=host)


@pytest.mark.usefixtures("collector_restored")
@pytest.mark.parametrize(
    ("env", "argv", "variable"),
    [
        ({"REFCORE_HOST": "999.1.1.1"}, [], "REFCORE_HOST"),
        ({}, ["--host", "999.1.1.1"], "--host"),
    ],
)
def test_serve_stops_on_a_bad_host_before_uvicorn_resolves_it(
    env: dict[str, str],
    argv: list[str],
    variable: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import uvicorn

    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: pytest.fail("the server must not start"))
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert cli.main(["serve", "--database-url", "memory://", *argv]) == 2
    printed = capsys.readouterr()
    assert printed.out == ""
    assert printed.err == f"refcore: {variable} must be an IP address or a host name\n"


# -- REFCORE_CORS_ALLOW_ORIGIN -------------------------------------------------------------------


@pytest.mark.parametrize("value", ["", "   "])
def test_an_empty_allowed_origin_is_unset_and_any_origin_is_allowed(value: str, runtime: Runtime) -> None:
    settings = Settings.from_env({"REFCORE_CORS_ALLOW_ORIGIN": value})
    assert settings.cors_allow_origin == "*"
    client = Client(create_app(runtime, settings))
    preflight = client.request("OPTIONS", "/v1/capture", headers={"Origin": "https://shop.example"})
    assert preflight.headers.get_list("access-control-allow-origin") == ["*"]


@pytest.mark.parametrize(
    "value", ["*", "https://shop.example", "http://localhost:3000", "https://shop.example:8443"]
)
def test_any_origin_or_one_origin_is_taken(value: str) -> None:
    assert Settings.from_env({"REFCORE_CORS_ALLOW_ORIGIN": f" {value} "}).cors_allow_origin == value


@pytest.mark.parametrize(
    "value",
    [
        "https://a.example,https://b.example",
        "https://a.example https://b.example",
        "https://shop.example/",
        "https://shop.example/page",
        "shop.example",
        "null",
        "https://shop.example:99999",
        "ftp://shop.example",
    ],
)
def test_an_allowed_origin_no_browser_could_match_is_refused(value: str) -> None:
    with pytest.raises(SettingsError, match="REFCORE_CORS_ALLOW_ORIGIN must be \\* or one origin"):
        Settings.from_env({"REFCORE_CORS_ALLOW_ORIGIN": value})


# -- REFCORE_WEBHOOK_CA_BUNDLE -------------------------------------------------------------------


def test_a_pem_ca_bundle_is_taken() -> None:
    bundle = certifi.where()
    assert Settings.from_env({"REFCORE_WEBHOOK_CA_BUNDLE": bundle}).webhook_ca_bundle == bundle


@pytest.mark.parametrize("content", [b"garbage\nsecret-looking-content\n", b""])
def test_a_ca_bundle_that_holds_no_pem_certificate_is_refused_without_its_content(
    content: bytes, tmp_path: Path
) -> None:
    bundle = tmp_path / "notpem.pem"
    bundle.write_bytes(content)
    with pytest.raises(SettingsError, match="REFCORE_WEBHOOK_CA_BUNDLE") as refused:
        Settings.from_env({"REFCORE_WEBHOOK_CA_BUNDLE": str(bundle)})
    assert "no PEM CA certificate" in str(refused.value)
    assert "secret-looking-content" not in str(refused.value)


@pytest.mark.usefixtures("collector_restored")
def test_serve_stops_on_a_ca_bundle_that_holds_no_pem_certificate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import uvicorn

    bundle = tmp_path / "notpem.pem"
    bundle.write_text("garbage\n")
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: pytest.fail("the server must not start"))
    monkeypatch.setenv("REFCORE_WEBHOOK_CA_BUNDLE", str(bundle))
    assert cli.main(["serve", "--database-url", "memory://"]) == 2
    printed = capsys.readouterr()
    assert printed.out == "" and printed.err.count("\n") == 1
    assert printed.err.startswith("refcore: REFCORE_WEBHOOK_CA_BUNDLE: ") and "garbage" not in printed.err


# -- REFCORE_MAIL_FROM and REFCORE_JOIN_CONFIRM_URL ----------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        Settings().mail_from,
        "partners@shop.example",
        "Shop <partners@shop.example>",
        '"Shop, Inc." <partners@shop.example>',
    ],
)
def test_an_e_mail_address_is_taken_as_the_sender(value: str) -> None:
    assert Settings.from_env({"REFCORE_MAIL_FROM": value}).mail_from == value


@pytest.mark.parametrize(
    "value",
    [
        "notanemail",
        "partners@",
        "@shop.example",
        "a@b@shop.example",
        "Shop partners@shop.example",
        "a@shop.example, b@shop.example",
        "partners@shop.example\nBcc: everyone@shop.example",
    ],
)
def test_a_sender_that_is_no_e_mail_address_is_refused(value: str) -> None:
    with pytest.raises(SettingsError, match="REFCORE_MAIL_FROM must be an e-mail address"):
        Settings.from_env({"REFCORE_MAIL_FROM": value})


@pytest.mark.parametrize(
    ("value", "link"),
    [
        ("https://shop.example/join/{slug}", "https://shop.example/join/acme?token=join_x"),
        (
            "https://shop.example/partners?program={slug}&ref=mail",
            "https://shop.example/partners?program=acme&ref=mail&token=join_x",
        ),
        ("https://{slug}.partners.example/join", "https://acme.partners.example/join?token=join_x"),
        ("http://localhost:8000/join/{slug}/confirm", "http://localhost:8000/join/acme/confirm?token=join_x"),
    ],
)
def test_a_confirm_url_with_its_slug_and_query_is_taken(value: str, link: str) -> None:
    settings = Settings.from_env({"REFCORE_JOIN_CONFIRM_URL": value})
    assert settings.join_confirm_url == value
    assert join_policy(settings).link("acme", "join_x") == link


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::", "::1"])
def test_the_default_confirm_url_is_one_the_setting_takes(host: str) -> None:
    """An IPv6 host goes in brackets (``http://[::]:8000/…``): unbracketed, the link did not parse."""
    default = join_policy(Settings(host=host)).confirm_url
    assert Settings.from_env({"REFCORE_JOIN_CONFIRM_URL": default}).join_confirm_url == default


@pytest.mark.parametrize(
    "value",
    [
        "notaurl",
        "/join/{slug}",
        "shop.example/join/{slug}",
        "ftp://shop.example/join/{slug}",
        "https:///join/{slug}",
        "https://shop.example:99999/join",
        "https://shop.example/join/{slug} now",
    ],
)
def test_a_confirm_url_that_is_no_absolute_http_url_is_refused(value: str) -> None:
    with pytest.raises(SettingsError, match="REFCORE_JOIN_CONFIRM_URL must be an absolute"):
        Settings.from_env({"REFCORE_JOIN_CONFIRM_URL": value})


@pytest.mark.usefixtures("collector_restored")
@pytest.mark.parametrize(
    ("variable", "value"),
    [("REFCORE_MAIL_FROM", "notanemail"), ("REFCORE_JOIN_CONFIRM_URL", "notaurl")],
)
def test_bad_signup_mail_settings_stop_serve(
    variable: str, value: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import uvicorn

    calls: list[Any] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: calls.append(app))
    monkeypatch.setenv(variable, value)
    assert cli.main(["serve", "--database-url", "memory://"]) == 2
    printed = capsys.readouterr()
    assert calls == [] and printed.err.startswith(f"refcore: {variable} must be")
    assert printed.err.count("\n") == 1


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("REFCORE_PORT", "\u00b2"),
        ("REFCORE_WORKER_THREADS", "\u00b2"),
        ("REFCORE_DB_POOL_SIZE", "\u00b3"),
        ("REFCORE_SESSION_TTL_HOURS", "\u0663"),
    ],
)
def test_digits_other_than_ascii_are_a_settings_error_not_a_traceback(variable: str, value: str) -> None:
    """``str.isdigit`` takes superscripts and other scripts' digits, which ``int`` refuses with a
    ``ValueError`` (probe M: a 20-line traceback instead of the one-line error, exit 2)."""
    with pytest.raises(SettingsError, match=variable):
        Settings.from_env({variable: value})


@pytest.mark.usefixtures("collector_restored")
def test_the_port_flag_refuses_digits_other_than_ascii_as_the_variable_does(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Probe O: argparse's ``int`` read ``--port \u0663\u0660\u0660\u0660`` as 3000 and served."""
    import uvicorn

    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: pytest.fail("the server must not start"))
    assert cli.main(["serve", "--database-url", "memory://", "--port", "\u0663\u0660\u0660\u0660"]) == 2
    assert capsys.readouterr().err == "refcore: --port must be a port number from 1 to 65535\n"


# -- REFCORE_SECRET_KEY_FALLBACK ------------------------------------------------------------------

_KEY = "the-current-server-key-0123456789abcdef"
_FALLBACK = "the-previous-server-key-0123456789abcdef"


def test_a_fallback_key_is_taken_beside_the_key_and_never_shown() -> None:
    settings = Settings.from_env({"REFCORE_SECRET_KEY": _KEY, "REFCORE_SECRET_KEY_FALLBACK": _FALLBACK})
    assert (settings.secret_key, settings.secret_key_fallback) == (_KEY, _FALLBACK)
    assert _KEY not in repr(settings) and _FALLBACK not in repr(settings)


def test_an_empty_fallback_is_unset() -> None:
    """Step (d) of a key change may leave the variable empty rather than remove it."""
    settings = Settings.from_env({"REFCORE_SECRET_KEY": _KEY, "REFCORE_SECRET_KEY_FALLBACK": ""})
    assert settings.secret_key_fallback is None


@pytest.mark.parametrize(
    ("env", "message"),
    [
        (
            {"REFCORE_SECRET_KEY": _KEY, "REFCORE_SECRET_KEY_FALLBACK": "short-fallback"},
            "REFCORE_SECRET_KEY_FALLBACK must be at least 32 characters",
        ),
        (
            {"REFCORE_SECRET_KEY": _KEY, "REFCORE_SECRET_KEY_FALLBACK": _KEY},
            "REFCORE_SECRET_KEY_FALLBACK must differ from REFCORE_SECRET_KEY",
        ),
        (
            {"REFCORE_SECRET_KEY_FALLBACK": _FALLBACK},
            "REFCORE_SECRET_KEY_FALLBACK is set without REFCORE_SECRET_KEY",
        ),
        (
            {"REFCORE_SECRET_KEY": _KEY, "REFCORE_SECRET_KEY_FALLBACK": _FALLBACK + "\udcff"},
            "REFCORE_SECRET_KEY_FALLBACK holds bytes that are not UTF-8 text",
        ),
    ],
)
def test_a_fallback_that_is_short_equal_to_the_key_or_alone_is_refused_without_quoting_a_key(
    env: dict[str, str], message: str
) -> None:
    with pytest.raises(SettingsError, match=message) as refused:
        Settings.from_env(env)
    text = str(refused.value)
    assert "\n" not in text
    assert _KEY not in text and _FALLBACK not in text and "short-fallback" not in text
    with pytest.raises(SettingsError, match=message):
        Settings(
            database_url="memory://",
            secret_key=env.get("REFCORE_SECRET_KEY"),
            secret_key_fallback=env["REFCORE_SECRET_KEY_FALLBACK"],
        )


@pytest.mark.usefixtures("collector_restored")
def test_serve_stops_on_a_bad_fallback_in_one_line_without_either_key(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import uvicorn

    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: pytest.fail("the server must not start"))
    monkeypatch.setenv("REFCORE_SECRET_KEY", _KEY)
    monkeypatch.setenv("REFCORE_SECRET_KEY_FALLBACK", _KEY)
    assert cli.main(["serve", "--database-url", "memory://"]) == 2
    printed = capsys.readouterr()
    assert printed.err.count("\n") == 1 and "REFCORE_SECRET_KEY_FALLBACK" in printed.err
    assert _KEY not in printed.err + printed.out
