"""Which uploaded logos are accepted: PNG, JPEG or WebP, recognised by their bytes, at most 1 MiB.

The type a client declares (``Content-Type``, a file name) is never believed: the logo is served
back publicly with the type found here, so a file that only *claims* to be an image must not get
through. SVG is refused outright, even though it is a common logo format: it is XML that may carry
scripts and external references, and would run in the origin of whoever serves it.
"""

from __future__ import annotations

import enum
import struct

from refcore.errors import BodyTooLarge, ValidationError

MAX_LOGO_BYTES = 1024 * 1024

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_JPEG_SIGNATURE = b"\xff\xd8\xff"
_WEBP_CHUNKS = (b"VP8 ", b"VP8L", b"VP8X")


class ImageType(enum.StrEnum):
    PNG = "image/png"
    JPEG = "image/jpeg"
    WEBP = "image/webp"


def _is_png(data: bytes) -> bool:
    """Signature, then the IHDR chunk (length 13) with a non-zero width and height."""
    if len(data) < 33 or not data.startswith(_PNG_SIGNATURE):
        return False
    length, chunk, width, height = struct.unpack(">I4sII", data[8:24])
    return bool(length == 13 and chunk == b"IHDR" and width > 0 and height > 0)


def _is_jpeg(data: bytes) -> bool:
    """Start-of-image followed by a marker (``FF xx``, ``xx`` not ``00`` or ``FF``)."""
    return len(data) >= 4 and data.startswith(_JPEG_SIGNATURE) and data[3] not in (0x00, 0xFF)


def _is_webp(data: bytes) -> bool:
    """``RIFF`` <size> ``WEBP`` and a VP8 chunk; the RIFF size must fit the data."""
    if len(data) < 20 or data[0:4] != b"RIFF" or data[8:12] != b"WEBP":
        return False
    (riff_size,) = struct.unpack("<I", data[4:8])
    return data[12:16] in _WEBP_CHUNKS and riff_size >= 4 and riff_size + 8 <= len(data)


def _looks_like_svg(data: bytes) -> bool:
    head = data[:1024].lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    return head.startswith((b"<?xml", b"<svg", b"<!doctype svg")) or b"<svg" in head


def sniff_image(data: bytes) -> ImageType | None:
    """The type the bytes really are, or ``None`` when they are none of the accepted ones."""
    if _is_png(data):
        return ImageType.PNG
    if _is_jpeg(data):
        return ImageType.JPEG
    if _is_webp(data):
        return ImageType.WEBP
    return None


def require_logo(data: bytes) -> ImageType:
    """The logo's type; ``413 body_too_large`` over 1 MiB, ``400 validation_error`` otherwise."""
    if len(data) > MAX_LOGO_BYTES:
        raise BodyTooLarge(f"A logo may be at most {MAX_LOGO_BYTES} bytes (1 MiB)", param="logo")
    if not data:
        raise ValidationError("The logo is empty; send the image bytes as the request body", param="logo")
    found = sniff_image(data)
    if found is not None:
        return found
    if _looks_like_svg(data):
        raise ValidationError(
            "SVG logos are not accepted (they can carry scripts); send PNG, JPEG or WebP", param="logo"
        )
    raise ValidationError(
        "The logo is not a PNG, JPEG or WebP image (its type is read from its bytes)", param="logo"
    )
