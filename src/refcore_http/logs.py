"""Where ``refcore serve`` sends refcore's own log records.

uvicorn configures only its own loggers; without this, records of ``refcore`` (the webhook
dispatcher's delivery outcomes, ``refcore.webhooks``) and of ``refcore_http`` (unexpected errors)
reached stderr only through Python's last-resort handler, and only from ``WARNING`` up, so an
operator never saw a delivery's outcome at ``--log-level info``. They now go to stderr in
uvicorn's format, at the level of ``--log-level``, beside uvicorn's own lines.

No line shows a credential (interface 5.3). uvicorn's access line holds the request's path and
query as sent, so a client that puts its key in the query (``GET /v1/clicks?api_key=key_app_…``,
answered ``401``) would have it written there: :func:`redact_credentials` puts a filter on the
loggers such lines go to that replaces every credential, and the value of every query parameter
named like a secret, with ``[redacted]`` before any handler formats the line; it also writes
the record's traceback, where an exception's message may quote a credential, redacted.
"""

from __future__ import annotations

import copy
import logging
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote, unquote_plus

from refcore.credentials import CREDENTIAL_WORDS, REDACTED, holds_credential

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


#: Whether a raw (still percent-encoded) lower-cased path may hold a credential: only then are
#: its segments decoded and looked at one by one, with :func:`refcore.credentials.holds_credential`
#: (interface 5.3: no credential refcore issues may reach a log), the recognizer that also keeps
#: them out of error messages. Decoded and lower-cased, ``key%5Fapp%5F…`` and ``KEY_APP_…`` are
#: credentials too.
_MAYBE_CREDENTIAL = re.compile(rf"(?:{'|'.join(CREDENTIAL_WORDS)})(?:_|%5f)")

#: Words that make a query parameter's name a secret's, whatever its value looks like
#: (``api_key``, ``token``, ``access_token``, ``secret``, ``password``, ``authorization``,
#: ``session``, ``signature``…). None of refcore's own parameters has one (``limit``,
#: ``starting_after``, ``app_id``…). Substrings, not a regular expression: four times faster.
_SECRET_WORDS = ("key", "token", "secret", "passw", "auth", "sess", "signature", "credential", "bearer")


def redacted(target: str) -> str:
    """``target`` (a request's path and query, as uvicorn logs it) with no credential left.

    A path segment holding a credential becomes :data:`REDACTED` whole; so does a query
    parameter whose name holds one. A parameter whose value holds a credential, or whose name
    says it is a secret, keeps its name: ``api_key=[redacted]``. Everything else stays as it
    was, so that ``?limit=10&starting_after=com_…`` still reads as sent. ``target`` itself is
    returned when there is nothing to redact (almost always: 0.1 µs without a query, 1 µs with
    one, on top of the 10 µs or so uvicorn spends formatting and writing the line)."""
    if "?" not in target:
        if ("_" not in target and "%" not in target) or _MAYBE_CREDENTIAL.search(target.lower()) is None:
            return target  # an address, a method, a version, a path with no credential
        return _redacted_path(target)
    path, _mark, query = target.partition("?")
    if _MAYBE_CREDENTIAL.search(path.lower()) is not None:
        path = _redacted_path(path)
    elif not ("%" in query or "+" in query or _named_as_secret(query) or holds_credential(query)):
        return target  # nothing encoded, so nothing hidden: no parameter to look at one by one
    return f"{path}?{'&'.join(map(_redacted_parameter, query.split('&')))}"


def _named_as_secret(name: str) -> bool:
    lowered = name.lower()
    return any(word in lowered for word in _SECRET_WORDS)


def _redacted_path(path: str) -> str:
    return "/".join(map(_redacted_segment, path.split("/")))


def _redacted_segment(segment: str) -> str:
    return REDACTED if holds_credential(unquote(segment)) else segment


def _redacted_parameter(parameter: str) -> str:
    raw_name, equals, value = parameter.partition("=")
    name = unquote_plus(raw_name)
    if holds_credential(name):
        return REDACTED
    if value and (_named_as_secret(name) or holds_credential(unquote_plus(value))):
        return f"{raw_name}{equals}{REDACTED}"
    return parameter


