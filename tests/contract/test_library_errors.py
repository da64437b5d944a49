"""A library caller's bad input gets an error of the catalog (``refcore.errors``), never a raw
``KeyError`` or ``AttributeError``: the HTTP routes can only send what they parsed, a Python
caller can pass anything."""

from __future__ import annotations

from decimal import Decimal

import pytest

from refcore.clocks import ManualClock
from refcore.errors import InvalidStartingAfter, NotFound, Unauthenticated, ValidationError
from refcore.models import DisputeStatus, EventType, Mode, RevenueSource
from refcore.models.payout import PayoutExecution, PayoutExecutionStatus
from refcore.services import (
    activity,
    affiliates,
    join,
    payout_executions,
    programs,
    revenue,
    tenancy,
    tracking,
)
from refcore.services.principal import Principal, PrincipalKind, Scope
from refcore.services.processor_events import ProcessorDispute, ProcessorPayment, apply_changes
from refcore.services.revenue import DisputeReport, PaymentReport
from refcore.services.runtime import Runtime
from refcore.services.tracking import CaptureRequest
from tests.contract.scenario import World, build_world
from tests.contract.test_selfservice_contract import ListMailer
from tests.payouts.world import PayoutWorld, build_payout_world


@pytest.fixture
def world(runtime: Runtime, clock: ManualClock) -> World:
    return build_world(runtime, clock)


@pytest.mark.parametrize("action", ["explode", "PAUSE", "", None, 3])
def test_an_unknown_program_status_action_is_a_validation_error_and_changes_nothing(
    world: World, action: object
) -> None:
    before = world.snapshot()
    with pytest.raises(ValidationError) as refused:
        programs.change_program_status(world.rt, world.session, world.program.id, action)  # type: ignore[arg-type]
    assert refused.value.param == "action"
    assert "pause, resume, disable" in str(refused.value)
    assert world.snapshot() == before


@pytest.mark.parametrize("credential", [None, 5, b"key_app_x"])
def test_a_credential_that_is_not_text_is_unauthenticated(world: World, credential: object) -> None:
    with pytest.raises(Unauthenticated):
        tenancy.authenticate(world.rt, credential)  # type: ignore[arg-type]


# -- enum-valued arguments given as their strings (probe L) ---------------------------------------


def _dispatched_payout(runtime: Runtime, clock: ManualClock) -> tuple[PayoutWorld, PayoutExecution]:
    """A payout world whose one affiliate's 2,000 of commission is in a dispatched execution."""
    pw = build_payout_world(runtime, clock, hold_days=0)
    pw.earn(10_000)
    pw.past_hold()
    (execution,) = pw.dispatch(pw.prepare().id).executions
    return pw, execution


def test_a_payout_reported_succeeded_as_a_string_is_recorded_succeeded(
    runtime: Runtime, clock: ManualClock
) -> None:
    """Decisions 5: an execution's ``succeeded`` marks its entries paid. A library caller's
    ``"succeeded"`` had passed the outcome check (a StrEnum equals its value) and then been
    recorded as ``failed``, its money released to be paid a second time."""
    pw, execution = _dispatched_payout(runtime, clock)
    reported = payout_executions.report_outcome(
        runtime,
        pw.live_key,
        execution.id,
        "succeeded",
        idempotency_key="k-1",  # type: ignore[arg-type]
    )
    assert reported.execution.status is PayoutExecutionStatus.SUCCEEDED
    assert (pw.balance().paid, pw.balance().available) == (2_000, 0)
    assert [e.type for e in pw.events(EventType.PAYOUT_FAILED)] == []
    replay = payout_executions.report_outcome(
        runtime, pw.live_key, execution.id, PayoutExecutionStatus.SUCCEEDED, idempotency_key="k-1"
    )
    assert replay.replay


