"""refcore on the wire: the Starlette JSON API under ``/v1`` and the ``refcore`` command.

``create_app(runtime, settings)`` builds the application over any store's runtime;
``refcore_http.store.open_store(url)`` opens the store a URL names; ``refcore_http.cli.main`` is
the command. See docs/api.md.
"""
