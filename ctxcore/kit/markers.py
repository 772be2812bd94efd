"""The runtime-context markers, and the one neutraliser for every untrusted channel.

A live runtime-context block is opened by ``[Runtime Context`` and closed by
``[/Runtime Context]``; only the ``runtime_context`` provider writes them, into
the current user turn. Any other text that reaches the model — history of every
role, tool results, tool descriptions taken from state, workspace files, memory,
summaries, attachment names — could carry a marker, or something a model reads
as one, to close the real block early or open a fake one.

Matching is done on a *skeleton* of the text (Unicode TR39 style), one
character at a time, so positions map back to the original:

1. NFKD (full-width and mathematical alphanumerics become ASCII, accents
   become marks);
2. format and invisible characters are dropped: categories Cf, Cc (except
   whitespace), Mn and Me (zero-width joiners, bidi controls, variation
   selectors, combining marks) and the other default-ignorable code points;
3. confusables are folded to their ASCII prototype with the data of the
   ``confusable-homoglyphs`` package (generated from Unicode's
   ``confusables.txt``), following chains of look-alikes to the ASCII
   prototype (the full skeleton of the marker vocabulary): Cyrillic ``а``,
   Greek ``ο``, the fraction slash ``⁄``; Latin small capitals (``ʀ``, ``ᴍ``)
   fold to their letter; a character without a prototype is case-folded and
   looked up again.
4. mixed scripts: in a bracketed label, a letter of another script that has no
   prototype (Cyrillic ``м``, ``т``, ``ц``, Greek ``ε``) stands for the expected
   letter, as long as at least as many letters match exactly; ``1``, ``l`` and
   ``|`` read as ``i``, ``0`` as ``o``, and ``rn`` as ``m`` (TR39's own
   prototype of ``m``; the skeleton keeps ``m`` one letter, the label accepts
   both).

A *bracket* is ``[``, ``<``, ``{`` or any opening or initial-quote punctuation
(``〔``, ``【``, ``⟦``, ``«`` ...) except a parenthesis; then optional spaces, an
optional slash (or a look-alike), spaces, the skeleton of ``runtime``, spaces or
one joiner (a hyphen, underscore or dot, a look-alike of one, or any dash or
connector punctuation: ``[Runtime-Context``, ``[Runtime — Context``),
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
    """Single characters mapped to their ASCII prototype, through any chain of non-ASCII look-alikes.

    The package's table is a graph (each character lists its look-alikes); the
    prototype of a character is the first ASCII letter reached from it through
    non-ASCII characters only, which is Unicode's full skeleton mapping for
    single characters (``т`` -> ``ᴛ`` -> no ASCII, ``ᴦ`` -> ``r``, ``𝚛`` -> ``r``).
    """
    raw = json.loads(resources.files("confusable_homoglyphs").joinpath("confusables.json").read_text(encoding="utf-8"))
    glyphs = {k: [g["c"] for g in v] for k, v in raw.items() if len(k) == 1 and not k.isascii()}
    table: dict[str, str] = {}
    for ch, alternatives in glyphs.items():
        direct = next((a for a in alternatives if a.isascii() and a.isprintable() and a.strip()), None)
        if direct is not None:  # TR39 writes m's prototype as "rn"; here m stays one letter
            table[ch] = "m" if direct == "rn" else direct.casefold()
    changed = True
    while changed:  # follow chains to a fixed point: a look-alike of a look-alike is a look-alike
        changed = False
        for ch, alternatives in glyphs.items():
            if ch not in table:
                via = next((table[a] for a in alternatives if a in table), None)
                if via is not None:
                    table[ch] = via
                    changed = True
    return table


_SMALL_CAPITAL = re.compile(r"LATIN LETTER SMALL CAPITAL ([A-Z])$")


@functools.lru_cache(maxsize=65536)
def _fold(c: str) -> str:
    """The skeleton of one character: '' for invisible ones, else NFKD without marks, case-folded, confusables folded."""
    if c.isascii():
        if c.isprintable() or c.isspace():
            return c.lower()
        return ""  # ASCII control characters
    table = _confusables()
    if c in table:  # the confusable prototype first: NFKC turns some look-alikes into other letters (ϲ -> ς)
        return table[c]
    small_capital = _SMALL_CAPITAL.match(unicodedata.name(c, ""))
    if small_capital:  # ʀ, ᴍ, ᴛ: read as the letter they are a small form of
        return small_capital.group(1).lower()
    out = []
    for ch in unicodedata.normalize("NFKD", c):  # decomposed, so accents drop off as marks (ŕ -> r)
        if ch in _IGNORABLE or unicodedata.category(ch) in _DROPPED_CATEGORIES:
            continue
        if unicodedata.category(ch) == "Cc" and not ch.isspace():
            continue
        proto = table.get(ch)  # before case folding: folding first turns some letters into others (ϲ -> σ)
        out.append(proto if proto is not None else "".join(table.get(x, x) for x in ch.casefold()))
    return "".join(out)


@functools.lru_cache(maxsize=65536)
def _foreign_letter(c: str) -> bool:
    """A letter of a script other than Latin (Cyrillic ``м``, Greek ``ε``, Armenian ...)."""
    return not c.isascii() and unicodedata.category(c).startswith("L") and not unicodedata.name(c, "").startswith("LATIN")


def skeleton(text: str) -> str:
    """The matching form of ``text`` (see the module docstring); exposed for tests and audits."""
    return "".join(map(_fold, text))


def _is_bracket(c: str) -> bool:
    folded = _fold(c)
    if not folded or unicodedata.normalize("NFKC", c).startswith("("):  # "(" is what neutralised brackets become
        return False
    return folded[0] in "[<{" or unicodedata.category(c) in ("Ps", "Pi")


def _compute_brackets() -> str:
    """Every character that opens a marker (:func:`_is_bracket`), in code point order, computed from the data.

    Walks the BMP twice with :mod:`unicodedata` and loads the confusables table:
    tens of milliseconds, so :func:`_brackets` prefers the recorded result.
    """
    bmp = [chr(cp) for cp in range(0x80, 0x10000)]  # every Ps/Pi character and NFKC bracket is in the BMP
    chars = {c for c in bmp if unicodedata.category(c) in ("Ps", "Pi")}
    chars.update(ch for ch, proto in _confusables().items() if proto in ("[", "<", "{"))
    chars.update(c for c in bmp if unicodedata.normalize("NFKC", c)[:1] in ("[", "<", "{"))
    chars.update("[<{")
    return "".join(sorted(c for c in chars if _is_bracket(c)))


def _bracket_data_key() -> tuple[str, str]:
    """The data :func:`_compute_brackets` depends on: this Python's Unicode version and the confusables version."""
    import confusable_homoglyphs

    return unicodedata.unidata_version, str(getattr(confusable_homoglyphs, "__version__", ""))


