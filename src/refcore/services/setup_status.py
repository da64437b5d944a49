"""Is an App's integration healthy? Its setup status, per mode (interface 4.2, decisions 4).

For each mode the status answers the questions a Developer has while integrating, in order:
where revenue comes from (and whether that is locked), whether the processor is connected,
whether a webhook endpoint is configured, and whether the first click, the first identify and
the first attributed payment have arrived. Alarms name what needs attention, with counts:

- ``unattributed_payments``: payments that no referral attributes; they stay in history and earn
  nothing (decisions 4). Usually identify was skipped or the processor metadata was not attached.
- ``processor_disconnected``: the Live revenue source is locked to the processor, which is no
  longer connected: no revenue can be recorded in that mode until it is reconnected.
- ``processor_unused``: the processor is connected but the Live revenue source is locked to API
  reporting.

Every figure is one indexed read (:mod:`refcore.ports.metrics`, or the oldest or newest row of an
index range), never a walk through history.

A dashboard session sees both modes; an App key sees its own mode only (the other is ``None``):
activity belongs to the key's mode (decisions 1).
"""

from __future__ import annotations

from datetime import datetime

from attrs import frozen

from refcore.models import App, Mode, RevenueSource
from refcore.services.access import require_app
from refcore.services.principal import Principal
from refcore.services.runtime import Runtime, Tx


@frozen
class Alarm:
    code: str
    message: str
    #: How many records the alarm is about, when it is about records.
    count: int | None = None


@frozen
class ModeSetup:
    mode: Mode
    #: Where this mode's revenue comes from: the locked source, else the processor when connected,
    #: else the source of the newest payment, else ``None`` (nothing reported yet).
    revenue_source: RevenueSource | None
    #: Live only: locked by the first positive Live payment (Test activity never locks).
    revenue_source_locked: bool
    processor_connected: bool
    #: The App's one webhook endpoint (shared by both modes).
    webhook_configured: bool
    webhook_disabled: bool
    first_click_at: datetime | None
    first_identify_at: datetime | None
    first_attributed_payment_at: datetime | None
    unattributed_payments: int
    alarms: tuple[Alarm, ...]

    @property
    def complete(self) -> bool:
        """Revenue has a source and a click has become an attributed payment."""
        return (
            self.revenue_source is not None
            and self.first_click_at is not None
            and self.first_identify_at is not None
            and self.first_attributed_payment_at is not None
        )


@frozen
class SetupStatus:
    app: App
    test: ModeSetup | None
    live: ModeSetup | None


def _earliest_of_both(tx: Tx, repository: str, app_id: str, mode: Mode) -> datetime | None:
    """The oldest record of an App and mode where the index is split by ``attributed``: one
    ``min`` per half, each answered from the top of its index range."""
    metrics = tx.uow.metrics()
    moments = [
        metrics.earliest(repository, {"app_id": app_id, "mode": mode, "attributed": flag})
        for flag in (True, False)
    ]
    present = [m for m in moments if m is not None]
    return min(present) if present else None


def _mode_setup(tx: Tx, app: App, mode: Mode) -> ModeSetup:
    metrics = tx.uow.metrics()
    scope = {"app_id": app.id, "mode": mode}
    connected = app.processor_connected(mode)
    locked = app.live_revenue_source if mode is Mode.LIVE else None
    if locked is not None:
        source: RevenueSource | None = locked
    elif connected:
        source = RevenueSource.PROCESSOR
    else:
        newest = tx.uow.payments.page(scope, limit=1, before=None)
        source = newest[0].source if newest else None
    endpoint = tx.uow.webhook_endpoints.find_one({"app_id": app.id})
    configured = endpoint is not None and endpoint.deleted_at is None
    unattributed = metrics.count("payments", {**scope, "attributed": False})
    alarms: list[Alarm] = []
    if unattributed:
        alarms.append(
            Alarm(
                code="unattributed_payments",
                count=unattributed,
                message=f"{unattributed} {mode.value} payment(s) are not attributed to any affiliate "
                "and earn no commission: call identify before reporting payments, and attach the "
                "processor metadata it returns to the customer's payments.",
            )
        )
    if locked is RevenueSource.PROCESSOR and not connected:
        alarms.append(
            Alarm(
                code="processor_disconnected",
                message="Live revenue is locked to the payment processor, which is not connected: "
                "no Live revenue can be recorded until it is reconnected.",
            )
        )
    if locked is RevenueSource.API and connected:
        alarms.append(
            Alarm(
                code="processor_unused",
                message="The payment processor is connected, but Live revenue is locked to API reporting.",
            )
        )
    return ModeSetup(
        mode=mode,
        revenue_source=source,
        revenue_source_locked=locked is not None,
        processor_connected=connected,
        webhook_configured=configured,
        webhook_disabled=configured and endpoint is not None and endpoint.disabled,
        first_click_at=metrics.earliest("clicks", scope),
        first_identify_at=_earliest_of_both(tx, "referrals", app.id, mode),
        first_attributed_payment_at=metrics.earliest("payments", {**scope, "attributed": True}),
        unattributed_payments=unattributed,
        alarms=tuple(alarms),
    )


def setup_status(rt: Runtime, principal: Principal, app_id: str) -> SetupStatus:
    """What the App has set up and what it still lacks, per mode (``GET /v1/apps/:id/setup-status``):
    revenue source and its lock, processor, webhook, the first click, identify and attributed payment,
    unattributed payments, and alarms. A session sees both modes, an App key only its own.

    Errors: ``app_not_found``."""

    def work(tx: Tx) -> SetupStatus:
        app = require_app(tx, principal, app_id)
        visible = (Mode.TEST, Mode.LIVE) if principal.is_session else (principal.mode,)
        return SetupStatus(
            app=app,
            test=_mode_setup(tx, app, Mode.TEST) if Mode.TEST in visible else None,
            live=_mode_setup(tx, app, Mode.LIVE) if Mode.LIVE in visible else None,
        )

    return rt.read(work)
