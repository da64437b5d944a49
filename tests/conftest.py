"""Shared test configuration: Hypothesis profiles.

``quick`` (default) keeps the local loop fast; ``ci`` (``HYPOTHESIS_PROFILE=ci``, set by
``.ci/run``) runs at least 1,000 examples for the ledger state machine on the memory store.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "quick", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "ci", max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "quick"))
