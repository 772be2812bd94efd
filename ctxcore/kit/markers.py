"""The runtime-context markers, and the one neutraliser for every untrusted channel.

A live runtime-context block is opened by ``[Runtime Context`` and closed by
``[/Runtime Context]``; only the ``runtime_context`` provider writes them, into
the current user turn. Any other text that reaches the model — history of every
role, tool results, tool descriptions taken from state, workspace files, memory,
summaries, attachment names — could carry a marker, or something a model reads
as one, to close the real block early or open a fake one.

Matching is done on a *skeleton* of the text (Unicode TR39 style), one
character at a time, so positions map back to the original:

1. NFKC (full-width and mathematical alphanumerics become ASCII);
2. format and invisible characters are dropped: categories Cf, Cc (except
   whitespace), Mn and Me (zero-width joiners, bidi controls, variation
   selectors, combining marks) and the other default-ignorable code points;
3. confusables are folded to their ASCII prototype with the data of the
   ``confusable-homoglyphs`` package (generated from Unicode's
   ``confusables.txt``): Cyrillic ``а``, Greek ``ο``, the fraction slash ``⁄``;
   a character without a prototype is case-folded and looked up again.

A *bracket* is ``[``, ``<``, ``{`` or any opening or initial-quote punctuation
(``〔``, ``【``, ``⟦``, ``«`` ...) except a parenthesis; then optional spaces, an
optional slash (or a look-alike), spaces, the skeleton of ``runtime``, spaces,
the skeleton of ``context``. :func:`neutralize_markers` replaces the bracket of
each match with ``(``, which is not a bracket, so the function is idempotent and
a neutralised marker stays readable. The scan is linear: a C-level search finds
the brackets, and each is followed only as far as the text still matches.
"""

from __future__ import annotations

import functools
import json
import re
import unicodedata
from collections.abc import Callable, Iterator
from importlib import resources

__all__ = ["OPEN_MARKER", "CLOSE_MARKER", "neutralize_markers", "has_marker", "count_markers", "skeleton"]

OPEN_MARKER = "[Runtime Context"
CLOSE_MARKER = "[/Runtime Context]"
_REPLACEMENT = "("

# default-ignorable code points that are letters or spacing marks, not Cf/Mn
_IGNORABLE = frozenset("\u115f\u1160\u3164\uffa0\u17b4\u17b5\u2800")
_DROPPED_CATEGORIES = frozenset({"Cf", "Mn", "Me", "Cs", "Co", "Cn"})
_WORDS = ("runtime", "context")


@functools.cache
def _confusables() -> dict[str, str]:
    """Single characters mapped to their ASCII prototype (directly, or through one non-ASCII look-alike)."""
    raw = json.loads(resources.files("confusable_homoglyphs").joinpath("confusables.json").read_text(encoding="utf-8"))
    glyphs = {k: [g["c"] for g in v] for k, v in raw.items() if len(k) == 1 and not k.isascii()}
    table: dict[str, str] = {}
    for ch, alternatives in glyphs.items():
        direct = next((a for a in alternatives if a.isascii() and a.isprintable() and a.strip()), None)
        if direct is not None:  # TR39 writes m's prototype as "rn"; here m stays one letter
            table[ch] = "m" if direct == "rn" else direct.casefold()
    for ch, alternatives in glyphs.items():
        if ch not in table:
            via = next((table[a] for a in alternatives if a in table), None)
            if via is not None:
                table[ch] = via
    return table


