"""The ``approximate`` counter's features, counted by bit-parallel passes over the text.

No Python loop runs per character or per piece; the whole text goes through a
fixed number of C-level operations, each over a compact form of it.

**ASCII features.** The UTF-8 bytes go through one ``bytes.translate`` into
*flag bytes*, one bit per property (a non-ASCII character's bytes have none,
and a run of such bytes counts as one whatever its length, so continuation
bytes are deleted, or for mostly multi-byte text the runs squeezed): letter, upper-case, digit, space or tab, line
break, punctuation (``+/=-_`` included), random-run character (letters, digits,
``+/=-_``) and lower-case. The flag bytes read as one big integer are
transposed 8x8 bit-wise (three mask-and-shift steps), and a strided slice per
bit gives eight *lanes*: integers with bit ``i`` set when character ``i`` has
that property. A feature is then a popcount of a few shifts and ands of lanes,
e.g. word starts are ``L & ~(L << 1)`` (a letter whose predecessor is not
one), and letters past the fifth of a word are six letters in a row,
``L & L<<1 & ... & L<<5``. Digit groups (``ceil(len/3)`` per run) count the
runs of at least 1, 4, 7... digits. Long runs that look random (base64: mixed
case) are found with ``bytes.find``, priced per character and blanked before
the lanes are counted again (only texts with such a run pay that). Hex ids and
digests are not among them: the pre-tokenizers already cut them into the
letter and digit pieces the lanes count.

**Non-ASCII features** (only when ``str.isascii`` is false). The UTF-16 code
units are split into high and low bytes; each goes through a translate into a
group number (the Unicode blocks the model treats alike, the thresholds inside
the blocks it splits) and their sum is one *key* byte per unit, translated into
its kind: frequent-or-not ideograph, rare ideograph, kana, hangul, CJK
punctuation, emoji, other astral character, ignored (ASCII, the second half of
a surrogate pair), or *irregular* (a block the model classifies per code point:
letters, digits and symbols of other alphabets). The kinds are counted with
``bytes.count``; the frequent ideographs (``_cjk_common``, 549 of them) with
three ``codecs.charmap_encode`` passes whose encoding maps hold 255 of them
each and drop every other character; irregular characters, when there are any,
are cut out by a mask and classified by a ``str.translate`` through a table of
one kind per BMP code point. A text with lone surrogates (not valid UTF-16)
takes that per-code-point route for all its non-ASCII characters.

The result equals a piece-by-piece scan of the same model (the tests keep one
as the reference). The pieces are the ones the pre-tokenizers cut (see
``approximate.py``); the differences from them are small and absorbed by the
calibration: a camelCase word's humps are a feature of their own (cl100k
often keeps a common camelCase word whole, o200k cuts it at the hump), and
underscores count as punctuation. Where the pieces do differ from the
pre-tokenizers' by rule, the lanes follow the rule: a single mark before a word
joins it unless a space comes before the mark (`` (self`` is two pieces), a
number takes no leading space (the space is a piece of its own), and line
breaks right after punctuation join it (``",\n``).
"""

from __future__ import annotations

import codecs
import functools
import operator
import re
import string
from typing import TYPE_CHECKING

from ctxcore_counters._cjk_common import COMMON_CJK

if TYPE_CHECKING:
    from _codecs import _EncodeCharMap

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
    "indents",       # runs of two or more spaces or tabs (or trailing ones), and a space before a digit
    "newlines",      # groups of line breaks, less those right after punctuation (the pre-tokenizers join them to it)
    "random_chars",  # characters of long random-looking runs (base64)
    "symbols",       # other non-ASCII symbols (box drawing, arrows, dashes, currency)
    "emoji",         # emoji and other astral-plane symbols
    "humps",         # camelCase humps (a lower-case letter then an upper-case one) inside Latin words
    "joined_marks",  # single punctuation marks joined to the word after them (`.append`, `"key`, `\\u00e9`)
)
(_PARTS, _EXTRA, _LETTERS, _CJK, _CJK_RARE, _KANA, _HANGUL, _DIGITS, _PUNCT_RUNS, _PUNCT_EXTRA, _CJK_PUNCT,
 _INDENTS, _NEWLINES, _RANDOM, _SYMBOLS, _EMOJI, _HUMPS, _JOINED) = range(len(FEATURES))
