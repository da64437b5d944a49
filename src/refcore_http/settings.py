"""Server settings, from ``REFCORE_*`` environment variables and command-line flags.

Flags win over the environment, the environment over the defaults. Values are checked when the
settings are built, so a bad variable stops the server at start with a message that names it,
rather than failing the first request that needs it.
"""

from __future__ import annotations

import email.utils
import ipaddress
import os
import re
import ssl
import urllib.parse
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from attrs import evolve, field, frozen

from refcore.models.tenancy import DEFAULT_SESSION_LIFETIME
from refcore_http.mailers import parse_mailer_spec
from refcore_http.workers import DEFAULT_MAX_THREADS

DEFAULT_DATABASE_URL = "sqlite:///./refcore.db"
MIN_SECRET_KEY_LENGTH = 32
#: ``REFCORE_SESSION_TTL_HOURS`` unset: the library's session lifetime, 720 hours (30 days).
DEFAULT_SESSION_TTL_HOURS = DEFAULT_SESSION_LIFETIME // timedelta(hours=1)
#: The longest session lifetime taken, a year: a longer one would make the expiry a formality,
#: and a typo of a few extra digits should stop the server, not keep sessions for decades.
MAX_SESSION_TTL_HOURS = 24 * 366

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


class SettingsError(ValueError):
    """A setting has a value the server cannot use; the message names the variable, never its value
    when it is a secret."""


def parse_networks(value: str | tuple[str, ...] | list[str], *, name: str) -> tuple[Network, ...]:
    # A list (repeated ``--trusted-proxy``) may hold comma-separated values as the variable does.
    items = [part for text in ([value] if isinstance(value, str) else value) for part in text.split(",")]
    networks = []
    for item in (i.strip() for i in items):
        if not item:
            continue
        try:
            networks.append(_unmapped_network(ipaddress.ip_network(item, strict=False)))
        except ValueError:
            raise SettingsError(f"{name}: {item!r} is not an IP address or network") from None
    return tuple(networks)


#: IPv4-mapped IPv6 addresses, ``::ffff:a.b.c.d``.
_MAPPED = ipaddress.IPv6Network("::ffff:0:0/96")


def _unmapped_network(network: Network) -> Network:
    """An IPv4-mapped network (``::ffff:10.0.0.0/104``) as the IPv4 network it stands for
    (``10.0.0.0/8``): visitor addresses are matched unmapped (:mod:`refcore_http.visitors`), so a
    proxy written as a dual-stack socket's log shows it had stopped matching (probe O)."""
    if isinstance(network, ipaddress.IPv6Network) and network.prefixlen >= 96 and network.subnet_of(_MAPPED):
        mapped = network.network_address.ipv4_mapped
        assert mapped is not None
        return ipaddress.IPv4Network((mapped, network.prefixlen - 96))
    return network


def _digits(text: str) -> bool:
    """Whether ``text`` is ASCII digits: ``str.isdigit`` also takes ``²`` or ``٣``, which ``int``
    refuses with a traceback instead of this module's one-line error (probe M)."""
    return text.isascii() and text.isdigit()


def _port(value: object, *, name: str) -> int:
    text = str(value)
    if not _digits(text) or not 0 < int(text) < 65536:
        raise SettingsError(f"{name} must be a port number from 1 to 65535")
    return int(text)


def _flag(value: str, *, name: str) -> bool:
    lowered = value.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off", ""):
        return False
    raise SettingsError(f"{name} must be true or false")


def _readable_file(value: str, *, name: str) -> str:
    if not os.path.isfile(value) or not os.access(value, os.R_OK):
        raise SettingsError(f"{name}: {value!r} is not a readable file")
    return value


def _ca_bundle(value: str, *, name: str) -> str:
    """A readable file that OpenSSL takes as CA certificates, loaded here as each delivery's TLS
    context will load it: a file that is no PEM would otherwise stop the server only once it
    runs, with a traceback. The message names the file, never its content."""
    _readable_file(value, name=name)
    try:
        ssl.create_default_context().load_verify_locations(cafile=value)
    except OSError:  # an ssl.SSLError (no certificate in it), or the file gone since
        raise SettingsError(f"{name}: {value!r} holds no PEM CA certificate") from None
    return value


#: A label of a host name: 1 to 63 letters, digits and hyphens, with no hyphen first or last
#: (RFC 1123). Underscores are taken too: container and service names have them, and resolvers
#: look them up.
_HOST_LABEL = re.compile(r"(?!-)[A-Za-z0-9_-]{1,63}(?<!-)")