@pytest.mark.parametrize("outcome", ["paid", "", None, 1])
def test_a_payout_outcome_that_is_no_status_is_a_validation_error(
    runtime: Runtime, clock: ManualClock, outcome: object
) -> None:
    pw, execution = _dispatched_payout(runtime, clock)
    before = pw.world.snapshot()
    with pytest.raises(ValidationError) as refused:
        payout_executions.report_outcome(
            runtime,
            pw.live_key,
            execution.id,
            outcome,
            idempotency_key="k-1",  # type: ignore[arg-type]
        )
    assert refused.value.param == "outcome"
    assert pw.world.snapshot() == before


def test_revenue_reported_with_the_source_as_a_string_is_that_source(world: World) -> None:
    """Interface 4.1 rule 9: the first positive Live payment locks the App's revenue source. The
    string ``"api"`` had been taken for processor revenue (compared by identity), and the answer's
    representation then failed with a raw ``AttributeError``."""
    customer = world.referred_customer()
    report = PaymentReport(
        payment_id="pay_string_source",
        customer_id=customer.customer.id,
        program_id=world.program.id,
        amount=1_000,
        currency=world.program.currency,
    )
    recorded = revenue.record_payment(world.rt, world.scope(), report, source="api")  # type: ignore[arg-type]
    assert recorded.created and recorded.record.source is RevenueSource.API
    app = world.rt.read(lambda tx: tx.uow.apps.get(world.app.id))
    assert app is not None and app.live_revenue_source is RevenueSource.API
    with pytest.raises(ValidationError) as refused:
        revenue.record_payment(world.rt, world.scope(), report, source="stripe")  # type: ignore[arg-type]
    assert refused.value.param == "source"


def test_a_dispute_inquiry_flag_that_is_not_a_boolean_is_a_validation_error(world: World) -> None:
    """A truthy string had been stored as an inquiry."""
    payment = world.pay(world.referred_customer(), 1_000).record
    before = world.snapshot()
    report = DisputeReport(
        dispute_id="dp_flag",
        payment_id=payment.payment_id,
        status="opened",
        amount=500,
        inquiry="yes",  # type: ignore[arg-type,union-attr]
    )
    with pytest.raises(ValidationError) as refused:
        revenue.report_dispute(world.rt, world.scope(), report)
    assert refused.value.param == "inquiry"
    assert world.snapshot() == before


# -- text no record can hold, in arguments typed str (probe L) -----------------------------------


@pytest.mark.parametrize("bad", ["prg_\ud800", "prg_\x00"], ids=["surrogate", "nul"])
def test_an_id_no_record_can_hold_finds_nothing_or_is_refused_never_a_raw_error(
    world: World, bad: str
) -> None:
    """An ID typed ``str`` is not checked by the core: an SQL store refuses what it cannot encode
    (``validation_error``), the memory store finds nothing (``program_not_found``). Either is an
    error of the catalog; a raw ``UnicodeEncodeError`` (SQLite, PostgreSQL) or an
    ``internal_error`` (PostgreSQL, NUL) had come out before."""
    before = world.snapshot()
    with pytest.raises((ValidationError, NotFound)) as refused:
        programs.get_program(world.rt, world.session, bad)
    assert not isinstance(refused.value, NotFound) or refused.value.code == "program_not_found"
    assert world.snapshot() == before


def test_a_credential_holding_an_unpaired_surrogate_is_unauthenticated(world: World) -> None:
    with pytest.raises(Unauthenticated):
        tenancy.authenticate(world.rt, "key_app_\ud800")


def test_a_scope_built_with_the_mode_as_a_string_is_that_mode(world: World) -> None:
    """Probe R: ``Scope(app_id, "live")`` stored clicks with the string as their mode on the
    memory store (which no list then found) and raised ``AttributeError`` on an SQL store."""
    scope = Scope(app_id=world.app.id, mode="live")  # type: ignore[arg-type]
    assert scope == world.scope(Mode.LIVE)
    click = tracking.capture(world.rt, CaptureRequest(via=world.link.code), scope=scope)
    assert click.mode is Mode.LIVE
    key = Principal(kind="app_key", app_id=world.app.id, mode="test")  # type: ignore[arg-type]
    assert (key.kind, key.mode) == (PrincipalKind.APP_KEY, Mode.TEST)
    assert key.is_app_key


