"""The ``approximate`` counter's features, counted by C-level passes over the text.

No Python loop runs per character or per piece. The text becomes a string of
*class bytes* (one ``bytes.translate`` of its ASCII form: ``a`` lower-case
letter, ``A`` upper-case, ``0`` digit, ``s`` space or tab, ``n`` line break,
``p`` punctuation or control, ``r`` one of ``+/=-``, ``u`` underscore, ``o``
a non-ASCII character); each feature is
then a few ``bytes.count`` calls of short patterns over a view of it (a second
translate that keeps only the classes the feature needs), e.g. word starts are
the occurrences of ``" a"`` in the letters-only view. Counts of patterns that
begin with a class the pattern does not contain again never overlap, so
``bytes.count`` (non-overlapping) gives exact numbers.

Non-ASCII characters (only when ``str.isascii`` is false) are counted per
character: one ``str.translate`` of them through a table of one class
character per BMP code point, then ``str.count`` per class.

The pieces are the ones the pre-tokenizers cut (see ``approximate.py``); the
differences from a piece-by-piece scan are small and absorbed by the
calibration: a camelCase word is split into parts for the part count only, and
underscores count as punctuation.
"""

from __future__ import annotations

import functools
import re
import string

from ctxcore_counters._cjk_common import COMMON_CJK

__all__ = ["FEATURES", "count_features"]

FEATURES = (
    "parts",         # Latin word parts (camelCase split): one token each
    "extra_letters", # letters beyond _WORD_FREE in those words
    "letters",       # characters of other alphabets (Cyrillic, Greek, accented letters...)
    "cjk",           # CJK ideographs that are one cl100k token (the frequent ones)
    "cjk_rare",      # other CJK ideographs
    "kana",          # hiragana / katakana
    "hangul",        # hangul syllables and jamo
    "digit_groups",  # ceil(len/3) per digit run
    "punct_runs",    # punctuation runs not absorbed into the following word
    "punct_extra",   # characters beyond the first in those runs
    "cjk_punct",     # full-width / CJK punctuation characters
    "indents",       # runs of two or more spaces or tabs (or trailing ones)
    "newlines",      # groups of line breaks
    "random_chars",  # characters of long random-looking runs (base64, hex)
    "symbols",       # other non-ASCII symbols (box drawing, arrows, dashes, currency)
    "emoji",         # emoji and other astral-plane symbols
)
_I = {name: i for i, name in enumerate(FEATURES)}
_WORD_FREE = 5  # letters a word may have and still be priced as one token
_RUN_MIN = 20  # an unbroken run this long may be base64 or a hex id


def _table(classes: dict[str, str], default: str) -> bytes:
    """A 256-entry bytes.translate table: each character of a key maps to its class byte."""
    table = bytearray(default.encode() * 256)
    for chars, cls in classes.items():
        for ch in chars:
            table[ord(ch)] = ord(cls)
    return bytes(table)


# Punctuation, and control characters (the pre-tokenizers treat them as marks).
_PUNCT = "".join(c for c in map(chr, range(128)) if not c.isalnum() and not c.isspace() and c not in "+/=-_")
_CLASS = _table({string.ascii_lowercase: "a", string.ascii_uppercase: "A", string.digits: "0", " \t": "s",
                 "\n\r\x0b\x0c\x1c\x1d\x1e\x1f": "n", _PUNCT: "p", "+/=-": "r", "_": "u"}, "o")
_CONTINUATION = bytes(range(0x80, 0xC0))  # deleted: a non-ASCII character leaves one 'o' (its lead byte)
_LETTERS = _table({"aA": "a"}, " ")
_DIGITS = _table({"0": "0"}, " ")
_PUNCTS = _table({"pru": "p", "aA": "a"}, " ")
_SPACES = _table({"s": "s", "n": "n"}, ".")
_RUN_CHARS = _table({"aA0ru": "x"}, " ")
_NON_ASCII = re.compile(r"[^\x00-\x7f]+")

_RUN_KEEP = _table({"a": "a", "A": "A", "0": "0", "r": "r", "u": "u"}, " ")
_EMOJI = re.compile(r"[\U0001f000-\U0001ffff]")
_KINDS = "crkhplsd"  # the class characters of the BMP table (see _bmp_table)


