"""``refcore.rules.images``: the type comes from the bytes; SVG and look-alikes are refused."""

from __future__ import annotations

import pytest

from refcore.errors import BodyTooLarge, ValidationError
from refcore.rules.images import MAX_LOGO_BYTES, ImageType, require_logo, sniff_image
from tests.selfservice.images import BARE_SVG, HTML, SVG, jpeg, png, webp


def test_each_accepted_type_is_recognised() -> None:
    assert (sniff_image(png()), sniff_image(jpeg()), sniff_image(webp())) == (
        ImageType.PNG,
        ImageType.JPEG,
        ImageType.WEBP,
    )


@pytest.mark.parametrize(
    "data",
    [
        b"\x89PNG\r\n\x1a\n",  # a signature with no IHDR
        png()[:8] + b"\x00\x00\x00\x0dIHDX" + png()[16:],  # the wrong first chunk
        png()[:16] + b"\x00\x00\x00\x00" + png()[20:],  # zero width
        b"\xff\xd8\xff",  # a JPEG start with nothing after it
        b"\xff\xd8\xff\x00\x00",  # not a marker
        b"RIFF\x00\x00\x00\x00WEBPVP8 ",  # too short
        webp()[:12] + b"AVI " + webp()[16:],  # RIFF of another kind
        webp()[:4] + b"\xff\xff\x00\x00" + webp()[8:],  # a RIFF size beyond the data
        b"GIF89a\x01\x00\x01\x00\x00\x00\x00",
        b"BM\x00\x00",
        HTML,
    ],
)
def test_look_alikes_are_not_images(data: bytes) -> None:
    assert sniff_image(data) is None
    with pytest.raises(ValidationError) as refused:
        require_logo(data)
    assert refused.value.param == "logo"


@pytest.mark.parametrize("data", [SVG, BARE_SVG, b"\xef\xbb\xbf<svg/>", b"<!DOCTYPE svg PUBLIC><svg/>"])
def test_svg_is_refused_by_name(data: bytes) -> None:
    with pytest.raises(ValidationError, match="SVG"):
        require_logo(data)


def test_the_size_limit_is_one_mib_inclusive() -> None:
    at_limit = png() + b"\x00" * (MAX_LOGO_BYTES - len(png()))
    assert require_logo(at_limit) is ImageType.PNG
    with pytest.raises(BodyTooLarge):
        require_logo(at_limit + b"\x00")


def test_an_empty_logo_is_refused() -> None:
    with pytest.raises(ValidationError):
        require_logo(b"")