@pytest.mark.parametrize("mode", ["LIVE", "production", None, True])
def test_a_scope_of_no_mode_is_a_validation_error_naming_mode(world: World, mode: object) -> None:
    with pytest.raises(ValidationError) as refused:
        Scope(app_id=world.app.id, mode=mode)  # type: ignore[arg-type]
    assert refused.value.param == "mode"


def test_a_processor_dispute_status_given_as_a_string_is_that_status() -> None:
    dispute = ProcessorDispute(
        dispute_id="dp_1",
        payment_id="ch_1",
        amount=100,
        status="opened",
        currency="usd",  # type: ignore[arg-type]
    )
    assert dispute.status is DisputeStatus.OPENED
    with pytest.raises(ValidationError) as refused:
        ProcessorDispute(dispute_id="dp_1", payment_id="ch_1", amount=100, status="reopened", currency="usd")  # type: ignore[arg-type]
    assert refused.value.param == "status"


def test_processor_changes_given_as_a_generator_are_all_recorded(world: World) -> None:
    """Probe R: the check that no ID is named twice read the generator to its end, and then
    nothing was recorded, without an error."""
    scope = world.scope(Mode.TEST)
    changes = (
        ProcessorPayment(payment_id=f"ch_gen_{n}", amount=1_000, currency=world.program.currency, metadata={})
        for n in range(2)
    )
    recorded = apply_changes(world.rt, scope, changes)  # type: ignore[arg-type]
    assert [r.record.payment_id for r in recorded] == ["ch_gen_0", "ch_gen_1"]


def test_start_signup_without_a_mailer_refuses_before_recording_anything(world: World) -> None:
    """Probe R: the signup was kept and the address's allowance spent, then ``internal_error``."""
    before = world.snapshot()
    with pytest.raises(TypeError, match="send"):
        join.start_signup(world.rt, None, world.program.slug, "new@x.example", "New", client_ip=None)  # type: ignore[arg-type]
    assert world.snapshot() == before


# -- IDs that are not text ------------------------------------------------------------------------


@pytest.mark.parametrize("wrong", [["x"], {"id": "x"}, 7, None, b"prog_x"], ids=repr)
def test_an_id_that_is_not_text_finds_no_record_on_every_store(world: World, wrong: object) -> None:
    """``Repository.get``: a list had raised ``TypeError`` (memory store) or been refused by the
    driver as ``InternalError`` (SQLite), where a number was simply not found."""
    assert world.rt.read(lambda tx: tx.uow.program_affiliates.get(wrong)) is None  # type: ignore[arg-type]


@pytest.mark.parametrize("wrong", [["x"], {"id": "x"}], ids=repr)
def test_a_service_given_an_id_that_is_not_text_answers_not_found_and_changes_nothing(
    world: World, wrong: object
) -> None:
    before = world.snapshot()
    with pytest.raises(NotFound):
        affiliates.create_link(world.rt, world.session, wrong)  # type: ignore[arg-type]
    assert world.snapshot() == before


# -- probe AD: what a library caller passes that the HTTP layer never could ---------------------

#: Shaped like an App key refcore issues: the message and ``param`` must never carry it.
PASTED_KEY = "key_app_" + "s3cr3t" * 8


@pytest.mark.parametrize("bad", ["k\x00ey", "k\ud800"], ids=["nul", "surrogate"])
def test_a_payout_report_key_no_store_can_keep_is_refused_on_every_store(
    runtime: Runtime, clock: ManualClock, bad: str
) -> None:
    """The memory store and SQLite had recorded the payout succeeded under a key holding a NUL,
    PostgreSQL refused it naming nothing: one money write, two outcomes."""
    pw, execution = _dispatched_payout(runtime, clock)
    before = pw.world.snapshot()
    with pytest.raises(ValidationError) as refused:
        payout_executions.report_outcome(
            runtime, pw.live_key, execution.id, PayoutExecutionStatus.SUCCEEDED, idempotency_key=bad
        )
    assert refused.value.param == "Idempotency-Key"
    assert pw.world.snapshot() == before


