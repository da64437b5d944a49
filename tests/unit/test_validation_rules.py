"""Library callers get validation errors, not ValueError, for bad enum filters."""

from __future__ import annotations

import pytest

from refcore.clocks import ManualClock
from refcore.errors import ValidationError
from refcore.services import affiliates, programs, tenancy
from refcore_memstore import memory_runtime


def test_decisions_8_unknown_affiliate_status_filter_is_a_validation_error() -> None:
    rt = memory_runtime(clock=ManualClock())
    _, token = tenancy.create_session(rt, "dev@example.com")
    session = tenancy.authenticate(rt, token)
    org = tenancy.create_organization(rt, session, "Org")
    app = tenancy.create_app(rt, session, org.id, "App")
    program = programs.create_program(
        rt,
        session,
        {
            "app_id": app.id,
            "name": "P",
            "slug": "p",
            "currency": "usd",
            "commission": {"type": "percent", "bps": 1000},
        },
    )
    with pytest.raises(ValidationError) as caught:
        affiliates.list_program_affiliates(rt, session, program.id, status="sleeping")
    assert caught.value.param == "status"
