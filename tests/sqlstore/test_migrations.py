"""Migrations: from an empty database to head, idempotent, concurrent-safe, and in agreement with
the tables the code uses (Alembic's autogenerate comparison finds nothing to add or drop)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine, insert, inspect, select, text
from sqlalchemy.exc import IntegrityError

from refcore_sqlstore import SqlStore
from refcore_sqlstore.engine import create_store_engine, normalise_url
from refcore_sqlstore.migrate import alembic_config
from refcore_sqlstore.tables import customers, metadata

HEAD = ScriptDirectory.from_config(alembic_config()).get_current_head()


def _engine(url: str) -> Engine:
    return create_store_engine(normalise_url(url))


def _differences(url: str) -> list[Any]:
    engine = _engine(url)
    try:
        with engine.connect() as connection:
            context = MigrationContext.configure(connection, opts={"compare_type": True})
            return list(compare_metadata(context, metadata))
    finally:
        engine.dispose()


@contextmanager
def _transaction(url: str) -> Iterator[Connection]:
    """A connection of a short-lived engine of its own, in a transaction committed at the end."""
    engine = _engine(url)
    try:
        with engine.begin() as connection:
            yield connection
    finally:
        engine.dispose()


def _versions(url: str) -> list[str]:
    engine = _engine(url)
    try:
        with engine.connect() as connection:
            return [row[0] for row in connection.execute(text("SELECT version_num FROM alembic_version"))]
    finally:
        engine.dispose()


def _tables(url: str) -> set[str]:
    engine = _engine(url)
    try:
        return set(inspect(engine).get_table_names())
    finally:
        engine.dispose()


def test_migrate_builds_every_table_from_an_empty_database(empty_database_url: str) -> None:
    store = SqlStore(empty_database_url)
    try:
        assert not store.schema_is_current()
        store.migrate()
        assert store.schema_is_current()
    finally:
        store.dispose()
    assert _tables(empty_database_url) == set(metadata.tables) | {"alembic_version"}
    assert _versions(empty_database_url) == [HEAD]


def test_migrate_again_changes_nothing(empty_database_url: str) -> None:
    store = SqlStore(empty_database_url)
    try:
        store.migrate()
        store.migrate()
    finally:
        store.dispose()
    assert _versions(empty_database_url) == [HEAD]
    assert _differences(empty_database_url) == []


def test_models_and_migrations_agree(empty_database_url: str) -> None:
    SqlStore(empty_database_url).migrate()
    assert _differences(empty_database_url) == []


def test_the_agreement_check_notices_an_index_the_migrations_lack(empty_database_url: str) -> None:
    """The comparison above is not vacuous: drop one index and it reports exactly that."""
    SqlStore(empty_database_url).migrate()
    engine = _engine(empty_database_url)
    try:
        with engine.begin() as connection:
            connection.execute(text("DROP INDEX ix_payments_app_id_mode_id"))
    finally:
        engine.dispose()
    differences = _differences(empty_database_url)
    assert [(d[0], d[1].name) for d in differences] == [("add_index", "ix_payments_app_id_mode_id")]


def test_downgrade_to_base_removes_every_table(empty_database_url: str) -> None:
    SqlStore(empty_database_url).migrate()
    with _transaction(empty_database_url) as connection:
        command.downgrade(alembic_config(connection), "base")
    assert _tables(empty_database_url) == {"alembic_version"}


_MIGRATE = "import sys; from refcore_sqlstore import SqlStore; SqlStore(sys.argv[1]).migrate()"


def test_several_processes_migrating_at_once_all_succeed(empty_database_url: str) -> None:
    """Servers starting together each call migrate(): the lock lets one upgrade, the rest find head."""
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", _MIGRATE, empty_database_url],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    outcomes = [(p.wait(timeout=120), p.stderr.read() if p.stderr else "") for p in processes]
    for process in processes:
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()
    assert [code for code, _ in outcomes] == [0, 0, 0, 0], [err for _, err in outcomes]
    assert _versions(empty_database_url) == [HEAD]
    assert _differences(empty_database_url) == []


def test_a_database_is_behind_until_every_shipped_migration_is_applied(empty_database_url: str) -> None:
    """``refcore serve --no-migrate`` refuses a database that is behind; one migrated by a newer
    release (a revision this one does not know) is not behind (docs/deployment.md)."""
    store = SqlStore(empty_database_url)
    try:
        assert store.schema_is_behind()  # empty
        with _transaction(empty_database_url) as connection:
            command.upgrade(alembic_config(connection), "0006_bucket_pruning")
        assert store.schema_is_behind()
        store.migrate()
        assert not store.schema_is_behind()
        with _transaction(empty_database_url) as connection:
            connection.execute(text("UPDATE alembic_version SET version_num = '9999_newer_release'"))
        assert not store.schema_is_behind()
        assert not store.schema_is_current()
    finally:
        store.dispose()


@contextmanager
def _customers_at(url: str, revision: str, emails: dict[str, str | None]) -> Iterator[Connection]:
    """A connection to a database at ``revision`` holding customers with these addresses (by ID),
    in one transaction rolled back at the end (DDL is transactional on both databases), so the
    made-up App of the rows never meets the deferred foreign keys."""
    engine = _engine(url)
    try:
        with engine.connect() as connection:
            transaction = connection.begin()
            command.upgrade(alembic_config(connection), revision)
            for customer_id, email in emails.items():
                connection.execute(
                    insert(customers).values(
                        id=customer_id,
                        app_id="app_made_up",
                        mode="live",
                        created_at=datetime(2026, 1, 1, tzinfo=UTC),
                        email=email,
                    )
                )
            yield connection
            transaction.rollback()
    finally:
        engine.dispose()


def _stored_emails(connection: Connection) -> dict[str, str | None]:
    return {row.id: row.email for row in connection.execute(select(customers.c.id, customers.c.email))}


def test_migration_0008_lower_cases_the_customers_e_mail_addresses(empty_database_url: str) -> None:
    """Identify keeps addresses lower-case from 0008 on and finds an e-mail-only customer by its
    address: one stored as ``Case@X.example`` before must be found as ``case@x.example`` after."""
    rows = {"rcus_upper": "Case@X.Example", "rcus_lower": "low@x.example", "rcus_none": None}
    with _customers_at(empty_database_url, "0007_money_sums", rows) as connection:
        command.upgrade(alembic_config(connection), "0008_customer_emails")
        stored = _stored_emails(connection)
        assert stored == {
            "rcus_upper": "case@x.example",
            "rcus_lower": "low@x.example",
            "rcus_none": None,
        }
        command.downgrade(alembic_config(connection), "0007_money_sums")  # keeps them lower-case
        assert _stored_emails(connection) == stored


def test_migration_0012_lower_cases_the_addresses_whose_capitals_lie_beyond_ascii(
    empty_database_url: str,
) -> None:
    """0008 chose its rows with the database's ``lower``, which on SQLite folds ASCII only:
    ``Élodie@example.com`` stayed as it was, and identify and the e-mail filter, which look for
    ``élodie@example.com``, no longer found it (found by a probe that upgraded a database). 0012
    writes Python's ``str.lower`` of every address with a character beyond ASCII."""
    rows: dict[str, str | None] = {
        "rcus_accent": "Élodie@Example.com",
        "rcus_lower_accent": "élodie@example.com",
        "rcus_sharp_s": "straße@example.com",  # no capital: unchanged
        "rcus_ascii": "plain@x.example",
        "rcus_none": None,
    }
    with _customers_at(empty_database_url, "0011_payout_request_links", rows) as connection:
        command.upgrade(alembic_config(connection), "0012_customer_email_letters")
        assert _stored_emails(connection) == {**rows, "rcus_accent": "élodie@example.com"}


