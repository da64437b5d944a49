"""A capture's fields are checked by one rule, whether they come as a ``CaptureRequest`` or one
by one (a browser's capture, past the pipeline): the same pending capture, or the same error."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from refcore.errors import RefcoreError
from refcore.models import Mode
from refcore.services.principal import Scope
from refcore.services.tracking import (
    Caller,
    CaptureRequest,
    Credential,
    PendingCapture,
    check_capture,
    check_capture_fields,
)

#: Values around each field's limits (64 for ``via`` and the IP, 2048 for URLs, 1024 for the
#: user agent), blank text, IPs in long and short forms, and other JSON types.
_VALUES = st.one_of(
    st.none(),
    st.text(max_size=6),
    st.sampled_from(["Acme-Ally", " ", "", "x" * 64, "x" * 65, "p" * 2048, "p" * 2049, "a" * 1025]),
    st.sampled_from(["127.0.0.1", "2001:0db8:0000::0001", "not-an-ip"]),
    st.integers(),
    st.booleans(),
)
_CALLERS = st.sampled_from(
    [None, Credential("key_test_x"), Scope(app_id="app_1", mode=Mode.TEST)],
)


def _outcome(check: Any) -> PendingCapture | tuple[str, str | None, str]:
    try:
        result: PendingCapture = check()
    except RefcoreError as error:
        return error.code, error.param, str(error)
    return result


@given(fields=st.tuples(_VALUES, _VALUES, _VALUES, _VALUES, _VALUES), caller=_CALLERS)
def test_check_capture_fields_checks_as_check_capture_does(
    fields: tuple[Any, Any, Any, Any, Any], caller: Caller
) -> None:
    via, page, referrer, visitor_ip, visitor_user_agent = fields
    request = CaptureRequest(
        via=via, page=page, referrer=referrer, visitor_ip=visitor_ip, visitor_user_agent=visitor_user_agent
    )
    assert _outcome(lambda: check_capture_fields(*fields, caller=caller)) == _outcome(
        lambda: check_capture(request, caller=caller)
    )


def test_check_capture_fields_keeps_each_field_in_its_place() -> None:
    pending = check_capture_fields(
        "Acme-Ally", "https://shop.example/", "https://news.example/", "2001:0db8::1", "Firefox", caller=None
    )
    assert pending == PendingCapture(
        code="acme-ally",
        caller=None,
        page="https://shop.example/",
        referrer="https://news.example/",
        visitor_ip="2001:0db8::1",  # a public capture's IP comes from the connection, as it is
        visitor_user_agent="Firefox",
    )
    keyed = check_capture_fields("acme-ally", None, None, "2001:0db8::1", None, caller=Credential("k"))
    assert keyed.visitor_ip == "2001:db8::1"  # a server capture's is the caller's word: parsed


def test_decisions_page_and_referrer_are_kept_as_sent_not_parsed_as_urls() -> None:
    """docs/decisions.md, Tracking: a web view's app scheme, a ``file:`` page or a truncated
    referrer is still a click; the text is kept exactly, and only its length is limited."""
    for page, referrer in [
        ("android-app://com.example.shop/", "file:///index.html"),
        ("javascript:alert(1)", "https://news.exa"),
        ("not a url at all", "//news.example"),
    ]:
        pending = check_capture_fields("ally", page, referrer, None, None, caller=None)
        assert (pending.page, pending.referrer) == (page, referrer)
    too_long = "https://shop.example/" + "p" * 2028
    assert len(too_long) == 2049
    with pytest.raises(RefcoreError) as refused:
        check_capture_fields("ally", too_long, None, None, None, caller=None)
    assert (refused.value.code, refused.value.param) == ("validation_error", "page")