def test_a_credential_quoted_in_a_library_error_is_redacted(world: World) -> None:
    """Errors made in the core quote what the caller sent: a key used as a program setting's name
    or as a list filter's had come back whole in the message and ``param`` (over HTTP the
    answer's last guard redacted it, a library caller had it raw)."""
    refusals = []
    with pytest.raises(ValidationError) as created:
        programs.create_program(world.rt, world.session, {PASTED_KEY: 1})
    refusals.append(created.value)
    with pytest.raises(ValidationError) as updated:
        programs.update_program(world.rt, world.session, world.program.id, {PASTED_KEY: 1})
    refusals.append(updated.value)
    with pytest.raises(ValidationError) as filtered:
        activity.list_payments(world.rt, world.session, activity.ActivityQuery(filters={PASTED_KEY: "x"}))
    refusals.append(filtered.value)
    for refusal in refusals:
        assert PASTED_KEY not in refusal.message and PASTED_KEY not in str(refusal)
        assert refusal.param == "[redacted]"


@pytest.mark.parametrize("value", [2**63, Decimal(1), ["a"], {"a": 1}, 5, None], ids=repr)
@pytest.mark.parametrize("name", ["payment_id", "email"])
def test_an_activity_filter_value_that_is_not_text_is_a_validation_error(
    world: World, name: str, value: object
) -> None:
    """SQLite's driver had raised a raw ``OverflowError`` for 2**63 and an internal error for a
    dict, where the memory store listed nothing; ``email=5`` a raw ``AttributeError``."""
    lister = activity.list_payments if name == "payment_id" else activity.list_customers
    with pytest.raises(ValidationError) as refused:
        lister(world.rt, world.session, activity.ActivityQuery(filters={name: value}))  # type: ignore[dict-item]
    assert refused.value.param == name


def test_activity_filters_that_are_no_mapping_are_a_validation_error(world: World) -> None:
    with pytest.raises(ValidationError) as refused:
        activity.list_payments(world.rt, world.session, activity.ActivityQuery(filters=None))  # type: ignore[arg-type]
    assert refused.value.param == "filters"


def test_a_scope_naming_an_app_by_a_huge_number_is_a_catalog_error(world: World) -> None:
    """SQLite's driver binds 64 bits at most: ``Scope(app_id=2**63)`` had raised ``OverflowError``."""
    customer = world.referred_customer()
    report = PaymentReport(
        payment_id="pay_huge",
        customer_id=customer.customer.id,
        program_id=world.program.id,
        amount=100,
        currency="usd",
    )
    with pytest.raises((ValidationError, NotFound)):
        revenue.record_payment(world.rt, Scope(app_id=2**63, mode=Mode.LIVE), report)  # type: ignore[arg-type]


@pytest.mark.parametrize("cursor", [5, True, {"id": "x"}], ids=repr)
def test_a_cursor_that_is_not_text_is_invalid_starting_after(world: World, cursor: object) -> None:
    with pytest.raises(InvalidStartingAfter):
        activity.list_payments(
            world.rt, world.session, activity.ActivityQuery(app_id=world.app.id, starting_after=cursor)
        )  # type: ignore[arg-type]


@pytest.mark.parametrize("wrong", [5, None, ["txn_x"]], ids=repr)
def test_getting_activity_by_an_id_that_is_not_text_is_not_found(world: World, wrong: object) -> None:
    with pytest.raises(NotFound):
        activity.get_transaction(world.rt, world.session, wrong)  # type: ignore[arg-type]


