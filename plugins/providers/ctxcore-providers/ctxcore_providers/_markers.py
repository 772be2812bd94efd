"""The runtime-context block markers: the kit's neutraliser, and removing live blocks from stored text.

Neutralising look-alikes (NFKC, invisible characters, TR39 confusables) is
:func:`ctxcore.kit.neutralize_markers`, shared by every plugin; this module adds
what only this package needs, :func:`strip_runtime_blocks`.
"""

from __future__ import annotations

import re

from ctxcore.kit import CLOSE_MARKER, OPEN_MARKER, has_marker, neutralize_markers

__all__ = ["OPEN_MARKER", "CLOSE_MARKER", "neutralize_markers", "has_marker", "strip_runtime_blocks"]

_LIVE_BLOCK = re.compile(r"\n*\[Runtime Context[^\n]*\](?:.|\n)*?\[/Runtime Context\]\n?")


def strip_runtime_blocks(text: str) -> str:
    """Remove live runtime-context blocks (the exact markers the provider writes).

    Use it before persisting a built user message, or when history holds one.
    """
    return _LIVE_BLOCK.sub("", text).rstrip("\n") if OPEN_MARKER in text else text
