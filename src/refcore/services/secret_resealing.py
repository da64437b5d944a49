"""Moving every stored secret to the current server key (``refcore reseal-secrets``).

A fleet changes ``REFCORE_SECRET_KEY`` in steps (docs/deployment.md): the new key first as every
process's fallback, then as every process's key with the old one as fallback. Secrets sealed
before that still open, through the fallback; this pass seals each of them anew under the
current key, so that the fallback can then be removed without any secret becoming unreadable.

It works through each kind of sealed secret in pages of :data:`RESEAL_BATCH`, in ID order: a
page is read without locks, resealed in memory, and written back in one short transaction, each
row only if it still holds the ciphertext that was read (:mod:`refcore.ports.sealed_secrets`).
A secret that an API call rotated (or removed) in between is left as that call stored it, and
counted as changed meanwhile: that call sealed under its own process's current key. A secret
the current key opens already is skipped, so a second pass writes nothing. One that opens under
neither key is reported by ID, never by content, and the pass goes on with the others; what to
do with it (rotate the endpoint's secret, reconnect the processor) is the operator's decision.
"""

from __future__ import annotations

from collections.abc import Callable

from attrs import field, frozen

from refcore.crypto import DecryptionError, SecretBox
from refcore.ports.sealed_secrets import Replacement, SealedSecret, SealedSecrets, SecretKind
from refcore.services import webhooks
from refcore.services.processor_connection import ProcessorKeys

#: Rows read and written per transaction: a few milliseconds of locks on a large table, rather
#: than one transaction holding them (on SQLite, the one write lock) for the whole pass.
RESEAL_BATCH = 500

#: A sealed secret moved to the current key, or ``None`` when it is under that key already;
#: raises :class:`~refcore.crypto.DecryptionError` when neither key opens it.
Resealer = Callable[[SealedSecret], str | None]


@frozen
class Unopenable:
    """A record whose secret opens under neither the current key nor the fallback."""

    kind: SecretKind
    id: str


@frozen
class ResealReport:
    """What one pass did: counts over every kind, and the records it could not open."""

    resealed: int = 0
    already_current: int = 0
    changed_meanwhile: int = 0
    unopenable: tuple[Unopenable, ...] = field(default=())

    def summary(self) -> str:
        """One line, for the command's output; counts only, never a secret or a key."""
        return (
            f"resealed {self.resealed}, already current {self.already_current}, "
            f"unopenable {len(self.unopenable)}, changed meanwhile {self.changed_meanwhile}"
        )


def resealers(box: SecretBox, keys: ProcessorKeys) -> dict[SecretKind, Resealer]:
    """How each kind of secret is resealed: with the box and context it was sealed with."""
    return {
        SecretKind.WEBHOOK_ENDPOINT: lambda s: webhooks.reseal_secret(box, s.app_id, s.ciphertext),
        SecretKind.PROCESSOR_CONNECTION: lambda s: keys.reseal_secret(s.id, s.app_id, s.ciphertext),
    }


def reseal_secrets(
    secrets: SealedSecrets,
    box: SecretBox,
    keys: ProcessorKeys,
    *,
    batch: int = RESEAL_BATCH,
) -> ResealReport:
    """Seal every stored webhook-endpoint and processor-connection secret under the current key
    of ``box`` and ``keys`` (opened under it or its fallback), a batch per transaction."""
    if batch < 1:
        raise ValueError("a reseal batch must hold at least one row")
    report = ResealReport()
    for kind, reseal in resealers(box, keys).items():
        report = _reseal_kind(secrets, kind, reseal, batch, report)
    return report


def _reseal_kind(
    secrets: SealedSecrets, kind: SecretKind, reseal: Resealer, batch: int, report: ResealReport
) -> ResealReport:
    resealed, current, changed = report.resealed, report.already_current, report.changed_meanwhile
    unopenable = list(report.unopenable)
    after: str | None = None
    while True:
        page = secrets.sealed_after(kind, after, limit=batch)
        replacements = []
        for sealed in page:
            try:
                new = reseal(sealed)
            except DecryptionError:
                unopenable.append(Unopenable(kind=kind, id=sealed.id))
                continue
            if new is None:
                current += 1
            else:
                replacements.append(Replacement(id=sealed.id, old=sealed.ciphertext, new=new))
        if replacements:
            written = secrets.replace_unchanged(kind, replacements)
            resealed += len(written)
            changed += len(replacements) - len(written)
        if len(page) < batch:
            return ResealReport(
                resealed=resealed,
                already_current=current,
                changed_meanwhile=changed,
                unopenable=tuple(unopenable),
            )
        after = page[-1].id
