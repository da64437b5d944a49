"""The webhook URL rule (interface 4.6): a URL is accepted only if a delivery could reach its host.

These URLs used to be accepted at ``PUT /v1/apps/:appId/webhook`` and then failed every attempt
(httpx refused them, the resolver's IDNA codec refused them, or no DNS name can be spelled so).
``tests/webhooks/test_url_rule_matches_delivery.py`` holds the rule to the delivering side itself.
"""

from __future__ import annotations

import pytest

from refcore.errors import ValidationError
from refcore.rules.webhook_url import MAX_URL_LENGTH, legacy_ipv4, require_webhook_url

#: Accepted before and deliverable: they must stay accepted.
DELIVERABLE = [
    "https://example.com/",
    "https://hooks.example.com:8443/in?token=abc#frag",
    "https://EXAMPLE.com/",
    "https://example.com./",  # a fully qualified name
    "https://localhost:9000/x",
    "https://a_b.example.com/",  # underscores are in DNS (SRV-style names), httpx sends them
    "https://-a.example/",
    "https://ab--cd.example/",
    "https://" + "a" * 63 + ".example/",
    "https://" + ".".join(["a" * 62] * 4) + ".a/",  # 253 characters, the most DNS holds
    "https://bücher.example/",
    "https://BÜCHER.example/",  # lower-cased first, as httpx does
    "https://Straße.de/",  # IDNA 2008 keeps ß
    "https://例え.テスト/",
    "https://bücher。example/",  # an ideographic full stop separates labels in IDNA
    "https://xn--bcher-kva.example/",
    "https://XN--BCHER-KVA.example/",
    "https://www.xn--ls8h.la/",  # an IDNA 2003 registration (an emoji), sent as it stands
    "https://a_b.xn--bcher-kva.example/",
    "https://1.2.3.4/",
    "https://1.2.3.4:444/",
    "https://127.0.0.1:8632/",
    "https://hooks1.example.com/",  # digits in a name are no address
    "https://123.example.com/",
    "https://0x7f.example.com/",  # nor a hexadecimal label before the last
    "https://1.2.3.4.example/",
    "https://[::1]:8443/x",
    "https://[2001:db8::1]/",
    "https://[::ffff:127.0.0.1]/",
    "https://[fe80::1%25eth0]/",
    "https://a.b.c.d.e/",
    "https://1.2.3.com/",
    "https://example.com/path-ünicode?q=✓",
]

#: Accepted before, never deliverable: each is ``400 validation_error`` with ``param: url``.
UNDELIVERABLE = [
    "https://0177.0.0.1/",  # non-canonical IPv4: httpx refuses the URL
    "https://127.000.000.001/",
    "https://09.1.1.1/",
    "https://256.1.1.1/",
    "https://ⓛⓞⓒⓐⓛⓗⓞⓢⓣ/",  # not valid IDNA 2008 (httpx refuses; browsers map it to localhost)
    "https://\uff45\uff58\uff41\uff4d\uff50\uff4c\uff45.com/",  # fullwidth letters: not IDNA 2008 either
    "https://☃.net/",
    "https://a\u200db.example/",  # ZERO WIDTH JOINER, not after a virama
    "https://bü_cher.example/",  # in an internationalized name every label is letters, digits, hyphens
    "https://bü--cher.example/",
    "https://-bücher.example/",
    "https://a..b/",  # empty label: the resolver's IDNA codec refuses it
    "https://.example.com/",
    "https://./",
    "https://bücher..example/",
    "https://xn--/",  # not an A-label
    "https://xn--zz.example/",
    "https://xn---bbk.example/",  # a non-canonical spelling of xn--bbk
    "https://xn--abc-.example/",
    "https://www.xn--zz.example/",
    "https://xn--ls8h.la/",  # httpx decodes a host starting with xn-- by IDNA 2008, which refuses it
    "https://xn--bcher-kva.a_b.example/",  # ... and every label of it
    "https://" + "a" * 64 + ".example/",
    "https://" + "a" * 300 + "/",
    "https://" + ".".join(["a" * 62] * 4) + ".ab/",  # 254 characters
    "https://evil.com%40localhost/",  # percent in the host
    "https://ex%41mple.com/",
    "https://a|b.example/",
    "https://a\\b.example/",
    # A numeric spelling of an address: the SSRF guard reads it as 127.0.0.1, but TLS verifies
    # the certificate against the host as written, so every attempt failed.
    "https://2130706433:8632/",
    "https://0x7f000001:8632/",
    "https://127.1:8632/",
    "https://2130706433/",
    "https://0X7F000001/",
    "https://017700000001/",
    "https://0x7f.1/",
    "https://0x7f.0.0.1/",
    "https://1.2.3.0x4/",
    "https://1.2.3/",
    "https://0/",
    "https://0x/",
    "https://1.2.3.4.5/",  # ends in a number, is no address
    "https://a.1/",
    "https://1.2.3.4./",
    "https://4294967296/",
    "https://bücher.123/",
    "https://[v1.x]/",
    "https://[::1%]/",
    "https://example.com/\udc80",  # an unpaired surrogate
]