#: ``josé@x.example`` decomposed (``e`` and U+0301) and composed (``é``).
_DECOMPOSED = "jose\u0301@x.example"
_COMPOSED = "jos\u00e9@x.example"


def test_migration_0019_composes_every_kept_address_unless_the_composed_one_is_taken(
    empty_database_url: str,
) -> None:
    """An upgrade probe: once lookups composed addresses (NFC), one stored decomposed was found
    by no spelling, so ``refcore session --end-all`` ended another user's session and reported
    success, identify made a second customer, and a second affiliate joined one program. 0019
    composes them; where the composed address is a record of its own already (a user, an
    affiliate of that program), the decomposed one is left for the operator."""
    customers_before = {
        "rcus_decomposed": _DECOMPOSED.upper(),
        "rcus_plain": "plain@x.example",
        "rcus_none": None,
    }
    with _customers_at(empty_database_url, "0018_reversals_never_held", customers_before) as connection:
        _two_spellings_of_one_person(connection, old=_DECOMPOSED, new=_COMPOSED, other="ze\u0301@x.example")

        command.upgrade(alembic_config(connection), "0019_composed_email_addresses")

        users = dict(connection.execute(text("SELECT id, email FROM users")).all())
        assert users == {"usr_old": _DECOMPOSED, "usr_new": _COMPOSED, "usr_other": "z\u00e9@x.example"}
        affiliates = dict(connection.execute(text("SELECT id, email FROM program_affiliates")).all())
        assert affiliates == {"aff_1old": _DECOMPOSED, "aff_1new": _COMPOSED, "aff_2old": _COMPOSED}
        assert _stored_emails(connection) == {**customers_before, "rcus_decomposed": _COMPOSED}


