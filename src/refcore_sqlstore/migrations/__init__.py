"""Alembic migrations of the refcore schema (run by ``SqlStore.migrate()``)."""
