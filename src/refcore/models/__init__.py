"""Domain models: attrs classes, frozen so that a stored object can never change behind a store's back.

Entities change by replacement (``attrs.evolve``) through their repository; ledger entries are
never replaced at all.
"""

from refcore.models.activity import Click, Customer, Referral
from refcore.models.affiliate import AffiliateStatus, Link, ProgramAffiliate
from refcore.models.app_profile import AgreementVersion, AppLogo
from refcore.models.commission import Balance, CommissionEntry, EntryKind, EntryStatus
from refcore.models.event import Event, EventType
from refcore.models.mode import Mode
from refcore.models.payout import (
    PayoutBatch,
    PayoutBatchStatus,
    PayoutDetails,
    PayoutExecution,
    PayoutExecutionStatus,
    PayoutItem,
    PayoutMethod,
    PayoutReportKey,
    PayoutRequest,
    PayoutRequestStatus,
)
from refcore.models.processor import ProcessorConnection
from refcore.models.program import (
    CommissionTerms,
    CommissionType,
    Program,
    ProgramStatus,
    ProgramTerms,
)
from refcore.models.revenue import Dispute, DisputeStatus, Payment, Refund, RevenueSource
from refcore.models.tenancy import ApiKey, App, KeyKind, Membership, Organization, Session, User
from refcore.models.webhook import DeliveryStatus, WebhookDelivery, WebhookEndpoint

__all__ = [
    "AffiliateStatus",
    "AgreementVersion",
    "ApiKey",
    "App",
    "AppLogo",
    "Balance",
    "Click",
    "CommissionEntry",
    "CommissionTerms",
    "CommissionType",
    "Customer",
    "DeliveryStatus",
    "Dispute",
    "DisputeStatus",
    "EntryKind",
    "EntryStatus",
    "Event",
    "EventType",
    "KeyKind",
    "Link",
    "Membership",
    "Mode",
    "Organization",
    "Payment",
    "PayoutBatch",
    "PayoutBatchStatus",
    "PayoutDetails",
    "PayoutExecution",
    "PayoutExecutionStatus",
    "PayoutItem",
    "PayoutMethod",
    "PayoutReportKey",
    "PayoutRequest",
    "PayoutRequestStatus",
    "ProcessorConnection",
    "Program",
    "ProgramAffiliate",
    "ProgramStatus",
    "ProgramTerms",
    "Referral",
    "Refund",
    "RevenueSource",
    "Session",
    "User",
    "WebhookDelivery",
    "WebhookEndpoint",
]