@functools.lru_cache(maxsize=65536)
def _fold(c: str) -> str:
    """The skeleton of one character: '' for invisible ones, else NFKC, case-folded, confusables folded."""
    if c.isascii():
        if c.isprintable() or c.isspace():
            return c.lower()
        return ""  # ASCII control characters
    table = _confusables()
    if c in table:  # the confusable prototype first: NFKC turns some look-alikes into other letters (ϲ -> ς)
        return table[c]
    out = []
    for ch in unicodedata.normalize("NFKC", c):
        if ch in _IGNORABLE or unicodedata.category(ch) in _DROPPED_CATEGORIES:
            continue
        if unicodedata.category(ch) == "Cc" and not ch.isspace():
            continue
        proto = table.get(ch)  # before case folding: folding first turns some letters into others (ϲ -> σ)
        out.append(proto if proto is not None else "".join(table.get(x, x) for x in ch.casefold()))
    return "".join(out)


def skeleton(text: str) -> str:
    """The matching form of ``text`` (see the module docstring); exposed for tests and audits."""
    return "".join(map(_fold, text))


def _is_bracket(c: str) -> bool:
    folded = _fold(c)
    if not folded or unicodedata.normalize("NFKC", c).startswith("("):  # "(" is what neutralised brackets become
        return False
    return folded[0] in "[<{" or unicodedata.category(c) in ("Ps", "Pi")


@functools.cache
def _bracket_search() -> Callable[..., re.Match[str] | None]:
    bmp = [chr(cp) for cp in range(0x80, 0x10000)]  # every Ps/Pi character and NFKC bracket is in the BMP
    chars = {c for c in bmp if unicodedata.category(c) in ("Ps", "Pi")}
    chars.update(ch for ch, proto in _confusables().items() if proto in ("[", "<", "{"))
    chars.update(c for c in bmp if unicodedata.normalize("NFKC", c)[:1] in ("[", "<", "{"))
    chars.update("[<{")
    brackets = sorted(c for c in chars if _is_bracket(c))
    # a bracket directly followed by printable ASCII other than a slash or an "r" cannot open a
    # marker: rejected inside the regex engine, so JSON and code full of brackets stay fast
    return re.compile("[" + "".join(re.escape(c) for c in brackets) + r"](?!\s*[\x21-\x2e\x30-\x51\x53-\x5b\x5d-\x71\x73-\x7e])").search


@functools.cache
def _targets() -> tuple[str, str, str]:
    return skeleton("/"), skeleton(_WORDS[0]), skeleton(_WORDS[1])


def _folded_from(text: str, start: int) -> Iterator[str]:
    for i in range(start, len(text)):
        yield from _fold(text[i])


def _matches_at(text: str, i: int) -> bool:
    """Whether the bracket at ``text[i]`` opens a marker look-alike."""
    slash, first, second = _targets()
    stream = _folded_from(text, i + 1)
    ch = next(stream, "")

    def skip_space(ch: str) -> str:
        while ch and ch.isspace():
            ch = next(stream, "")
        return ch

    ch = skip_space(ch)
    if ch and (ch in slash or ch == "\\"):
        ch = skip_space(next(stream, ""))
    for word in (first, second):
        for expected in word:
            if ch != expected:
                return False
            ch = next(stream, "")
        ch = skip_space(ch)
    return True


def _marker_starts(text: str) -> Iterator[int]:
    search = _bracket_search()
    pos = 0
    while True:
        m = search(text, pos)
        if m is None:
            return
        start = m.start()
        if _matches_at(text, start):
            yield start
        pos = start + 1


def has_marker(text: str) -> bool:
    """True when ``text`` holds a marker or a look-alike of one."""
    return bool(text) and next(_marker_starts(text), None) is not None


def count_markers(text: str) -> int:
    """How many markers and look-alikes ``text`` holds (live ones included)."""
    return sum(1 for _ in _marker_starts(text)) if text else 0


def neutralize_markers(text: str) -> str:
    """``text`` with the bracket of every marker look-alike replaced by ``(`` (idempotent)."""
    if not text:
        return text
    starts = list(_marker_starts(text))
    if not starts:
        return text
    parts, last = [], 0
    for s in starts:
        parts.append(text[last:s])
        parts.append(_REPLACEMENT)
        last = s + 1
    parts.append(text[last:])
    return "".join(parts)
