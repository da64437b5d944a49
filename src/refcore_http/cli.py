"""The ``refcore`` command: ``serve``, ``session``, ``migrate`` and ``reseal-secrets``.

Every command reads the same settings (``REFCORE_*`` environment variables, overridden by
flags), so ``refcore session`` mints a token in the very database ``refcore serve`` uses.
Errors an operator can fix (a bad setting, an unreachable database, an invalid e-mail) print one
line on stderr and exit with status 2; nothing secret is printed except the token asked for.
``refcore session --end-all`` ends a user's sessions instead; an address no user has exits
with status 1 (nothing was ended: a mistyped address must not pass for a done offboarding).
``refcore reseal-secrets`` moves every stored secret to ``REFCORE_SECRET_KEY`` (the last step but
one of changing it, docs/deployment.md); a secret that opens under neither key makes it exit 1
once it has done the others.
"""

from __future__ import annotations

import argparse
import gc
import sys
from collections.abc import Sequence

import refcore
from refcore.errors import RefcoreError
from refcore.representation import timestamp
from refcore.services.tenancy import IssuedSession, end_user_sessions, issue_session
from refcore_http.logs import access_log_shown, logging_config, redact_credentials
from refcore_http.settings import DEFAULT_DATABASE_URL, Settings, SettingsError
from refcore_http.store import MEMORY_URL, OpenStore, StoreUnavailable, open_store

_URL_HELP = (
    f"database URL (env REFCORE_DATABASE_URL; default {DEFAULT_DATABASE_URL}): "
    f"sqlite:///path, postgresql://user@host/db, or {MEMORY_URL} (nothing persists)"
)


class CommandError(Exception):
    """An error the operator can fix; printed as one line, exit status 2."""


def _settings(args: argparse.Namespace) -> Settings:
    return Settings.from_env(
        database_url=args.database_url,
        host=getattr(args, "host", None),
        port=getattr(args, "port", None),
        trusted_proxies=getattr(args, "trusted_proxy", None),
        migrate_on_start=False if getattr(args, "no_migrate", False) else None,
    )


def _open(settings: Settings) -> OpenStore:
    return open_store(
        settings.database_url, pool_size=settings.db_pool_size, max_overflow=settings.db_max_overflow
    )


#: Allocations of tracked objects between two collections of the youngest generation (700 by
#: default). Each collection walks every young object still alive, and under load that is
#: mostly the requests in flight, walked again and again: 2.8 % of a capture's instructions went
#: to the collector, and this threshold took about 1.5 % off (``bench/history.md``,
#: twenty-first session). Reference counting frees everything else at once; only garbage in
#: cycles waits longer, at most this many objects' worth.
YOUNG_GENERATION_THRESHOLD = 10_000


def prepare_garbage_collector() -> None:
    """Keep what start-up built (modules, the app, the store's tables and mappers) out of the
    cyclic garbage collector's full passes, which otherwise walk all of it again and again while
    requests wait: the slowest 1 % of answers halved (``docs/performance.md``). Nothing is
    kept alive that was not already. Then collect the young generation less often (see
    :data:`YOUNG_GENERATION_THRESHOLD`)."""
    gc.collect()
    gc.freeze()
    _young, *older = gc.get_threshold()
    gc.set_threshold(YOUNG_GENERATION_THRESHOLD, *older)


def serve(args: argparse.Namespace) -> int:
    import uvicorn

    from refcore_http.app import create_app
    from refcore_http.http_protocol import GuardedHttpToolsProtocol
    from refcore_http.webhooks.keys import require_secret_key

    settings = _settings(args)
    # Before the store is opened: a start that will be refused must not migrate the database
    # (in a fleet, a shared one) or issue a session first (probe M).
    require_secret_key(settings)
    store = _open(settings)
    try:
        if settings.migrate_on_start:
            store.migrate()
        elif store.file_missing():
            print(
                f"refcore: {store.description} names no existing database file; run `refcore migrate` "
                "first to create it (or serve without --no-migrate)",
                file=sys.stderr,
            )
            return 2
        elif store.schema_is_behind():
            # Otherwise it would answer GET /v1 and fail every other request.
            print(
                f"refcore: {store.description} lacks migrations this release needs; "
                "run `refcore migrate` first (or serve without --no-migrate)",
                file=sys.stderr,
            )
            return 2
        if args.print_session:
            issued = issue_session(store.runtime, args.print_session)
            print(issued.token, flush=True)
            _say_when_it_expires(issued, settings)
        app = create_app(store.runtime, settings, outbox=store.outbox, prune=store.prune)
        prepare_garbage_collector()
        address = f"http://{settings.host}:{settings.port}"
        print(f"refcore: serving {store.description} on {address}", file=sys.stderr)
        # Before uvicorn configures its loggers, which keeps their filters: no access line (nor
        # any other record of a request's path and query) shows a credential a client sent.
        redact_credentials()
        # Forwarded headers are read by refcore itself, from REFCORE_TRUSTED_PROXIES only.
        uvicorn.run(
            app,
            host=settings.host,
            port=settings.port,
            http=GuardedHttpToolsProtocol,
            proxy_headers=False,
            server_header=False,
            timeout_keep_alive=settings.keep_alive_seconds,
            log_level=args.log_level,
            log_config=logging_config(args.log_level),
            access_log=access_log_shown(args.log_level),
        )
    finally:
        store.dispose()
    return 0