def _is_host(text: str) -> bool:
    """Whether ``text`` is an IP address or a host name of valid syntax (resolved or not). A
    name whose last label is all digits is a mistyped address, such as ``999.1.1.1``: resolvers
    and browsers read it as one, so it is no name either."""
    try:
        ipaddress.ip_address(text)
    except ValueError:
        labels = text.removesuffix(".").split(".")
        return (
            len(text) <= 253
            and all(_HOST_LABEL.fullmatch(label) for label in labels)
            and not labels[-1].isdigit()
        )
    return True


def _host(value: str, *, name: str) -> str:
    """Where to listen: checked, not resolved (no lookup at start), so that a typo stops the
    command with one line rather than uvicorn after start-up with a traceback."""
    text = value.strip()
    if not _is_host(text):
        raise SettingsError(f"{name} must be an IP address or a host name")
    return text


def _allow_origin(value: str, *, name: str) -> str:
    """``*`` or one origin (``scheme://host[:port]``), the values of
    ``Access-Control-Allow-Origin`` a browser can match: a list, a path or a trailing slash
    matches no page, so every cross-origin capture would fail while the header looked set."""
    text = value.strip()
    if text == "*":
        return text
    parts = urllib.parse.urlsplit(text)
    if not (
        parts.scheme in ("http", "https")
        and text == f"{parts.scheme}://{parts.netloc}"
        and _has_valid_port(parts)
        and parts.username is None
        and parts.hostname is not None
        and _is_host(parts.hostname)
    ):
        raise SettingsError(f"{name} must be * or one origin such as https://shop.example")
    return text


def _has_valid_port(parts: urllib.parse.SplitResult) -> bool:
    """Whether the URL has no port or one from 1 to 65535 (urllib checks it only when read)."""
    try:
        return parts.port is None or parts.port > 0
    except ValueError:
        return False


def _confirm_url(value: str, *, name: str) -> str:
    """An absolute http or https URL (http as the default has it, for a page behind a proxy or
    on the developer's machine); checked with a slug in place of ``{slug}``, which may stand in
    the path, the query or the host name. A mail with any other link cannot be confirmed."""
    text = value.strip()
    parts = urllib.parse.urlsplit(text.replace("{slug}", "slug"))
    if not (
        parts.scheme in ("http", "https")
        and _has_valid_port(parts)
        and parts.hostname is not None
        and _is_host(parts.hostname)
        and text.isprintable()
        and " " not in text
    ):
        raise SettingsError(f"{name} must be an absolute http:// or https:// URL")
    return text


def _mail_from(value: str, *, name: str) -> str:
    """One e-mail address, bare (``partners@shop.example``) or with a display name (``Shop
    <partners@shop.example>``), read as the ``From`` header will be: a value it cannot carry
    would send messages no relay takes, or take another header with it."""
    text = value.strip()
    addresses = email.utils.getaddresses([text])
    address = addresses[0][1] if len(addresses) == 1 else ""
    local, _at, domain = address.partition("@")
    if not (local and "@" not in domain and _is_host(domain) and text.isprintable() and " " not in address):
        raise SettingsError(f"{name} must be an e-mail address, such as Shop <partners@shop.example>")
    return text


def _http_url(value: str, *, name: str) -> str:
    """An absolute https URL (http only for a loopback host, a developer's own processor stub)."""
    parts = urllib.parse.urlsplit(value.strip())
    loopback = parts.hostname in ("localhost", "127.0.0.1", "::1")
    if not parts.hostname or not (parts.scheme == "https" or (parts.scheme == "http" and loopback)):
        raise SettingsError(f"{name} must be an absolute https:// URL")
    return value.strip()


def _mailer(value: str) -> str:
    try:
        parse_mailer_spec(value)
    except ValueError as exc:
        raise SettingsError(f"REFCORE_MAILER: {exc}") from None
    return value


def _positive(value: str, *, name: str) -> int:
    text = value.strip()
    if not _digits(text) or not 0 < int(text) <= 1_000_000:
        raise SettingsError(f"{name} must be a whole number from 1 to 1000000")
    return int(text)


def _count(value: str, *, name: str) -> int:
    text = value.strip()
    if not _digits(text) or int(text) > 1_000_000:
        raise SettingsError(f"{name} must be a whole number from 0 to 1000000")
    return int(text)


