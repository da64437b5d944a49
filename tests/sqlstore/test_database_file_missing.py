"""``SqlStore.database_file_missing``: asked before a command connects, since SQLite makes a
missing file at the first connection."""

from __future__ import annotations

from pathlib import Path

from refcore_sqlstore import SqlStore


def _missing(url: str) -> bool:
    store = SqlStore(url)
    try:
        return store.database_file_missing()
    finally:
        store.dispose()


def test_a_path_with_no_file_is_missing_and_asking_makes_none(tmp_path: Path) -> None:
    path = tmp_path / "absent.db"
    assert _missing(f"sqlite:///{path}")
    assert not path.exists()


def test_an_existing_file_is_not_missing(tmp_path: Path) -> None:
    path = tmp_path / "present.db"
    path.touch()
    assert not _missing(f"sqlite:///{path}")


def test_an_sqlite_uri_and_postgresql_are_left_to_the_database(tmp_path: Path) -> None:
    assert not _missing(f"sqlite:///file:{tmp_path / 'absent.db'}?uri=true")
    assert not _missing("postgresql://nobody@127.0.0.1:1/none")
