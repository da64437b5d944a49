"""Where ``refcore serve`` sends refcore's own log records.

uvicorn configures only its own loggers; without this, records of ``refcore`` (the webhook
dispatcher's delivery outcomes, ``refcore.webhooks``) and of ``refcore_http`` (unexpected errors)
reached stderr only through Python's last-resort handler, and only from ``WARNING`` up, so an
operator never saw a delivery's outcome at ``--log-level info``. They now go to stderr in
uvicorn's format, at the level of ``--log-level``, beside uvicorn's own lines.
"""

from __future__ import annotations

import copy
import logging
from typing import Any

#: The loggers refcore writes to; their children (``refcore.webhooks``) follow them.
REFCORE_LOGGERS = ("refcore", "refcore_http")


def logging_config(level: str) -> dict[str, Any]:
    """uvicorn's own logging configuration, with refcore's loggers on its ``default`` handler."""
    from uvicorn.config import LOGGING_CONFIG

    config: dict[str, Any] = copy.deepcopy(LOGGING_CONFIG)
    for name in REFCORE_LOGGERS:
        config["loggers"][name] = {"handlers": ["default"], "level": level.upper(), "propagate": False}
    return config


def access_log_shown(level: str) -> bool:
    """Whether uvicorn's access lines (``INFO``) pass ``level``: ``uvicorn.run``'s ``access_log``.

    uvicorn formats an access line's arguments (the client's address, the path quoted again)
    for every response whenever its access logger has a handler, and only then lets the level
    drop the line: at ``--log-level warning`` that was work for nothing on every request."""
    return logging.getLevelNamesMapping()[level.upper()] <= logging.INFO
