"""The benchmark harness (issue 9): one command measures refcore against the ceiling of its stack.

``.venv/bin/python -m bench`` starts a bare Starlette server (the ceiling) and ``refcore serve`` on
SQLite and on PostgreSQL, drives each from ``wrk`` in a separate process, seeds 10 thousand to
1 million commission entries for the scaling reads, and writes ``docs/performance.md``.
Nothing here is imported by refcore itself.
"""
