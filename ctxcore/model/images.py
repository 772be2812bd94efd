"""Image token cost: OpenAI's tile rule and image dimensions from ``data:`` URLs.

OpenAI prices an image input by its detail level: ``low`` costs a flat 85
tokens; ``high`` (and ``auto``, which may pick high) costs 85 plus 170 per
512-pixel tile, after the image is scaled to fit in 2048 x 2048 and then so its
shortest side is at most 768 pixels. Counters need the dimensions for that: they
come from :class:`~ctxcore.model.messages.ImageBlock` ``width``/``height`` when set,
else from the header bytes of a ``data:`` URL (PNG, GIF, JPEG, WebP), else the
image is priced at :data:`UNKNOWN_SIZE_TOKENS`, the most any high-detail image
can cost, so a budget never under-counts an image it cannot measure.
"""

from __future__ import annotations

import base64
import binascii
import math
import struct

from ctxcore.model.messages import ImageBlock

__all__ = [
    "LOW_DETAIL_TOKENS",
    "TILE_TOKENS",
    "UNKNOWN_SIZE_TOKENS",
    "image_size",
    "openai_image_tokens",
    "sniff_size",
]

#: cost of a low-detail image, and the base cost of a high-detail one.
LOW_DETAIL_TOKENS = 85
#: cost of each 512 x 512 tile of a high-detail image.
TILE_TOKENS = 170
#: cost of a high-detail image of unknown size: the maximum, 8 tiles (768 x 2048).
UNKNOWN_SIZE_TOKENS = LOW_DETAIL_TOKENS + TILE_TOKENS * 8

# Enough base64 to decode every header below (a JPEG's SOF marker can sit
# behind EXIF data, so JPEGs get a larger window).
_HEADER_B64_CHARS = 64 * 1024


def openai_image_tokens(width: int | None, height: int | None, detail: str | None = None) -> int:
    """Tokens of one image under OpenAI's rule (``detail`` None means ``auto``)."""
    if detail == "low":
        return LOW_DETAIL_TOKENS
    if not width or not height:
        return UNKNOWN_SIZE_TOKENS
    w, h = float(width), float(height)
    if max(w, h) > 2048:  # fit inside 2048 x 2048
        scale = 2048 / max(w, h)
        w, h = w * scale, h * scale
    if min(w, h) > 768:  # then shortest side 768
        scale = 768 / min(w, h)
        w, h = w * scale, h * scale
    tiles = math.ceil(w / 512) * math.ceil(h / 512)
    return LOW_DETAIL_TOKENS + TILE_TOKENS * tiles


def image_size(block: ImageBlock) -> tuple[int, int] | None:
    """``(width, height)`` of an image block: its fields, else its ``data:`` URL header."""
    if block.width and block.height:
        return block.width, block.height
    url = block.url
    if not url.startswith("data:"):
        return None
    meta, sep, payload = url.partition(",")
    if not sep or not meta.endswith(";base64"):
        return None
    head = payload[:_HEADER_B64_CHARS]
    head = head[: len(head) - len(head) % 4]
    try:
        data = base64.b64decode(head, validate=False)
    except (binascii.Error, ValueError):
        return None
    return sniff_size(data)


def sniff_size(data: bytes) -> tuple[int, int] | None:
    """Dimensions from the first bytes of a PNG, GIF, JPEG or WebP file, or ``None``."""
    if data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR" and len(data) >= 24:
        w, h = struct.unpack(">II", data[16:24])
        return (w, h) if w and h else None
    if data[:6] in (b"GIF87a", b"GIF89a") and len(data) >= 10:
        w, h = struct.unpack("<HH", data[6:10])
        return (w, h) if w and h else None
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return _webp_size(data)
    if data[:2] == b"\xff\xd8":
        return _jpeg_size(data)
    return None


def _webp_size(data: bytes) -> tuple[int, int] | None:
    chunk = data[12:16]
    if chunk == b"VP8X" and len(data) >= 30:
        w = int.from_bytes(data[24:27], "little") + 1
        h = int.from_bytes(data[27:30], "little") + 1
        return w, h
    if chunk == b"VP8 " and len(data) >= 30:
        w, h = struct.unpack("<HH", data[26:30])
        return (w & 0x3FFF, h & 0x3FFF) if w and h else None
    if chunk == b"VP8L" and len(data) >= 25:
        bits = int.from_bytes(data[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    return None


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    i = 2
    while i + 4 <= len(data):
        if data[i] != 0xFF:
            return None
        marker = data[i + 1]
        if marker == 0xFF:  # fill byte
            i += 1
            continue
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:  # markers without a length
            i += 2
            continue
        (length,) = struct.unpack(">H", data[i + 2 : i + 4])
        # SOF0..SOF15 carry the frame size, except DHT (C4), JPG (C8) and DAC (CC).
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            if i + 9 > len(data):
                return None
            h, w = struct.unpack(">HH", data[i + 5 : i + 9])
            return (w, h) if w and h else None
        i += 2 + length
    return None