def session(args: argparse.Namespace) -> int:
    """Print a new session's token on stdout (one line, nothing else), or with ``--end-all``
    end every session of the user and say how many (exit 1 when no user has the address)."""
    settings = _settings(args)
    store = _open(settings)
    try:
        if not store.persistent:
            raise CommandError(
                f"{MEMORY_URL} keeps nothing after this command ends; "
                "use `refcore serve --print-session EMAIL` or create the session through the library"
            )
        _migrate_saying_so(store)
        if args.end_all:
            return _end_all(store, args.email)
        issued = issue_session(store.runtime, args.email)
    finally:
        store.dispose()
    print(issued.token)
    _say_when_it_expires(issued, settings)
    return 0


def _end_all(store: OpenStore, email: str) -> int:
    """``refcore session --email X --end-all``: one line on stdout, the count ended (exit 0,
    also for a user with none left); an address no user has is said on stderr, exit 1."""
    address = email.strip().lower()  # as users are stored; an invalid address is refused below (exit 2)
    ended = end_user_sessions(store.runtime, email)
    if ended is None:
        print(f"refcore: no user has the e-mail address {address}; no session ended", file=sys.stderr)
        return 1
    print(f"ended {ended} session{'' if ended == 1 else 's'} of {address}")
    return 0


def _say_when_it_expires(issued: IssuedSession, settings: Settings) -> None:
    """On stderr, so that stdout stays the token alone: when the new session stops working under
    this command's ``REFCORE_SESSION_TTL_HOURS``. The server checks with its own setting, so
    both should read the same environment."""
    expires = timestamp(issued.session.expires_at(settings.session_lifetime))
    print(
        f"refcore: the session expires at {expires} (REFCORE_SESSION_TTL_HOURS={settings.session_ttl_hours})",
        file=sys.stderr,
    )


def migrate(args: argparse.Namespace) -> int:
    settings = _settings(args)
    store = _open(settings)
    try:
        _migrate_saying_so(store)
    finally:
        store.dispose()
    print(f"refcore: {store.description} is up to date", file=sys.stderr)
    return 0


def reseal_secrets(args: argparse.Namespace) -> int:
    """Seal every stored secret anew under ``REFCORE_SECRET_KEY`` (those the fallback opens) and
    print one line of counts; exit 1 when a secret opens under neither key, naming the records
    on stderr (by ID: no key, secret or ciphertext is ever printed)."""
    from refcore.services.secret_resealing import reseal_secrets as reseal
    from refcore_http.processor.keys import processor_keys
    from refcore_http.webhooks.keys import DEVELOPMENT_SECRET_KEY, secret_box

    settings = _settings(args)
    if settings.secret_key is None:
        # Sealing under the public development key would protect nothing, and on a database
        # the servers share it would undo the fleet's key.
        raise CommandError(
            "REFCORE_SECRET_KEY is required: reseal-secrets seals every stored secret under it "
            "(set REFCORE_SECRET_KEY_FALLBACK to the key they were sealed with)"
        )
    if settings.secret_key == DEVELOPMENT_SECRET_KEY:
        # The same, named outright: the two variables swapped while leaving the development key.
        raise CommandError(
            "REFCORE_SECRET_KEY is the public development key, which protects nothing: set it to "
            "your own key (the development key may be REFCORE_SECRET_KEY_FALLBACK, to leave it)"
        )
    store = _open(settings)
    try:
        if not store.persistent:
            raise CommandError(f"{MEMORY_URL} keeps nothing to reseal; name the servers' database")
        if store.file_missing():
            raise CommandError(
                f"{store.description} names no existing database file; name the servers' database"
            )
        if store.schema_is_behind():
            raise CommandError(
                f"{store.description} lacks migrations this release needs; run `refcore migrate` first"
            )
        report = reseal(store.sealed_secrets, secret_box(settings), processor_keys(settings))
    finally:
        store.dispose()
    keys = (
        "REFCORE_SECRET_KEY"
        if settings.secret_key_fallback is None
        else "either REFCORE_SECRET_KEY or REFCORE_SECRET_KEY_FALLBACK"
    )
    for record in report.unopenable:
        print(
            f"refcore: {record.kind.value.replace('_', ' ')} {record.id}: "
            f"its secret does not open with {keys}",
            file=sys.stderr,
        )
    if report.changed_meanwhile:
        print(
            f"refcore: {report.changed_meanwhile} secret(s) changed while this ran (an API call rotated or "
            "removed them, or another reseal-secrets moved them) and were left as stored; run "
            "reseal-secrets again to check them",
            file=sys.stderr,
        )
    print(report.summary())
    return 1 if report.unopenable else 0


