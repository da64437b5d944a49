"""One module per area of the API, each exposing ``ROUTES: tuple[Endpoint, ...]``."""
