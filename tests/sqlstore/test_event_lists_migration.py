"""Migration 0017 adds the two indexes a page of ``GET /v1/events`` reads, and its downgrade
removes exactly them (``tests/sqlstore/test_query_plans.py`` shows the pages read them)."""

from __future__ import annotations

from alembic import command
from sqlalchemy import Connection, inspect

from refcore_sqlstore import SqlStore
from refcore_sqlstore.migrate import alembic_config
from tests.sqlstore.raw import engine_of

EVENT_LIST_INDEXES = {
    "ix_events_app_id_livemode_id": ["app_id", "livemode", "id"],
    "ix_events_app_id_livemode_type_id": ["app_id", "livemode", "type", "id"],
}


def _event_indexes(connection: Connection) -> dict[str, list[str]]:
    return {str(i["name"]): list(i["column_names"]) for i in inspect(connection).get_indexes("events")}


def test_migration_0017_adds_the_event_list_indexes_and_its_downgrade_removes_them(
    sql_store: SqlStore,
) -> None:
    with engine_of(sql_store).begin() as connection:
        at_head = _event_indexes(connection)
        command.downgrade(alembic_config(connection), "0016_links_of_an_affiliate")
        before = _event_indexes(connection)
        command.upgrade(alembic_config(connection), "head")
        again = _event_indexes(connection)
    assert EVENT_LIST_INDEXES.items() <= at_head.items()
    assert before == {name: cols for name, cols in at_head.items() if name not in EVENT_LIST_INDEXES}
    assert again == at_head
