"""Migration 0017 adds the two indexes a page of ``GET /v1/events`` reads in place of the
``(app_id, id)`` one nothing read, and its downgrade puts back exactly what was there
(``tests/sqlstore/test_query_plans.py`` shows the pages read them).

It runs on a database of its own: schema changes in the session's shared database make
PostgreSQL plan the outbox's statements again under whatever statistics earlier tests left.
"""

from __future__ import annotations

from alembic import command
from sqlalchemy import Connection, inspect

from refcore_sqlstore import SqlStore
from refcore_sqlstore.engine import create_store_engine, normalise_url
from refcore_sqlstore.migrate import alembic_config

EVENT_LIST_INDEXES = {
    "ix_events_app_id_livemode_id": ["app_id", "livemode", "id"],
    "ix_events_app_id_livemode_type_id": ["app_id", "livemode", "type", "id"],
}


def _event_indexes(connection: Connection) -> dict[str, list[str]]:
    return {
        str(i["name"]): [str(c) for c in i["column_names"]] for i in inspect(connection).get_indexes("events")
    }


def test_migration_0017_adds_the_event_list_indexes_and_its_downgrade_removes_them(
    empty_database_url: str,
) -> None:
    SqlStore(empty_database_url).migrate()
    engine = create_store_engine(normalise_url(empty_database_url))
    try:
        with engine.begin() as connection:
            at_head = _event_indexes(connection)
            command.downgrade(alembic_config(connection), "0016_links_of_an_affiliate")
            before = _event_indexes(connection)
            command.upgrade(alembic_config(connection), "head")
            again = _event_indexes(connection)
    finally:
        engine.dispose()
    assert EVENT_LIST_INDEXES.items() <= at_head.items()
    assert "ix_events_app_id_id" not in at_head  # replaced: no statement read it
    assert before == {name: cols for name, cols in at_head.items() if name not in EVENT_LIST_INDEXES} | {
        "ix_events_app_id_id": ["app_id", "id"]
    }
    assert again == at_head