def _session_ttl_hours(value: object, *, name: str) -> int:
    """A whole number of hours from 1 to :data:`MAX_SESSION_TTL_HOURS`. Zero is refused rather
    than read as "never expire" or "sessions off": either would be a surprise in a setting whose
    purpose is that sessions end."""
    text = str(value).strip() if isinstance(value, str | int) and not isinstance(value, bool) else ""
    if not _digits(text) or not 0 < int(text) <= MAX_SESSION_TTL_HOURS:
        raise SettingsError(f"{name} must be a whole number of hours from 1 to {MAX_SESSION_TTL_HOURS}")
    return int(text)


def _key_text(value: str, *, name: str) -> None:
    """A key's own rule: 32 characters or more, and text that UTF-8 can encode (the keys are
    derived from its UTF-8 bytes). An environment variable holding bytes that are not UTF-8
    reaches Python as lone surrogates, which had passed the length check and then failed the
    first derivation with a traceback: ``refcore reseal-secrets`` exited 1, its code for "a
    secret opens under neither key" (probe R). The message never quotes the key."""
    if len(value) < MIN_SECRET_KEY_LENGTH:
        raise SettingsError(f"{name} must be at least {MIN_SECRET_KEY_LENGTH} characters")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise SettingsError(f"{name} holds bytes that are not UTF-8 text; set it to text") from None


def _secret_key(value: str | None) -> str | None:
    if value is not None:
        _key_text(value, name="REFCORE_SECRET_KEY")
    return value


def _secret_key_fallback(value: str | None, secret_key: str | None) -> str | None:
    """The key that only opens (the previous or the next one while a fleet changes keys): held to
    the key's own rule, and refused alone, since a process without ``REFCORE_SECRET_KEY`` seals
    with the public development key, and refused equal to the key, which would mean that the
    step it stands for (docs/deployment.md) was left half-written. No message quotes a key."""
    if value is None:
        return None
    _key_text(value, name="REFCORE_SECRET_KEY_FALLBACK")
    if secret_key is None:
        raise SettingsError(
            "REFCORE_SECRET_KEY_FALLBACK is set without REFCORE_SECRET_KEY: the fallback only opens "
            "secrets; set REFCORE_SECRET_KEY to the key that seals them"
        )
    if value == secret_key:
        raise SettingsError(
            "REFCORE_SECRET_KEY_FALLBACK must differ from REFCORE_SECRET_KEY "
            "(it is the previous or the next key); unset it when no key change is under way"
        )
    return value