_WORD_FREE = 5  # letters a word may have and still be priced as one token (the lanes below hard-code it)
_RUN_MIN = 20  # an unbroken run this long may be base64 (the lanes below hard-code it)

# --- ASCII: flag bytes, one bit per property ---------------------------------------------------------------

_LETTER, _UPPER, _DIGIT, _SPACE, _BREAK, _MARK, _RUNCHAR, _LOWER = (1 << bit for bit in range(8))


def _flag_table() -> bytes:
    """Flags of each ASCII byte; bytes >= 0x80 (the lead byte of a non-ASCII character) have none."""
    table = bytearray(256)
    for code in range(128):
        ch = chr(code)
        if ch in string.ascii_lowercase:
            table[code] = _LETTER | _LOWER | _RUNCHAR
        elif ch in string.ascii_uppercase:
            table[code] = _LETTER | _UPPER | _RUNCHAR
        elif ch in string.digits:
            table[code] = _DIGIT | _RUNCHAR
        elif ch in " \t":
            table[code] = _SPACE
        elif ch.isspace():  # \n \r \v \f and the four separators \x1c-\x1f
            table[code] = _BREAK
        elif ch in "+/=-_":
            table[code] = _MARK | _RUNCHAR  # base64 / hex-id characters that are still punctuation
        else:
            table[code] = _MARK  # punctuation and control characters (the pre-tokenizers treat them as marks)
    return bytes(table)


_FLAGS = _flag_table()
_CONTINUATION = bytes(range(0x80, 0xC0))  # deleted: a non-ASCII character leaves one flag byte (its lead byte)
_RUN_VIEW = bytes(ord("x") if value & _RUNCHAR else ord(" ") for value in range(256))  # of flag bytes
_RUN_NEEDLE = b"x" * _RUN_MIN
_RUN_UPPER, _RUN_LOWER = (bytes([_FLAGS[ord(c)]]) for c in "Aa")
# 8x8 bit transpose of every 64-bit word (Hacker's Delight, transpose8): masks of the three swap steps.
_SWAPS = ((7, 0x00AA00AA00AA00AA), (14, 0x0000CCCC0000CCCC), (28, 0x00000000F0F0F0F0))
_MASK_BYTES = 1 << 16  # masks this long are kept (3 x 64 KiB); a longer text builds its own, also O(length)


