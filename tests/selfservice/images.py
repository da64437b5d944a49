"""Small, real images of each accepted type, and impostors, built in code (no binary fixtures)."""

from __future__ import annotations

import base64
import struct
import zlib


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def png(width: int = 1, height: int = 1) -> bytes:
    """A valid truecolour PNG of white pixels."""
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    rows = b"".join(b"\x00" + b"\xff\xff\xff" * width for _ in range(height))
    return (
        b"\x89PNG\r\n\x1a\n"
        + _png_chunk(b"IHDR", header)
        + _png_chunk(b"IDAT", zlib.compress(rows))
        + _png_chunk(b"IEND", b"")
    )


def jpeg() -> bytes:
    """The start of a JFIF file (SOI, APP0) and the end marker: what a sniffer looks at."""
    app0 = b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    return b"\xff\xd8\xff\xe0" + struct.pack(">H", len(app0) + 2) + app0 + b"\xff\xd9"


def webp() -> bytes:
    """A 1x1 lossless WebP (34 bytes: RIFF header, ``WEBP``, one ``VP8L`` chunk)."""
    return base64.b64decode("UklGRhoAAABXRUJQVlA4TA0AAAAvAAAAEAcQERGIiP4HAA==")


SVG = b'<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'
BARE_SVG = b'  <svg xmlns="http://www.w3.org/2000/svg" width="1" height="1"/>'
HTML = b"<!doctype html><html><body><script>alert(document.cookie)</script></body></html>"
