"""Programs and their terms (decisions 2)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet
from typing import Any

from attrs import evolve

from refcore.errors import StateConflict, ValidationError
from refcore.models import CommissionTerms, CommissionType, Program, ProgramStatus, ProgramTerms
from refcore.rules.money import INT32_MAX, require_currency
from refcore.services.access import require_app, require_program
from refcore.services.pagination import Page, paginate
from refcore.services.principal import Principal
from refcore.services.runtime import Runtime, Tx
from refcore.services.version_history import VersionHistory, version_history
from refcore.validation import require_bool, require_int, require_line, require_slug, require_text

#: Settings a caller may change after creation. ``currency`` is fixed once money has moved.
_UPDATABLE = frozenset(
    {
        "name",
        "commission",
        "commission_duration_months",
        "attribution_window_days",
        "hold_days",
        "minimum_payout",
        "auto_approve",
        "promotion_code_fallback",
    }
)


def parse_commission(value: object) -> CommissionTerms:
    """Commission terms from their JSON form, ``{"type": "percent", "bps": 0..10000}`` or
    ``{"type": "fixed", "amount": minor units}``, with no other member, so that a misspelt member is
    refused instead of ignored.

    Errors: ``validation_error`` (``commission``, ``commission.type``, ``commission.bps``,
    ``commission.amount``)."""
    if not isinstance(value, Mapping):
        raise ValidationError("commission must be an object", param="commission")
    kind = value.get("type")
    if kind == "percent":
        if set(value) != {"type", "bps"}:
            raise ValidationError("percent commission takes exactly type and bps", param="commission")
        bps = require_int(value.get("bps"), param="commission.bps", maximum=10000)
        return CommissionTerms(type=CommissionType.PERCENT, value=bps)
    if kind == "fixed":
        if set(value) != {"type", "amount"}:
            raise ValidationError("fixed commission takes exactly type and amount", param="commission")
        amount = require_int(value.get("amount"), param="commission.amount", maximum=INT32_MAX)
        return CommissionTerms(type=CommissionType.FIXED, value=amount)
    raise ValidationError("commission.type must be percent or fixed", param="commission.type")


def _settings(values: Mapping[str, Any]) -> dict[str, Any]:
    """Validated keyword arguments for :class:`Program` from caller values."""
    out: dict[str, Any] = {}
    if "name" in values:
        out["name"] = require_line(values["name"], param="name")
    if "commission" in values:
        out["commission"] = parse_commission(values["commission"])
    if "commission_duration_months" in values:
        months = values["commission_duration_months"]
        out["commission_duration_months"] = (
            None
            if months is None
            else require_int(months, param="commission_duration_months", minimum=1, maximum=1200)
        )
    if "attribution_window_days" in values:
        out["attribution_window_days"] = require_int(
            values["attribution_window_days"],
            param="attribution_window_days",
            minimum=1,
            maximum=3650,
        )
    if "hold_days" in values:
        out["hold_days"] = require_int(values["hold_days"], param="hold_days", maximum=3650)
    if "minimum_payout" in values:
        out["minimum_payout"] = require_int(values["minimum_payout"], param="minimum_payout")
    for flag in ("auto_approve", "promotion_code_fallback"):
        if flag in values:
            out[flag] = require_bool(values[flag], param=flag)
    return out


#: What a new program may be given: what an update may change, and what it keeps for life.
_CREATABLE = _UPDATABLE | {"app_id", "slug", "currency"}


def _unknown_fields(values: Iterable[object], known: AbstractSet[str]) -> str | None:
    """The first of the names ``values`` holds (in text order) that is not one of ``known``, as
    text.

    A library caller's names may be anything hashable: ``{1: 2, "a": 3}`` had been a raw
    ``TypeError`` from sorting them, and a lone ``5`` the ``param`` 5 (probe AD)."""
    unknown = sorted(str(name) for name in values if not isinstance(name, str) or name not in known)
    return unknown[0] if unknown else None


def create_program(rt: Runtime, principal: Principal, values: Mapping[str, Any]) -> Program:
    """A new ``active`` program of an App (``POST /v1/programs``); ``values`` as its JSON body.

    A name it does not know is ``ValidationError``, as the HTTP body's unknown fields are: a
    library caller's ``hold_dayz`` had been dropped without a word, and the program made with
    the default hold of 30 days.

    Errors: ``validation_error`` (an unknown field; ``app_id``, ``name``, ``slug``, ``currency`` or
    ``commission`` missing or malformed; a setting out of range; a slug already taken),
    ``app_not_found``."""
    if not isinstance(values, Mapping):
        raise ValidationError("the program's values must be a mapping of its fields")
    unknown = _unknown_fields(values, _CREATABLE)
    if unknown:
        raise ValidationError(f"{unknown} is not a field of a program", param=unknown)
    app_id = require_text(values.get("app_id"), param="app_id")
    slug = require_slug(values.get("slug"))
    currency = require_currency(values.get("currency"))
    if "commission" not in values:
        raise ValidationError("commission is required", param="commission")
    require_line(values.get("name"), param="name")
    settings = _settings(values)

    def work(tx: Tx) -> Program:
        require_app(tx, principal, app_id)
        if tx.uow.programs.find_one({"slug": slug}) is not None:
            raise ValidationError(f"slug {slug} is taken", param="slug")
        program = Program(
            id=tx.new_id("prg"),
            app_id=app_id,
            slug=slug,
            currency=currency,
            created_at=tx.now,
            **settings,
        )
        tx.uow.programs.add(program)
        return program

    return rt.transaction(work)


def get_program(rt: Runtime, principal: Principal, program_id: str) -> Program:
    """A program by ID (``GET /v1/programs/:id``), for a session or App key of its App.

    Errors: ``program_not_found``."""
    return rt.read(lambda tx: require_program(tx, principal, program_id))


def list_programs(
    rt: Runtime,
    principal: Principal,
    app_id: str,
    *,
    limit: object = None,
    starting_after: str | None = None,
) -> Page[Program]:
    """One page of an App's programs, newest first (``GET /v1/programs?app_id=``).

    Errors: ``app_not_found``, ``validation_error`` (``limit``), ``invalid_starting_after``."""

    def work(tx: Tx) -> Page[Program]:
        require_app(tx, principal, app_id)
        return paginate(
            tx.uow.programs,
            {"app_id": app_id},
            prefix="prg",
            limit=limit,
            starting_after=starting_after,
        )

    return rt.read(work)


def update_program(rt: Runtime, principal: Principal, program_id: str, values: Mapping[str, Any]) -> Program:
    """Change the settings named in ``values`` and only those (``PATCH /v1/programs/:id``). ``app_id``,
    ``slug`` and ``currency`` are kept for life: naming one is refused, as is a name that is no setting,
    rather than ignored.

    Errors: ``validation_error`` (such a field, or a bad value), ``program_not_found``."""
    if not isinstance(values, Mapping):
        raise ValidationError("the program's values must be a mapping of its fields")
    unknown = _unknown_fields(values, _UPDATABLE)
    if unknown:
        raise ValidationError(f"{unknown} cannot be changed", param=unknown)
    settings = _settings(values)

    def work(tx: Tx) -> Program:
        # Locked, as every replaced record is: a status change at the same moment must not be
        # undone by this replace, nor this one by it.
        program = evolve(require_program(tx, principal, program_id, for_update=True), **settings)
        tx.uow.programs.replace(program)
        return program

    return rt.transaction(work)


_STATUS_MOVES: dict[str, tuple[frozenset[ProgramStatus], ProgramStatus]] = {
    "pause": (frozenset({ProgramStatus.ACTIVE}), ProgramStatus.PAUSED),
    "resume": (frozenset({ProgramStatus.PAUSED}), ProgramStatus.ACTIVE),
    "disable": (frozenset({ProgramStatus.ACTIVE, ProgramStatus.PAUSED}), ProgramStatus.DISABLED),
}


def change_program_status(rt: Runtime, principal: Principal, program_id: str, action: str) -> Program:
    """``pause``, ``resume`` or ``disable``; out of order is ``409 state_conflict``; any other
    action is ``validation_error`` (the HTTP routes name only these three, a library caller may
    pass anything).

    ``POST /v1/programs/:id/pause``, ``/resume`` and ``/disable``. Errors: ``validation_error``,
    ``program_not_found``, ``state_conflict``."""
    move = _STATUS_MOVES.get(action) if isinstance(action, str) else None
    if move is None:
        raise ValidationError(f"action must be one of: {', '.join(_STATUS_MOVES)}", param="action")
    allowed_from, target = move

    def work(tx: Tx) -> Program:
        # Locked before its status is judged: two moves at once (a pause and a disable of an
        # active program) had both passed the check on PostgreSQL, and a disabled program could
        # end up paused.
        program = require_program(tx, principal, program_id, for_update=True)
        if program.status not in allowed_from:
            raise StateConflict(f"Cannot {action} a program that is {program.status.value}")
        program = evolve(program, status=target)
        tx.uow.programs.replace(program)
        return program

    return rt.transaction(work)


def publish_terms(rt: Runtime, principal: Principal, program_id: str, text: object) -> ProgramTerms:
    """A new version of the program's terms, current at once (``POST /v1/programs/:id/terms``). Earlier
    versions are kept unchanged, so what an affiliate was shown stays readable.

    Errors: ``validation_error`` (``text``: missing, or over 100,000 characters), ``program_not_found``."""
    body = require_text(text, param="text", max_length=100_000)

    def work(tx: Tx) -> ProgramTerms:
        require_program(tx, principal, program_id)
        terms = ProgramTerms(id=tx.new_id("trm"), program_id=program_id, text=body, created_at=tx.now)
        tx.uow.program_terms.add(terms)
        return terms

    return rt.transaction(work)


def list_terms(
    rt: Runtime,
    principal: Principal,
    program_id: str,
    *,
    limit: object = None,
    starting_after: str | None = None,
) -> VersionHistory[ProgramTerms]:
    """The current terms and one page of every published version, newest first.

    ``GET /v1/programs/:id/terms``. Errors: ``program_not_found``, ``validation_error``
    (``limit``), ``invalid_starting_after``."""

    def work(tx: Tx) -> VersionHistory[ProgramTerms]:
        require_program(tx, principal, program_id)
        return version_history(
            tx.uow.program_terms,
            {"program_id": program_id},
            prefix="trm",
            limit=limit,
            starting_after=starting_after,
        )

    return rt.read(work)