def _build_masks(size: int) -> tuple[int, ...]:
    """The three swap masks repeated over ``size`` bytes (a multiple of 8)."""
    return tuple(int.from_bytes(mask.to_bytes(8, "little") * (size // 8), "little") for _, mask in _SWAPS)


_KEPT_MASKS = _build_masks(_MASK_BYTES)


def _masks(size: int) -> tuple[int, ...]:
    """Swap masks covering at least ``size`` bytes (an and with a longer mask costs only the shorter operand)."""
    return _KEPT_MASKS if size <= _MASK_BYTES else _build_masks(size)


def _lanes(flags: bytes) -> list[int]:
    """Eight integers, one per flag bit, with bit ``i`` set when byte ``i`` of ``flags`` has that flag."""
    size = len(flags) + (-len(flags) % 8)
    x = int.from_bytes(flags, "little")
    for (shift, _), mask in zip(_SWAPS, _masks(size), strict=True):
        t = (x ^ (x >> shift)) & mask
        x ^= t ^ (t << shift)
    words = x.to_bytes(size, "little")  # byte j of every 8 now holds flag j of those 8 characters
    return [int.from_bytes(words[bit::8], "little") for bit in range(8)]


def _ascii(flags: bytes, f: list[float]) -> int:
    """The word, digit, mark, space and break features of ``flags`` (the start and end count as 'other').

    Returns the lane of random-run characters.
    """
    letter, upper, digit, space, brk, mark, run, lower = _lanes(flags)
    letter2 = letter & (letter << 1)  # a letter after a letter
    letter4 = letter2 & (letter2 << 2)
    f[_PARTS] += (letter ^ letter2).bit_count()  # word starts
    f[_HUMPS] += (lower & (upper >> 1)).bit_count()
    f[_EXTRA] += (letter4 & (letter2 << 4)).bit_count()  # the 6th, 7th... letter of a word
    digit2 = digit & (digit << 1)
    starts = digit ^ digit2
    groups = starts.bit_count()
    if digit4 := digit2 & (digit2 << 2):
        digit3 = digit2 & (digit << 2)
        nth = digit4 & (starts << 3)  # the 4th digit of a run; then the 7th, 10th...
        while nth:
            groups += nth.bit_count()
            nth = (nth << 3) & digit3
    f[_DIGITS] += groups
    mark2 = mark & (mark << 1)
    starts = mark ^ mark2
    # a lone mark before a letter joins the word, unless a space before it takes it (` (self`: two pieces)
    joined = (starts & (letter >> 1) & ~(space << 1)).bit_count()
    f[_PUNCT_RUNS] += starts.bit_count() - joined
    f[_JOINED] += joined
    f[_PUNCT_EXTRA] += mark2.bit_count()
    space2 = space & (space << 1)
    # runs of two or more spaces, less those that end at a line break (they join it)
    f[_INDENTS] += ((space ^ space2) & (space >> 1)).bit_count() - (space2 & (brk >> 1)).bit_count()
    f[_INDENTS] += (space & (digit >> 1)).bit_count()  # numbers take no leading space: it is a token of its own
    f[_NEWLINES] += (brk & ~(brk << 1) & ~(mark << 1)).bit_count()
    return run


def _has_long_run(run: int) -> bool:
    """Whether the lane ``run`` has 20 set bits in a row."""
    run2 = run & (run << 1)
    run4 = run2 & (run2 << 2)
    run8 = run4 & (run4 << 4)
    return bool(run8 & (run8 << 8) & (run4 << 16))


def _random_runs(flags: bytes, f: list[float]) -> bytes | None:
    """Long base64-looking runs (a fifth of them upper-case, a fifth lower-case) are priced per character.

    Returns ``flags`` with those runs blanked ('other' bytes, which no ASCII feature counts), for the
    lanes to be counted again, or None when no run looks random. A hex run is left to the ASCII
    features: the pre-tokenizers cut it at every letter/digit change, which is what they count.
    """
    view = flags.translate(_RUN_VIEW)
    kept: list[bytes] = []
    done = 0
    start = view.find(_RUN_NEEDLE)
    while start >= 0:
        end = view.find(b" ", start + _RUN_MIN)
        if end < 0:
            end = len(view)
        run, n = flags[start:end], end - start
        if run.count(_RUN_UPPER) * 5 >= n and run.count(_RUN_LOWER) * 5 >= n:
            kept += (flags[done:start], bytes(n))
            done = end
            f[_RANDOM] += n
        start = view.find(_RUN_NEEDLE, end)
    return b"".join(kept) + flags[done:] if kept else None


# --- non-ASCII: kinds of UTF-16 code units --------------------------------------------------------------

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


# Groups of high bytes (whole blocks alike, or blocks split by the low byte) and the low-byte thresholds.
_HIGH_GROUPS: tuple[tuple[int, ...], ...] = (
    (0x00,),                                   # ASCII and Latin-1 (U+00B7 is CJK punctuation)
    tuple(range(0x4E, 0xA0)),                  # CJK unified ideographs: frequent or not (charmap passes)
    (*range(0x34, 0x4D), 0xF9, 0xFA),          # CJK extension A, compatibility ideographs
    (0x11, *range(0xAC, 0xD7)),                # hangul jamo and syllables
    (0x4D,), (0x30,), (0x31,), (0xFF,), (0xD7,), (0x20,), (0xD8,),  # blocks split inside
    (0xD9, 0xDA, 0xDB),                        # high surrogates: astral characters beyond the emoji planes
    (0xDC, 0xDD, 0xDE, 0xDF),                  # low surrogates: second halves, not counted
)
_LOW_CUTS = (0x18, 0x20, 0x26, 0x27, 0x30, 0x3C, 0x40, 0x66, 0x80, 0x90, 0xA0, 0xB0, 0xB7, 0xB8, 0xC0, 0xF0)
_GROUPS = len(_HIGH_GROUPS) + 1  # the last group: every other high byte
_SPAN = len(_LOW_CUTS) + 1
_IDEOGRAPH, _RARE, _KANA_, _HANGUL_, _PUNCT_, _EMOJI_, _IRREGULAR, _IGNORED = b"UrkhpeiZ"
_COUNTED = bytes((_IDEOGRAPH, _PUNCT_, _IRREGULAR, _KANA_, _HANGUL_, _RARE, _EMOJI_))
_FREQUENT = bytes((_IGNORED, _IDEOGRAPH, _PUNCT_))
_RARE_KINDS = _COUNTED[2:]
_COMMON_CHUNK = 255  # characters one charmap encoding map can hold (byte 0 is kept for NUL)


@functools.cache
def _unit_tables() -> tuple[bytes, bytes, bytes, tuple[_EncodeCharMap, ...]]:
    """Translate tables high byte -> group * span, low byte -> group, key -> kind; the charmap maps.

    The kind of a key is read off the per-code-point table: a key whose code points all have the same
    countable kind gets it, any other key is irregular (classified per code point). So the tables
    only decide speed, never the counts.
    """
    bmp = _bmp_table()
    high = bytearray([(_GROUPS - 1) * _SPAN] * 256)
    for group, values in enumerate(_HIGH_GROUPS):
        for value in values:
            high[value] = group * _SPAN
    low = bytes(sum(value >= cut for cut in _LOW_CUTS) for value in range(256))
    members: dict[int, set[str]] = {}
    for cp in range(0x10000):
        hi, lo = divmod(cp, 256)
        if hi in range(0xD8, 0xE0):
            kind = "z" if hi >= 0xDC else "e" if hi == 0xD8 and 0x3C <= lo <= 0x3F else "a"  # U+1F000-1FFFF
        else:
            kind = "z" if cp < 0x80 else bmp[cp]
        members.setdefault(high[hi] + low[lo], set()).add(kind)
    named = {"z": _IGNORED, " ": _IGNORED, "r": _RARE, "a": _RARE, "k": _KANA_, "h": _HANGUL_, "p": _PUNCT_,
             "e": _EMOJI_}
    kinds = bytearray([_IGNORED] * 256)
    for key, found in members.items():
        if ("c" in found and not found <= {"c", "r"}) or (found & {"a", "e"} and len(found) > 1):
            # frequent ideographs are counted by the charmap passes, surrogates only as whole pairs
            raise ValueError(f"key {key} mixes kinds the tables cannot fall back on: {sorted(found)}")
        if found <= {"c", "r"} and "c" in found:
            kinds[key] = _IDEOGRAPH
        elif len(found) == 1 and (one := next(iter(found))) in named and one != "c":
            kinds[key] = named[one]
        elif found <= {"z", " "}:
            kinds[key] = _IGNORED
        else:
            kinds[key] = _IRREGULAR
    common = sorted(COMMON_CJK)
    maps = tuple(codecs.charmap_build("\0" + "".join(common[i : i + _COMMON_CHUNK]).ljust(_COMMON_CHUNK, "\ufffe"))
                 for i in range(0, len(common), _COMMON_CHUNK))
    return bytes(high), low, bytes(kinds), maps


def _non_ascii(text: str, f: list[float]) -> None:
    """Per-character features of the non-ASCII characters of ``text`` (valid UTF-16: no lone surrogates)."""
    high_group, low_group, kind_of_key, maps = _unit_tables()
    units = text.encode("utf-16-le")
    n = len(units) // 2
    keys = (int.from_bytes(units[1::2].translate(high_group), "little")
            + int.from_bytes(units[0::2].translate(low_group), "little")).to_bytes(n, "little")
    kinds = keys.translate(kind_of_key)
    counts = dict.fromkeys(_COUNTED, 0)
    left = n - kinds.count(_IGNORED)
    if left:  # the frequent kinds first; what they leave is usually nothing, else few units
        counts[_IDEOGRAPH] = found = kinds.count(_IDEOGRAPH)
        if left := left - found:
            counts[_PUNCT_] = found = kinds.count(_PUNCT_)
            if left - found:
                rest = kinds.translate(None, _FREQUENT)
                for kind in _RARE_KINDS:
                    counts[kind] = rest.count(kind)
    if ideographs := counts[_IDEOGRAPH]:
        common = -len(maps) * text.count("\0")  # NUL is in every map (the C map needs it at byte 0)
        for m in maps:
            common += len(codecs.charmap_encode(text, "ignore", m)[0])
        f[_CJK] += common
        f[_CJK_RARE] += ideographs - common
    f[_CJK_RARE] += counts[_RARE]
    f[_KANA] += counts[_KANA_]
    f[_HANGUL] += counts[_HANGUL_]
    f[_CJK_PUNCT] += counts[_PUNCT_]
    f[_EMOJI] += counts[_EMOJI_]
    if counts[_IRREGULAR]:
        mask = kinds.translate(_IRREGULAR_MASK)
        both = bytearray(2 * n)
        both[0::2] = both[1::2] = mask
        kept = int.from_bytes(units, "little") & int.from_bytes(both, "little")
        _per_code_point(kept.to_bytes(2 * n, "little").decode("utf-16-le").replace("\0", ""), f)


_IRREGULAR_MASK = bytes(0xFF if key == _IRREGULAR else 0 for key in range(256))
_NON_ASCII = re.compile(r"[^\x00-\x7f]+")
_OTHER_RUN = re.compile(rb"\x00\x00+")
_EMOJI_RE = re.compile(r"[\U0001f000-\U0001ffff]")


def _per_code_point(chars: str, f: list[float]) -> None:
    """Features of non-ASCII ``chars``, one translate to class characters, then counts (astral ones too)."""
    kinds = chars.translate(_bmp_table())
    counts = {k: kinds.count(k) for k in _KINDS}
    astral = len(kinds) - sum(counts.values()) - kinds.count(" ")
    emoji = len(_EMOJI_RE.findall(chars)) if astral else 0
    f[_CJK] += counts["c"]
    f[_CJK_RARE] += counts["r"] + astral - emoji  # CJK extension B and beyond
    f[_KANA] += counts["k"]
    f[_HANGUL] += counts["h"]
    f[_CJK_PUNCT] += counts["p"]
    f[_LETTERS] += counts["l"]
    f[_DIGITS] += counts["d"]
    f[_SYMBOLS] += counts["s"]
    f[_EMOJI] += emoji


def count_features(text: str) -> list[float]:
    """Counts of each kind of piece in ``text``, in the order of :data:`FEATURES`."""
    f = [0.0] * len(FEATURES)
    if not text:
        return f
    if text.isascii():
        flags = text.encode("ascii").translate(_FLAGS)
    else:
        try:
            raw = text.encode("utf-8")
        except UnicodeEncodeError:  # lone surrogates: not UTF-16 either, so every non-ASCII character on its own
            raw = text.encode("utf-8", "surrogatepass")
            _per_code_point("".join(_NON_ASCII.findall(text)), f)
        else:
            _non_ascii(text, f)
        # A run of 'other' bytes (flags 0) counts as one whatever its length: mostly multi-byte text keeps
        # every byte and then squeezes the runs, other text deletes the continuation bytes.
        if len(raw) >= 2 * len(text):
            flags = _OTHER_RUN.sub(b"\0", raw.translate(_FLAGS))
        else:
            flags = raw.translate(_FLAGS, _CONTINUATION)
    if flags[-1] == _SPACE and (len(flags) == 1 or flags[-2] != _SPACE):
        f[_INDENTS] += 1  # one trailing space is a token of its own
    counted = [0.0] * len(FEATURES)
    if _has_long_run(_ascii(flags, counted)) and (blanked := _random_runs(flags, f)) is not None:
        counted = [0.0] * len(FEATURES)
        _ascii(blanked, counted)  # the lanes again, without the runs priced per character
    return list(map(operator.add, f, counted))
