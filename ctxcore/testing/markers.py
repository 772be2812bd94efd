"""Hypothesis strategies for forged runtime-context markers, for property tests of any channel.

``marker_lookalike()`` draws one forged marker — open or close — spelled the
way an attacker would: other brackets and slashes, full-width and mathematical
letters (NFKC-equivalent), homoglyphs drawn from the whole of Unicode's
confusables table (and small capitals and other-script letters it does not
list, and ``rn`` for ``m``), invisible characters
between letters, odd spacing, a dash or underscore between the words, and case. ``text_with_markers()`` hides some in
random text. A provider or filter that passes untrusted text on can assert that
``ctxcore.kit.count_markers`` of its output is 0 for any such input.

Needs ``hypothesis`` (the ``test`` extra); it is imported when a strategy is built.
"""

from __future__ import annotations

import functools
import json
from importlib import resources
from typing import Any

__all__ = ["marker_lookalike", "text_with_markers", "homoglyphs", "EXTRA_HOMOGLYPHS"]

#: look-alikes that Unicode's confusables data does not list, but a reader takes for the letter:
#: Latin small capitals and letters of other scripts (the forms a mixed-script label is caught by).
EXTRA_HOMOGLYPHS: dict[str, str] = {
    "r": "ʀгᴦ", "u": "ᴜцυ", "n": "ɴпη", "t": "ᴛтτ", "i": "ɪι1l|", "m": "ᴍм", "e": "ᴇεҽ", "c": "ᴄϲ", "o": "ᴏо0",
    "x": "хχ", "R": "ʀЯ", "C": "Ϲ", "T": "Т",
}


@functools.cache
def _confusables_graph() -> dict[str, set[str]]:
    """Unicode's confusables (the ``confusable-homoglyphs`` data) as an undirected graph of single characters."""
    raw = json.loads(resources.files("confusable_homoglyphs").joinpath("confusables.json").read_text(encoding="utf-8"))
    graph: dict[str, set[str]] = {}
    for key, glyphs in raw.items():
        for glyph in (g["c"] for g in glyphs):
            if len(key) == 1 and len(glyph) == 1:
                graph.setdefault(key, set()).add(glyph)
                graph.setdefault(glyph, set()).add(key)
    return graph


@functools.cache
def homoglyphs(letter: str) -> str:
    """Every non-ASCII character the confusables table links to ``letter``, directly or through
    other non-ASCII look-alikes (the whole table, not a sample), plus :data:`EXTRA_HOMOGLYPHS`."""
    graph = _confusables_graph()
    seen: set[str] = set()
    todo = [c for c in graph.get(letter, ()) if not c.isascii()]
    while todo:
        c = todo.pop()
        if c not in seen:
            seen.add(c)
            todo.extend(n for n in graph.get(c, ()) if not n.isascii())
    printable = sorted(c for c in seen if c.isprintable() and not c.isspace())
    return "".join(printable) + EXTRA_HOMOGLYPHS.get(letter, "")


_BRACKETS = "[［〔【⟦⟨〈「『❲«‹<{﹝⁅"
_SLASHES = ["/", "／", "⁄", "∕", "⧸", "╱", "\\"]
_INVISIBLE = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", "\u034f", "\u180e", "\u2061", "\U000e0020", "\ufe0f"]
_SPACES = ["", " ", "  ", "\u3000", "\u00a0", "\t", "\n", "\u2003"]
_JOINERS = ["-", "_", ".", " - ", "‐", "—", "‿", "﹏"]  # between the words, where a reader still sees two words


def _letter_variants(c: str) -> list[str]:
    out = [c, c.swapcase()]
    if c.isascii() and c.isalpha():
        out.append(chr(ord(c) + 0xFEE0))  # full width
        base = 0x1D400 if c.isupper() else 0x1D41A  # mathematical bold
        out.append(chr(base + ord(c.upper()) - ord("A")))
    out.extend(homoglyphs(c))
    if c.lower() == "m":
        out.append("rn")  # TR39's own prototype of m
    return out


def marker_lookalike() -> Any:
    """A strategy of forged opening or closing markers (each is a look-alike ``count_markers`` must find)."""
    from hypothesis import strategies as st

    def word(w: str) -> Any:
        letters = [st.tuples(st.sampled_from(_letter_variants(c)), st.sampled_from(["", "", *_INVISIBLE])) for c in w]
        return st.tuples(*letters).map(lambda pairs: "".join(a + b for a, b in pairs))

    return st.tuples(
        st.sampled_from(_BRACKETS),
        st.sampled_from(_SPACES[:3]),
        st.one_of(st.just(""), st.sampled_from(_SLASHES)),
        st.sampled_from(_SPACES),
        word("Runtime"),
        st.sampled_from(_SPACES + _JOINERS),
        word("Context"),
        st.sampled_from(["]", "］", "", " —", "〕"]),
    ).map("".join)


def text_with_markers(max_markers: int = 3) -> Any:
    """A strategy of random text with up to ``max_markers`` forged markers in it."""
    from hypothesis import strategies as st

    filler = st.text(max_size=20)
    return st.lists(st.tuples(filler, marker_lookalike()), min_size=1, max_size=max_markers).flatmap(
        lambda parts: filler.map(lambda tail: "".join(a + b for a, b in parts) + tail))