def _brackets() -> str:
    """The opening characters: recorded for this Unicode and confusables data (``_bracket_table``), else computed."""
    from ctxcore.kit._bracket_table import BRACKETS

    recorded = BRACKETS.get(_bracket_data_key())
    return recorded if recorded is not None else _compute_brackets()


@functools.cache
def _bracket_search() -> Callable[..., re.Match[str] | None]:
    brackets = _brackets()
    # a bracket directly followed by printable ASCII other than a slash or an "r" cannot open a
    # marker: rejected inside the regex engine, so JSON and code full of brackets stay fast
    return re.compile("[" + "".join(re.escape(c) for c in brackets) + r"](?!\s*[\x21-\x2e\x30-\x51\x53-\x5b\x5d-\x71\x73-\x7e])").search


@functools.cache
def _targets() -> tuple[str, str, str]:
    return skeleton("/"), skeleton(_WORDS[0]), skeleton(_WORDS[1])


#: skeleton characters a reader takes for a marker letter (TR39 maps I, 1 and | to l; 0 reads as o)
_READS_AS = {"i": "il1|", "o": "o0"}
#: what may join the two words of a label instead of a space (a reader still sees two words)
_JOINERS = "-_."


class _Scan:
    """The skeleton of ``text`` from ``pos`` on, one character at a time, knowing the original character."""

    def __init__(self, text: str, pos: int) -> None:
        self.text, self.pos, self.rest = text, pos, ""
        self.ch = self.orig = ""
        self.first = False  # whether ``ch`` is the first skeleton character of ``orig``
        self.exact = self.wild = 0
        self.advance()

    def advance(self) -> None:
        self.first = False
        while not self.rest and self.pos < len(self.text):
            self.orig, self.rest, self.first = self.text[self.pos], _fold(self.text[self.pos]), True
            self.pos += 1
        self.ch, self.rest = (self.rest[0], self.rest[1:]) if self.rest else ("", "")

    def skip_space(self) -> None:
        while self.ch and self.ch.isspace():
            self.advance()

    def skip_joiner(self) -> None:
        """Spaces, or at most one joiner with spaces around it (``Runtime - Context``, ``Runtime_Context``)."""
        self.skip_space()
        if self.ch and (self.ch in _JOINERS or (self.first and unicodedata.category(self.orig) in ("Pd", "Pc"))):
            self.rest = ""  # the whole joiner, whatever its skeleton
            self.advance()
            self.skip_space()

    def pair(self, first: str, second: str) -> bool:
        """Consume ``first`` then ``second`` (``rn`` read as ``m``) and say so, or consume nothing."""
        saved = (self.pos, self.rest, self.ch, self.orig, self.first)
        if self.ch == first:
            self.advance()
            if self.ch == second:
                self.advance()
                return True
        self.pos, self.rest, self.ch, self.orig, self.first = saved
        return False

    def letter(self, expected: str) -> bool:
        """Consume one letter of the label: the expected one, one that reads as it, or a foreign-script letter."""
        if self.ch and self.ch in _READS_AS.get(expected, expected):
            self.exact += 1
        elif expected == "m" and self.pair("r", "n"):
            self.exact += 1
            return True
        elif self.first and _foreign_letter(self.orig):  # mixed script: any Cyrillic/Greek/... letter may stand in
            self.wild += 1
            self.rest = ""
        else:
            return False
        self.advance()
        return True


def _matches_at(text: str, i: int) -> bool:
    """Whether the bracket at ``text[i]`` opens a marker look-alike.

    A letter of another script that the confusables data does not fold (Cyrillic
    ``м``, Greek ``ε``) still counts as the expected letter when the label mixes
    scripts: at least as many letters must match exactly as stand in, so a label
    written wholly in another script is left alone.
    """
    slash, first, second = _targets()
    scan = _Scan(text, i + 1)
    scan.skip_space()
    if scan.ch and (scan.ch in slash or scan.ch == "\\"):
        scan.advance()
        scan.skip_space()
    for expected in first:
        if not scan.letter(expected):
            return False
    scan.skip_joiner()
    for expected in second:
        if not scan.letter(expected):
            return False
    return scan.exact >= scan.wild


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
