"""The runtime-context block markers, and neutralising look-alikes in other text.

A live block is opened by ``[Runtime Context`` and closed by
``[/Runtime Context]``. Text from users, tools or files could contain a marker
(or a variant: other case, extra or missing whitespace, zero-width characters,
full-width brackets and letters) to close the real block early or open a fake
one. :func:`neutralize_markers` rewrites the bracket of every such variant to
``(``, so only the block the provider writes is live.
"""

from __future__ import annotations

import re

__all__ = ["OPEN_MARKER", "CLOSE_MARKER", "neutralize_markers", "has_marker", "strip_runtime_blocks"]

OPEN_MARKER = "[Runtime Context"
CLOSE_MARKER = "[/Runtime Context]"

# zero-width and invisible format characters: joiners, bidi marks/embeddings/isolates,
# invisible operators, variation selectors, tag characters (a regex class body)
_ZW = ("\u00ad\u034f\u061c\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f"
       "\ufe00-\ufe0f\ufeff\U000e0000-\U000e007f")
_GAP = f"[{_ZW}]*"
_SPACE = f"[\\s\u3000{_ZW}]*"


def _char(c: str) -> str:
    """A class matching ``c`` in either case, ASCII or full-width."""
    variants = {c.lower(), c.upper(), chr(ord(c.lower()) + 0xFEE0), chr(ord(c.upper()) + 0xFEE0)}
    return "[" + "".join(re.escape(v) for v in sorted(variants)) + "]"


def _word(word: str) -> str:
    return _GAP.join(_char(c) for c in word)


# bracket, optional slash, "runtime", any gap, "context"
_MARKER = re.compile(
    f"(?P<bracket>[\\[［〔【]){_SPACE}(?P<slash>[/／]?){_SPACE}{_word('runtime')}{_SPACE}{_word('context')}"
)


def has_marker(text: str) -> bool:
    """True when ``text`` holds a marker or a look-alike."""
    return _MARKER.search(text) is not None


def neutralize_markers(text: str) -> str:
    """Replace the opening bracket of every marker look-alike with ``(``."""
    if not text:
        return text
    return _MARKER.sub(lambda m: "(" + m.group(0)[1:], text)


_LIVE_BLOCK = re.compile(r"\n*\[Runtime Context[^\n]*\](?:.|\n)*?\[/Runtime Context\]\n?")


def strip_runtime_blocks(text: str) -> str:
    """Remove live runtime-context blocks (the exact markers the provider writes).

    Use it before persisting a built user message, or when history holds one.
    """
    return _LIVE_BLOCK.sub("", text).rstrip("\n") if OPEN_MARKER in text else text