@frozen
class Settings:
    database_url: str = DEFAULT_DATABASE_URL
    host: str = "127.0.0.1"
    port: int = 8000
    #: Any string of at least 32 characters; encryption keys are derived from it (decisions 11).
    secret_key: str | None = field(default=None, repr=False)
    #: ``REFCORE_SECRET_KEY_FALLBACK``: a second key that only opens what it sealed (secrets,
    #: connect-link states), while a fleet changes ``secret_key`` (docs/deployment.md).
    secret_key_fallback: str | None = field(default=None, repr=False)
    #: Peers whose ``X-Forwarded-For`` is believed (reverse proxies); nobody's by default.
    trusted_proxies: tuple[Network, ...] = ()
    #: Apply database migrations when ``refcore serve`` starts.
    migrate_on_start: bool = True
    #: ``Access-Control-Allow-Origin`` of the public capture route.
    cors_allow_origin: str = "*"
    max_body_bytes: int = 1024 * 1024
    #: ``REFCORE_PROCESSOR_CONNECT_URL``: the payment processor's app-install URL; connect links
    #: add a signed ``state`` to it (docs/processor.md). Without it, connect-link is refused.
    processor_connect_url: str | None = None
    #: ``WEBHOOK_ALLOW_PRIVATE_NETWORKS``: let webhooks reach private and local addresses (decisions 7).
    webhook_allow_private_networks: bool = False
    #: ``REFCORE_WEBHOOK_CA_BUNDLE``: a PEM file of extra CAs trusted for webhook deliveries.
    webhook_ca_bundle: str | None = None
    #: ``REFCORE_MAILER``: ``console`` (default), ``file:DIR`` or ``smtp://host:port`` (decisions 6, 11).
    mailer: str = "console"
    #: ``REFCORE_MAIL_FROM``: the sender of hosted-signup messages.
    mail_from: str = "refcore@localhost"
    #: ``REFCORE_JOIN_CONFIRM_URL``: the page a signup confirmation link opens; ``{slug}`` becomes
    #: the program's slug and ``token=<token>`` is added to the query. Default:
    #: ``http://<host>:<port>/join/{slug}/confirm``.
    join_confirm_url: str | None = None
    #: ``REFCORE_JOIN_LIMIT_PER_EMAIL`` / ``REFCORE_JOIN_LIMIT_PER_IP``: hosted signups per hour.
    join_limit_per_email: int = 5
    join_limit_per_ip: int = 20
    #: ``REFCORE_DB_POOL_SIZE`` / ``REFCORE_DB_MAX_OVERFLOW``: database connections each server
    #: process keeps open, and how many more it may open under load (SQL stores only). A fleet's
    #: processes times (size + overflow) must stay below PostgreSQL's ``max_connections``.
    db_pool_size: int = 10
    db_max_overflow: int = 20
    #: ``REFCORE_WORKER_THREADS``: requests that run the core at once in each server process; the
    #: rest wait on the event loop, which costs nothing. More threads than the CPUs and database
    #: can serve only make them take turns (``docs/performance.md``).
    worker_threads: int = DEFAULT_MAX_THREADS
    #: ``REFCORE_READ_WORKER_THREADS``: ``GET`` requests run in a pool of their own of this many
    #: threads; ``0`` runs them in the pool above. Unset: one on SQLite, whose reads are the
    #: interpreter's work alone and whose latency tail came from threads taking turns for the
    #: GIL (commissions page p99 68-75 ms with 8 threads, 42-43 ms with one; ``bench/history.md``),
    #: and ``0`` on PostgreSQL, whose reads wait on the network and need threads to overlap.
    read_worker_threads: int | None = None
    #: ``REFCORE_PRUNE_INTERVAL_SECONDS``: how often each server process deletes the rows nothing
    #: reads any more, the balance projection's past days, hours and minutes and the rate-limit
    #: counters of ended windows (``refcore_http.pruning``); ``0`` never, in a process of a fleet
    #: that leaves it to the others.
    prune_interval_seconds: int = 600
    #: ``REFCORE_SESSION_TTL_HOURS``: how long a dashboard session authenticates after it was
    #: created, in hours (1 to a year; default 720, 30 days). The server applies it whenever a
    #: token is checked, to every session, so shortening it ends older sessions at once; raising
    #: it lengthens those not yet ended, expired ones included. ``refcore session`` reads it to
    #: tell when the token it prints expires.
    session_ttl_hours: int = DEFAULT_SESSION_TTL_HOURS
    #: ``REFCORE_KEEP_ALIVE_SECONDS``: how long an idle client connection stays open (uvicorn's
    #: ``timeout_keep_alive``, whose default of 5 it keeps). Behind a load balancer it must be
    #: longer than the balancer's idle timeout (60 s on AWS's ALB): otherwise the server closes a
    #: connection just as the balancer sends a request on it, and that request fails with a 502.
    keep_alive_seconds: int = 5

    @property
    def session_lifetime(self) -> timedelta:
        """:attr:`session_ttl_hours` as the runtime takes it."""
        return timedelta(hours=self.session_ttl_hours)

    @property
    def read_threads(self) -> int:
        """The size of the pool of ``GET`` requests (``0``: they share the main pool)."""
        if self.read_worker_threads is not None:
            return self.read_worker_threads
        return 1 if self.database_url.startswith("sqlite") else 0

    def __attrs_post_init__(self) -> None:
        _secret_key(self.secret_key)
        _secret_key_fallback(self.secret_key_fallback, self.secret_key)
        _mailer(self.mailer)
        _session_ttl_hours(self.session_ttl_hours, name="session_ttl_hours (REFCORE_SESSION_TTL_HOURS)")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        """Settings from ``REFCORE_*`` variables, then ``overrides`` (flags) where not ``None``."""
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        if "REFCORE_DATABASE_URL" in env:
            values["database_url"] = env["REFCORE_DATABASE_URL"]
        if "REFCORE_HOST" in env:
            values["host"] = _host(env["REFCORE_HOST"], name="REFCORE_HOST")
        if "REFCORE_PORT" in env:
            values["port"] = _port(env["REFCORE_PORT"], name="REFCORE_PORT")
        if env.get("REFCORE_SECRET_KEY"):
            values["secret_key"] = env["REFCORE_SECRET_KEY"]
        if env.get("REFCORE_SECRET_KEY_FALLBACK"):
            values["secret_key_fallback"] = env["REFCORE_SECRET_KEY_FALLBACK"]
        if "REFCORE_TRUSTED_PROXIES" in env:
            values["trusted_proxies"] = parse_networks(
                env["REFCORE_TRUSTED_PROXIES"], name="REFCORE_TRUSTED_PROXIES"
            )
        if "REFCORE_MIGRATE_ON_START" in env:
            values["migrate_on_start"] = _flag(
                env["REFCORE_MIGRATE_ON_START"], name="REFCORE_MIGRATE_ON_START"
            )
        if env.get("REFCORE_CORS_ALLOW_ORIGIN", "").strip():
            values["cors_allow_origin"] = _allow_origin(
                env["REFCORE_CORS_ALLOW_ORIGIN"], name="REFCORE_CORS_ALLOW_ORIGIN"
            )
        if "WEBHOOK_ALLOW_PRIVATE_NETWORKS" in env:
            values["webhook_allow_private_networks"] = _flag(
                env["WEBHOOK_ALLOW_PRIVATE_NETWORKS"], name="WEBHOOK_ALLOW_PRIVATE_NETWORKS"
            )
        if env.get("REFCORE_WEBHOOK_CA_BUNDLE"):
            values["webhook_ca_bundle"] = _ca_bundle(
                env["REFCORE_WEBHOOK_CA_BUNDLE"], name="REFCORE_WEBHOOK_CA_BUNDLE"
            )
        if env.get("REFCORE_PROCESSOR_CONNECT_URL"):
            values["processor_connect_url"] = _http_url(
                env["REFCORE_PROCESSOR_CONNECT_URL"], name="REFCORE_PROCESSOR_CONNECT_URL"
            )
        if env.get("REFCORE_MAILER"):
            values["mailer"] = _mailer(env["REFCORE_MAILER"])
        if env.get("REFCORE_MAIL_FROM"):
            values["mail_from"] = _mail_from(env["REFCORE_MAIL_FROM"], name="REFCORE_MAIL_FROM")
        if env.get("REFCORE_JOIN_CONFIRM_URL"):
            values["join_confirm_url"] = _confirm_url(
                env["REFCORE_JOIN_CONFIRM_URL"], name="REFCORE_JOIN_CONFIRM_URL"
            )
        for variable, name in (
            ("REFCORE_JOIN_LIMIT_PER_EMAIL", "join_limit_per_email"),
            ("REFCORE_JOIN_LIMIT_PER_IP", "join_limit_per_ip"),
        ):
            if env.get(variable):
                values[name] = _positive(env[variable], name=variable)
        if env.get("REFCORE_DB_POOL_SIZE"):
            values["db_pool_size"] = _positive(env["REFCORE_DB_POOL_SIZE"], name="REFCORE_DB_POOL_SIZE")
        if env.get("REFCORE_DB_MAX_OVERFLOW"):
            values["db_max_overflow"] = _count(env["REFCORE_DB_MAX_OVERFLOW"], name="REFCORE_DB_MAX_OVERFLOW")
        if env.get("REFCORE_WORKER_THREADS"):
            values["worker_threads"] = _positive(env["REFCORE_WORKER_THREADS"], name="REFCORE_WORKER_THREADS")
        if env.get("REFCORE_READ_WORKER_THREADS"):
            values["read_worker_threads"] = _count(
                env["REFCORE_READ_WORKER_THREADS"], name="REFCORE_READ_WORKER_THREADS"
            )
        if env.get("REFCORE_PRUNE_INTERVAL_SECONDS"):
            values["prune_interval_seconds"] = _count(
                env["REFCORE_PRUNE_INTERVAL_SECONDS"], name="REFCORE_PRUNE_INTERVAL_SECONDS"
            )
        if env.get("REFCORE_KEEP_ALIVE_SECONDS"):
            values["keep_alive_seconds"] = _positive(
                env["REFCORE_KEEP_ALIVE_SECONDS"], name="REFCORE_KEEP_ALIVE_SECONDS"
            )
        if env.get("REFCORE_SESSION_TTL_HOURS"):
            values["session_ttl_hours"] = _session_ttl_hours(
                env["REFCORE_SESSION_TTL_HOURS"], name="REFCORE_SESSION_TTL_HOURS"
            )
        settings = cls(**values)
        return settings.with_overrides(**overrides)

    def with_overrides(self, **overrides: Any) -> Settings:
        given = {k: v for k, v in overrides.items() if v is not None}
        if "host" in given:
            given["host"] = _host(given["host"], name="--host")
        if "port" in given:
            given["port"] = _port(given["port"], name="--port")
        if "trusted_proxies" in given and not all(
            isinstance(n, ipaddress.IPv4Network | ipaddress.IPv6Network) for n in given["trusted_proxies"]
        ):
            given["trusted_proxies"] = parse_networks(given["trusted_proxies"], name="--trusted-proxy")
        return evolve(self, **given)