def _migrate_saying_so(store: OpenStore) -> None:
    """Apply pending migrations, saying so on stderr first when there are any: on a big ledger
    some take a while (docs/deployment.md), and ``refcore session`` applies them too."""
    if store.schema_is_behind():
        print(f"refcore: migrating {store.description} to this release's schema", file=sys.stderr)
    store.migrate()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="refcore",
        description="Self-hosted referral tracking and affiliate commissions.",
    )
    parser.add_argument("--version", action="version", version=f"refcore {refcore.__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    serve_parser = commands.add_parser(
        "serve", help="run the HTTP API", description="Run the HTTP API under /v1 with uvicorn."
    )
    serve_parser.add_argument("--host", help="interface to listen on (env REFCORE_HOST; default 127.0.0.1)")
    # Read as text and checked by Settings, as REFCORE_PORT is: argparse's int() took "٣٠٠٠".
    serve_parser.add_argument("--port", help="port to listen on (env REFCORE_PORT; default 8000)")
    serve_parser.add_argument("--database-url", help=_URL_HELP)
    serve_parser.add_argument(
        "--no-migrate", action="store_true", help="do not apply database migrations on start"
    )
    serve_parser.add_argument(
        "--trusted-proxy",
        action="append",
        metavar="CIDR",
        help="reverse proxies whose X-Forwarded-For is believed, comma-separated (repeatable; env "
        "REFCORE_TRUSTED_PROXIES)",
    )
    serve_parser.add_argument(
        "--print-session",
        metavar="EMAIL",
        help="create a session for EMAIL on start and print its token (for memory://)",
    )
    serve_parser.add_argument(
        "--log-level", default="info", choices=("critical", "error", "warning", "info", "debug")
    )
    serve_parser.set_defaults(run=serve)

    session_parser = commands.add_parser(
        "session",
        help="create a dashboard session and print its token, or end a user's sessions",
        description=(
            "Create the user if missing and a session; print one line, the token sess_…. "
            "It expires REFCORE_SESSION_TTL_HOURS (default 720) after it was made. "
            "With --end-all, end every session of the user instead and print how many."
        ),
    )
    session_parser.add_argument("--email", required=True, help="the user's e-mail address")
    session_parser.add_argument(
        "--end-all",
        action="store_true",
        help=(
            "end every session of this user (all their tokens stop working) and create none; "
            "exit status 1 when no user has this address"
        ),
    )
    session_parser.add_argument("--database-url", help=_URL_HELP)
    session_parser.set_defaults(run=session)

    migrate_parser = commands.add_parser(
        "migrate",
        help="apply database migrations",
        description="Bring the database schema up to date (idempotent).",
    )
    migrate_parser.add_argument("--database-url", help=_URL_HELP)
    migrate_parser.set_defaults(run=migrate)

    reseal_parser = commands.add_parser(
        "reseal-secrets",
        help="seal every stored secret anew under REFCORE_SECRET_KEY",
        description=(
            "Seal every webhook endpoint and processor connection secret anew under "
            "REFCORE_SECRET_KEY: those that open under REFCORE_SECRET_KEY_FALLBACK are rewritten, "
            "each only if no API call changed it meanwhile; those already under the key are left. "
            "Prints one line of counts. Exit status 1 when a secret opens under neither key (its "
            "record is named on stderr), after the others are done. Safe to run again."
        ),
    )
    reseal_parser.add_argument("--database-url", help=_URL_HELP)
    reseal_parser.set_defaults(run=reseal_secrets)
    return parser


def _why(error: RefcoreError) -> str:
    """``: <why>`` when ``error`` is a database that could not be reached (else nothing), so that
    an operator tells a typo in the URL from an outage without reading a traceback."""
    from refcore_sqlstore.errors import connection_failure

    reason = connection_failure(error.__cause__)
    return "" if reason is None else f": {reason}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        result: int = args.run(args)
    except (CommandError, SettingsError, StoreUnavailable) as exc:
        print(f"refcore: {exc}", file=sys.stderr)
        return 2
    except RefcoreError as exc:
        print(f"refcore: {exc.message}{_why(exc)}", file=sys.stderr)
        return 2
    return result