#: Delivery records before 0014, by ID: their event's type and ``livemode``.
_DELIVERED = {
    "whdl_live": ("transaction.created", True),
    "whdl_test": ("transaction.created", False),
    "whdl_ping": ("webhook.test", False),
}
#: The App the deliveries belong to, with its organization, in the columns they had at 0013.
_INSERT_APP = (
    text("INSERT INTO organizations (id, name, created_at) VALUES ('org_x', 'X', :at)"),
    text(
        "INSERT INTO apps (id, organization_id, name, created_at, processor_connected_test,"
        " processor_connected_live) VALUES ('app_x', 'org_x', 'X', :at, false, false)"
    ),
)
_INSERT_EVENT = text(
    "INSERT INTO events (id, app_id, type, livemode, created_at, data)"
    " VALUES (:event_id, 'app_x', :type, :livemode, :at, '{}')"
)
_INSERT_DELIVERY = text(
    "INSERT INTO webhook_deliveries"
    " (id, app_id, event_id, event_type, status, duration_ms, created_at, url)"
    " VALUES (:id, 'app_x', :event_id, :type, 'succeeded', 1, :at, 'https://hooks.example.com/in')"
)
_AT = datetime(2026, 1, 1, tzinfo=UTC)


def _insert_delivery(connection: Connection, delivery_id: str, event_type: str, livemode: bool) -> None:
    """A delivery record and its event, in the columns they had before 0014."""
    values = {
        "id": delivery_id,
        "event_id": delivery_id.replace("whdl", "whev"),
        "type": event_type,
        "livemode": livemode,
        "at": _AT,
    }
    connection.execute(_INSERT_EVENT, values)
    connection.execute(_INSERT_DELIVERY, values)


def _listed(connection: Connection) -> dict[str, tuple[bool, bool]]:
    rows = connection.execute(text("SELECT id, listed_in_test, listed_in_live FROM webhook_deliveries"))
    return {row.id: (bool(row.listed_in_test), bool(row.listed_in_live)) for row in rows}


def test_migration_0014_lists_each_earlier_delivery_in_its_events_mode(empty_database_url: str) -> None:
    """Probe J: a Test key listed the deliveries of Live events. From 0014 each delivery says
    which mode's history lists it; those recorded before take their event's ``livemode``, and
    the test ping is listed in both."""
    with _transaction(empty_database_url) as connection:
        command.upgrade(alembic_config(connection), "0013_payout_batch_cancel")
    with _transaction(empty_database_url) as connection:  # committed: PostgreSQL alters no table
        for statement in _INSERT_APP:  # with foreign key checks still pending on it
            connection.execute(statement, {"at": _AT})
        for delivery_id, (event_type, livemode) in _DELIVERED.items():
            _insert_delivery(connection, delivery_id, event_type, livemode)
    with _transaction(empty_database_url) as connection:
        command.upgrade(alembic_config(connection), "0014_delivery_modes")
        assert _listed(connection) == {
            "whdl_live": (False, True),
            "whdl_test": (True, False),
            "whdl_ping": (True, True),
        }


_INSERT_CONNECTION = text(
    "INSERT INTO processor_connections (id, app_id, mode, account_id, webhook_secret_ciphertext,"
    " install_nonce, created_at, connected_at, active_app_mode, active_account_mode)"
    " VALUES (:id, :app, 'live', 'acct_1', 'sealed', :id, :at, :at, :app_mode, :account_mode)"
)


def _connection(connection_id: str, app_id: str) -> dict[str, object]:
    """The values of an active Live connection of ``app_id`` to ``acct_1``."""
    return {
        "id": connection_id,
        "app": app_id,
        "at": _AT,
        "app_mode": f"{app_id}:live",
        "account_mode": "acct_1:live",
    }


