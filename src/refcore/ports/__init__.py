"""The ports: what the core needs from the outside world, as ``typing.Protocol`` classes.

Adapters (``refcore_memstore``, ``refcore_sqlstore``) implement them; the core never imports an
adapter.
"""

from refcore.ports.clock import Clock
from refcore.ports.ids import IdGenerator
from refcore.ports.mailer import Mailer, Message
from refcore.ports.notifier import EventNotifier
from refcore.ports.outbox import EventOutbox
from refcore.ports.repository import Repository
from refcore.ports.sealed_secrets import Replacement, SealedSecret, SealedSecrets, SecretKind
from refcore.ports.unit_of_work import UnitOfWork, UnitOfWorkFactory

__all__ = [
    "Clock",
    "EventNotifier",
    "EventOutbox",
    "IdGenerator",
    "Mailer",
    "Message",
    "Replacement",
    "Repository",
    "SealedSecret",
    "SealedSecrets",
    "SecretKind",
    "UnitOfWork",
    "UnitOfWorkFactory",
]