def test_program_settings_named_by_mixed_types_are_a_validation_error_naming_one(world: World) -> None:
    """Sorting the unknown names had raised a raw ``TypeError``; a lone ``5`` was the ``param`` 5."""
    before = world.snapshot()
    with pytest.raises(ValidationError) as refused:
        programs.create_program(world.rt, world.session, {1: 2, "a": 3})  # type: ignore[dict-item]
    assert refused.value.param == "1"
    with pytest.raises(ValidationError) as updated:
        programs.update_program(world.rt, world.session, world.program.id, {5: 1})  # type: ignore[dict-item]
    assert updated.value.param == "5"
    assert world.snapshot() == before


@pytest.mark.parametrize("client_ip", [True, 5, b"10.0.0.1", ["10.0.0.1"]], ids=repr)
def test_a_signup_client_ip_that_is_not_text_is_refused(world: World, client_ip: object) -> None:
    """``True`` and ``5`` had been counted as the addresses 0.0.0.1 and 0.0.0.5, bytes had raised
    ``AttributeError``."""
    before = world.snapshot()
    with pytest.raises(ValidationError) as refused:
        join.start_signup(
            world.rt,
            ListMailer(),
            world.program.slug,
            "new@x.example",
            "New",
            client_ip=client_ip,  # type: ignore[arg-type]
        )
    assert refused.value.param == "client_ip"
    assert world.snapshot() == before


class _AlwaysEqualText(str):
    def __eq__(self, other: object) -> bool:
        return True

    def __hash__(self) -> int:
        return 0


class _AlwaysEqualNumber(int):
    def __eq__(self, other: object) -> bool:
        return True

    def __hash__(self) -> int:
        return 0


def test_text_and_amounts_of_subclasses_are_read_as_the_plain_values_they_hold(world: World) -> None:
    """A ``str`` whose ``__eq__`` always held had been matched against another payment's ID by the
    memory store (a false ``idempotency_conflict``), and an ``int`` that equals everything had
    replayed a payment of another amount, where the SQL stores bound the plain values."""
    customer = world.referred_customer()
    first = world.pay(customer, 10_000, payment_id="pay_first")
    second = world.pay(customer, _AlwaysEqualNumber(2_500), payment_id=_AlwaysEqualText("pay_second"))
    assert second.created and second.record.id != first.record.id
    assert type(second.record.payment_id) is str and second.record.payment_id == "pay_second"
    assert type(second.record.amount) is int and second.record.amount == 2_500
    assert world.entry_sum(second.record.id) == world.entry_sum(first.record.id) // 4


def test_a_signup_client_ip_holding_an_unpaired_surrogate_is_counted_not_a_raw_error(world: World) -> None:
    """Its rate-limit key had been a raw ``UnicodeEncodeError``; it is digested as it is."""
    mailer = ListMailer()
    join.start_signup(world.rt, mailer, world.program.slug, "new@x.example", "New", client_ip="10.0.0.\ud800")
    assert mailer.token_for("new@x.example")


def test_an_error_naming_a_field_by_a_number_names_it_as_text() -> None:
    """A library caller's mapping may have any keys; the refusal naming one is still made."""
    refused = ValidationError(f"{5} is not a field", param=5)  # type: ignore[arg-type]
    assert (refused.param, refused.message) == ("5", "5 is not a field")


def test_an_activity_filter_value_of_a_str_subclass_matches_as_its_plain_text(world: World) -> None:
    """The filter's checked text is matched, not the caller's object: one whose ``__eq__`` always
    held had listed every payment of the memory store."""
    customer = world.referred_customer()
    world.pay(customer, 1_000, payment_id="pay_listed")
    world.pay(customer, 1_000, payment_id="pay_other")
    query = activity.ActivityQuery(
        app_id=world.app.id, filters={"payment_id": _AlwaysEqualText("pay_listed")}
    )
    page = activity.list_payments(world.rt, world.session, query)
    assert [p.payment_id for p in page.data] == ["pay_listed"]