def test_migration_0020_lets_a_second_app_connect_an_account_and_keeps_one_connection_per_app(
    empty_database_url: str,
) -> None:
    """Probe AG: refusing a second App's claim of an account let anyone claim a tenant's account
    first and lock its owner out. From 0020 the account's key is an index; the App's stays unique."""
    with _transaction(empty_database_url) as connection:
        command.upgrade(alembic_config(connection), "0019_composed_email_addresses")
        for statement in _INSERT_APP:
            connection.execute(statement, {"at": _AT})
        connection.execute(
            text(
                "INSERT INTO apps (id, organization_id, name, created_at, processor_connected_test,"
                " processor_connected_live) VALUES ('app_y', 'org_x', 'Y', :at, false, true)"
            ),
            {"at": _AT},
        )
        connection.execute(_INSERT_CONNECTION, _connection("pcn_x", "app_x"))
    with _transaction(empty_database_url) as connection:
        command.upgrade(alembic_config(connection), "0020_shared_processor_accounts")
    with _transaction(empty_database_url) as connection:
        connection.execute(_INSERT_CONNECTION, _connection("pcn_y", "app_y"))
        rows = connection.execute(
            text("SELECT id, app_id, active_account_mode FROM processor_connections ORDER BY id")
        ).all()
        assert [tuple(row) for row in rows] == [
            ("pcn_x", "app_x", "acct_1:live"),
            ("pcn_y", "app_y", "acct_1:live"),
        ]
    try:
        with _transaction(empty_database_url) as connection:
            connection.execute(_INSERT_CONNECTION, _connection("pcn_x2", "app_x"))
    except IntegrityError as refused:
        assert "active_app_mode" in str(refused)
    else:
        raise AssertionError("a second active connection of one App and mode was stored")
    assert _differences(empty_database_url) == []


def test_migration_0021_writes_an_ascii_form_domain_in_unicode_unless_that_address_is_taken(
    empty_database_url: str,
) -> None:
    """Probe AI: ``me@xn--bcher-kva.example`` and ``me@bücher.example`` were two affiliates of one
    program. Lookups convert the domain to Unicode from 0021 on, which converts what is stored;
    where the Unicode form already has a record under a unique key, the row is left as it is."""
    unicode_form, ascii_form = "me@b\u00fccher.example", "me@xn--bcher-kva.example"
    customers_before = {
        "rcus_ascii": ascii_form,
        "rcus_bad_label": "me@xn--zz.example",  # IDNA 2008 cannot decode it: left
        "rcus_plain": "plain@x.example",
        "rcus_none": None,
    }
    with _customers_at(empty_database_url, "0020_shared_processor_accounts", customers_before) as connection:
        _two_spellings_of_one_person(
            connection, old=ascii_form, new=unicode_form, other="you@xn--strae-oqa.de"
        )

        command.upgrade(alembic_config(connection), "0021_unicode_address_domains")

        users = dict(connection.execute(text("SELECT id, email FROM users")).all())
        assert users == {"usr_old": ascii_form, "usr_new": unicode_form, "usr_other": "you@stra\u00dfe.de"}
        affiliates = dict(connection.execute(text("SELECT id, email FROM program_affiliates")).all())
        assert affiliates == {"aff_1old": ascii_form, "aff_1new": unicode_form, "aff_2old": unicode_form}
        assert _stored_emails(connection) == {**customers_before, "rcus_ascii": unicode_form}


def _two_spellings_of_one_person(connection: Connection, *, old: str, new: str, other: str) -> None:
    """An App with two programs; a user under each spelling of one address (``old``, the form a
    migration rewrites, and ``new``, its result) and one under ``other``; in the first program an
    affiliate under each spelling, in the second one under ``old`` only."""
    values = {"at": _AT, "old": old, "new": new, "other": other}
    for statement in (
        *_INSERT_APP,
        "INSERT INTO users (id, email, created_at) VALUES ('usr_old', :old, :at), ('usr_new', :new, :at),"
        " ('usr_other', :other, :at)",
        "INSERT INTO programs (id, app_id, name, slug, currency, commission_type, commission_value,"
        " attribution_window_days, hold_days, minimum_payout, auto_approve, promotion_code_fallback,"
        " status, created_at) VALUES ('prg_1', 'app_x', 'P', 'p1', 'usd', 'percent', 2000, 60, 30, 0,"
        " false, false, 'active', :at), ('prg_2', 'app_x', 'Q', 'p2', 'usd', 'percent', 2000, 60, 30,"
        " 0, false, false, 'active', :at)",
        "INSERT INTO program_affiliates (id, app_id, program_id, email, name, status, created_at) VALUES"
        " ('aff_1old', 'app_x', 'prg_1', :old, 'J', 'active', :at),"
        " ('aff_1new', 'app_x', 'prg_1', :new, 'J', 'active', :at),"
        " ('aff_2old', 'app_x', 'prg_2', :old, 'J', 'active', :at)",
    ):
        connection.execute(text(statement) if isinstance(statement, str) else statement, values)