@pytest.mark.parametrize("url", DELIVERABLE)
def test_deliverable_urls_are_accepted(url: str) -> None:
    assert require_webhook_url(url) == url


@pytest.mark.parametrize("url", UNDELIVERABLE)
def test_urls_no_delivery_can_reach_are_validation_errors_naming_url(url: str) -> None:
    with pytest.raises(ValidationError) as refused:
        require_webhook_url(url)
    assert refused.value.param == "url"


def test_the_refusals_say_what_is_wrong_with_the_host() -> None:
    def message(url: str) -> str:
        with pytest.raises(ValidationError) as refused:
            require_webhook_url(url)
        return str(refused.value)

    assert "leading zeros" in message("https://0177.0.0.1/")
    assert "U+24DB" in message("https://ⓛⓞⓒⓐⓛⓗⓞⓢⓣ/")
    assert "empty label" in message("https://a..b/")
    assert "xn--" in message("https://xn--/")
    assert "longer than 63" in message("https://" + "a" * 300 + ".com/")
    assert "percent-encoding" in message("https://evil.com%40localhost/")
    assert "ends in a number" in message("https://1.2.3.4.5/")
    assert "numeric spelling" in message("https://127.1:8632/")
    assert "not an IPv4 address" in message("https://1.2.3.4.5/")


def test_the_shape_rules_still_hold() -> None:
    for url in (
        "http://example.com/",
        "https://user:pw@example.com/",
        "https://user@example.com/",
        "https:///nohost",
        "https://example.com:0/",
        "https://example.com:99999/",
        "https://example.com/a b",
        " https://example.com/",
        "https://example.com/" + "x" * MAX_URL_LENGTH,
    ):
        with pytest.raises(ValidationError):
            require_webhook_url(url)


@pytest.mark.parametrize(
    ("host", "address"),
    [
        ("2130706433", "127.0.0.1"),
        ("0x7f000001", "127.0.0.1"),
        ("017700000001", "127.0.0.1"),
        ("127.1", "127.0.0.1"),
        ("0x7f.0.0.1", "127.0.0.1"),
        ("0177.0.0.1", "127.0.0.1"),  # inet_aton reads it; httpx refuses the URL (above)
        ("1.2.3", "1.2.0.3"),
        ("0", "0.0.0.0"),
        ("0x", "0.0.0.0"),
        ("4294967295", "255.255.255.255"),
        ("4294967296", None),
        ("1.2.3.4.5", None),
        ("08", None),
        ("256.1", None),
        ("a.1", None),
        ("", None),
    ],
)
def test_numeric_hosts_are_read_as_inet_aton_reads_them(host: str, address: str | None) -> None:
    parsed = legacy_ipv4(host)
    assert (str(parsed) if parsed is not None else None) == address