@functools.cache
def _bmp_table() -> str:
    """One class character per BMP code point, for ``str.translate`` (built on first non-ASCII text).

    ``c`` frequent CJK ideograph, ``r`` other ideograph, ``k`` kana, ``h`` hangul,
    ``p`` CJK punctuation, ``l`` letter of another alphabet, ``d`` digit, ``s``
    any other symbol, a space for white space (not counted). A sequence table (not a dict)
    keeps the per-character lookup cheap; astral characters are left as they are.
    """
    def kind(cp: int) -> str:
        ch = chr(cp)
        if ch in COMMON_CJK:
            return "c"
        if 0x3400 <= cp <= 0x4DBF or 0x4E00 <= cp <= 0x9FFF or 0xF900 <= cp <= 0xFAFF:
            return "r"
        if 0x3040 <= cp <= 0x30FF or 0x31F0 <= cp <= 0x31FF or 0xFF66 <= cp <= 0xFF9F:
            return "k"
        if 0xAC00 <= cp <= 0xD7AF or 0x1100 <= cp <= 0x11FF or 0x3130 <= cp <= 0x318F:
            return "h"
        if 0x3000 <= cp <= 0x303F or 0xFF00 <= cp <= 0xFFEF or 0x2018 <= cp <= 0x201F or cp in (0x2026, 0xB7):
            return "p"
        if ch.isspace() or 0xD800 <= cp <= 0xDFFF:
            return " "
        if ch.isdigit():
            return "d"
        return "l" if ch.isalpha() else "s"

    return "".join(map(kind, range(0x10000)))


def count_features(text: str) -> list[float]:
    """Counts of each kind of piece in ``text``, in the order of :data:`FEATURES`."""
    f = [0.0] * len(FEATURES)
    if not text:
        return f
    if text.isascii():
        classes = text.encode("ascii").translate(_CLASS)
    else:
        _non_ascii(text, f)
        classes = text.encode("utf-8", "surrogatepass").translate(_CLASS, _CONTINUATION)
    _ascii(b"o" + classes, f)
    if b"x" * _RUN_MIN in classes.translate(_RUN_CHARS):  # only then are the runs looked at one by one
        _random_runs(classes, f)
    return f


def _ascii(k: bytes, f: list[float]) -> None:
    """The ASCII features of class bytes ``k`` (which start with a non-letter sentinel)."""
    letters = k.translate(_LETTERS)
    words = letters.count(b" a")
    short = words + sum(letters.count(b" " + b"a" * j) for j in range(2, _WORD_FREE + 1))
    f[_I["parts"]] += words + k.count(b"aA")  # each lower-to-upper hump starts a part
    f[_I["extra_letters"]] += letters.count(b"a") - short
    digits = k.translate(_DIGITS)
    groups, length = 0, 1
    while found := digits.count(b" " + b"0" * length):  # runs with at least 1, 4, 7... digits
        groups += found
        length += 3
    f[_I["digit_groups"]] += groups
    punct = k.translate(_PUNCTS)
    runs = punct.count(b" p") + punct.count(b"ap")
    absorbed = punct.count(b"pa") - punct.count(b"ppa")  # a single mark before a word joins it
    f[_I["punct_runs"]] += runs - absorbed
    f[_I["punct_extra"]] += punct.count(b"p") - runs
    spaces = k.translate(_SPACES)
    indents = spaces.count(b".ss") + spaces.count(b"nss") - spaces.count(b"ssn")  # spaces before a break join it
    if spaces.endswith(b"s") and not spaces.endswith(b"ss"):
        indents += 1  # one trailing space is a token of its own
    f[_I["indents"]] += indents
    f[_I["newlines"]] += spaces.count(b".n") + spaces.count(b"sn")


def _random_runs(classes: bytes, f: list[float]) -> None:
    """Long base64/hex-looking runs are priced per character instead of as words, digits and marks."""
    for run in classes.translate(_RUN_KEEP).split():
        n = len(run)
        if n < _RUN_MIN:
            continue
        digits, upper, lower = run.count(b"0"), run.count(b"A"), run.count(b"a")
        if digits * 10 >= n or (upper * 5 >= n and lower * 5 >= n):
            part = [0.0] * len(FEATURES)
            _ascii(b"o" + run + b"o", part)
            for name in ("parts", "extra_letters", "digit_groups", "punct_runs", "punct_extra"):
                f[_I[name]] -= part[_I[name]]
            f[_I["random_chars"]] += n


def _non_ascii(text: str, f: list[float]) -> None:
    """Per-character features of the non-ASCII characters: one translate to class characters, then counts."""
    chars = "".join(_NON_ASCII.findall(text))
    kinds = chars.translate(_bmp_table())
    counts = {k: kinds.count(k) for k in _KINDS}
    astral = len(kinds) - sum(counts.values()) - kinds.count(" ")
    emoji = len(_EMOJI.findall(chars)) if astral else 0
    f[_I["cjk"]] += counts["c"]
    f[_I["cjk_rare"]] += counts["r"] + astral - emoji  # CJK extension B and beyond
    f[_I["kana"]] += counts["k"]
    f[_I["hangul"]] += counts["h"]
    f[_I["cjk_punct"]] += counts["p"]
    f[_I["letters"]] += counts["l"]
    f[_I["digit_groups"]] += counts["d"]
    f[_I["symbols"]] += counts["s"]
    f[_I["emoji"]] += emoji