#: A whole credential as refcore issues them (:func:`refcore.credentials.new_secret`: a prefix,
#: then 43 characters of URL-safe base64) inside free text: a traceback or a message logged
#: without arguments. Stricter than :func:`~refcore.credentials.holds_credential`, which looks
#: at URLs and at single values: free text is full of words such as ``key_digest`` and
#: ``join_token`` that must stay readable. Glued to other text too (``xkey_app_…``), as there.
_CREDENTIAL_IN_TEXT = re.compile(
    r"(?:key_(?:test_)?(?:app|managed|aff)_|sess_|join_|whsec_)[0-9A-Za-z_-]{20,}"
)

#: Formats a record's exception as every ``logging.Formatter`` would (``formatException``).
_TRACEBACKS = logging.Formatter()


def redacted_text(text: str) -> str:
    """``text`` with every whole credential replaced by :data:`REDACTED`."""
    if "_" not in text:
        return text
    return _CREDENTIAL_IN_TEXT.sub(REDACTED, text)


class CredentialRedaction(logging.Filter):
    """Passes every record, with :func:`redacted` applied to each of its string arguments.

    uvicorn's access line is ``'%s - "%s %s HTTP/%s" %d'`` with ``(client_addr, method,
    full_path, http_version, status_code)``, ``full_path`` being the path and the raw query
    (``uvicorn.protocols.utils.get_path_with_query_string``); its WebSocket lines (on
    ``uvicorn.error``, once a WebSocket library is installed) carry the same ``full_path``, and
    refcore_http's unexpected errors the request's path. Every string argument is redacted, not
    only the third, so that no future layout of these records lets a credential through;
    redacting an address, a method or a version changes nothing. Changing ``record.args``
    in the logger's own filter, before any handler sees the record, redacts the line for
    every handler alike, configured by uvicorn, by refcore or by the operator.

    A record's traceback is free text that no argument carries: an exception's message may
    quote what it was given. It is formatted here, once, with :func:`redacted_text` applied,
    and kept as ``record.exc_text``, which every ``logging.Formatter`` writes instead of
    formatting the exception itself; so is a message logged without arguments."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple):
            if args:
                record.args = tuple(redacted(arg) if isinstance(arg, str) else arg for arg in args)
            elif isinstance(record.msg, str):
                record.msg = redacted_text(record.msg)
        elif isinstance(args, Mapping):
            record.args = {key: redacted(arg) if isinstance(arg, str) else arg for key, arg in args.items()}
        if record.exc_info and not record.exc_text:
            record.exc_text = redacted_text(_TRACEBACKS.formatException(record.exc_info))
        if record.stack_info:
            record.stack_info = redacted_text(record.stack_info)
        return True


#: The loggers whose records may carry what a client sent: uvicorn's access lines, its WebSocket
#: lines, refcore_http's unexpected errors (``refcore_http.errors``), and every logger of refcore's
#: own. Each is named: a logger's filters see only the records logged on it, never those of its
#: children, so the filter on ``refcore_http`` let ``refcore_http.processor``'s line quoting an
#: unverified ``account`` through whole, a session token included (probe AN). A test checks that
#: every logger the source asks for is listed here.
REDACTED_LOGGERS = (
    "uvicorn.access",
    "uvicorn.error",
    "refcore_http",
    "refcore_http.processor",
    "refcore.join",
    "refcore.pruning",
    "refcore.runtime",
    "refcore.webhooks",
)

#: One filter for all of them, so that installing it again adds nothing (``Filterer.addFilter``).
CREDENTIAL_REDACTION = CredentialRedaction()


def redact_credentials() -> None:
    """Put :class:`CredentialRedaction` on the :data:`REDACTED_LOGGERS`.

    On the loggers, not on handlers: ``logging.config.dictConfig`` and ``fileConfig`` (what
    uvicorn applies its ``log_config`` with) replace a configured logger's handlers but keep its
    filters, so the redaction holds whatever log configuration uvicorn is then given. It costs
    nothing while the access log is off (``--log-level warning`` and above: uvicorn then makes
    no access record at all, see :func:`access_log_shown`)."""
    for name in REDACTED_LOGGERS:
        logging.getLogger(name).addFilter(CREDENTIAL_REDACTION)
