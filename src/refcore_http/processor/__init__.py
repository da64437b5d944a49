"""The payment processor's side of the integration: its keys, its signature and its event objects.

Everything that knows the processor's vocabulary (the ``Stripe-Signature`` header, event types,
charge, refund and dispute objects) lives here and uses the official ``stripe`` package; the core
(:mod:`refcore.services.processor_events`) only ever sees neutral payments, refunds and disputes.
"""
