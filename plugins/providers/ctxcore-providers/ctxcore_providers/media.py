"""Attachments of the current user message: images become image blocks, the rest path references.

The image type is detected from the file's first bytes (PNG, JPEG, GIF, WebP),
never from its extension, so ``photo.png`` holding a JPEG is sent as
``image/jpeg`` and ``notes.png`` holding text becomes a path reference.
"""

from __future__ import annotations

import base64
import stat
from collections.abc import Sequence
from pathlib import Path

from ctxcore import ImageBlock
from ctxcore.kit import FileRefused, read_capped

__all__ = ["sniff_image_type", "attachment_blocks", "MAX_IMAGE_BYTES"]

#: larger images are referenced by path instead of inlined.
MAX_IMAGE_BYTES = 20 * 1024 * 1024


def sniff_image_type(head: bytes) -> str | None:
    """The MIME type of an image from its first bytes, or ``None`` when it is not a known image."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if len(head) >= 12 and head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def attachment_blocks(paths: Sequence[str | Path], *, max_image_bytes: int = MAX_IMAGE_BYTES) -> tuple[list[ImageBlock], list[str]]:
    """Image blocks (data URLs) for image files, and reference lines for everything else."""
    images: list[ImageBlock] = []
    references: list[str] = []
    for raw in paths:
        path = Path(raw)
        try:
            st = path.stat()
        except (OSError, ValueError):  # ValueError: a NUL byte in the name
            references.append(f"[Attachment (not found): {path}]")
            continue
        if not stat.S_ISREG(st.st_mode) or st.st_size > max_image_bytes:
            references.append(f"[Attachment: {path}]")
            continue
        try:  # fstat on the open descriptor: a FIFO swapped in after stat() is refused, never waited on
            data = read_capped(str(path.absolute()), max_bytes=max_image_bytes, what="attachment")  # never "-" (stdin)
        except FileRefused:
            references.append(f"[Attachment: {path}]")
            continue
        mime = sniff_image_type(data[:16])
        if mime is None:
            references.append(f"[Attachment: {path}]")
            continue
        images.append(ImageBlock(url=f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"))
    return images, references
