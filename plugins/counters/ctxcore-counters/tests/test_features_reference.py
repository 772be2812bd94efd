"""The bit-parallel feature counts equal a straightforward piece-by-piece scan of the same model.

``reference_features`` below is the model written the slow, obvious way: one
Python step per character, maximal runs cut by hand. It lives here, not in the
package, so the package keeps only the fast passes; every property test runs
both on the same text and wants the same eighteen numbers. ``CTXCORE_THOROUGH=1``
runs twenty times the examples.
"""

from __future__ import annotations

import json
import math
import os
import random
import string

from ctxcore_counters._cjk_common import COMMON_CJK
from ctxcore_counters._features import FEATURES, _unit_tables, count_features
from ctxcore_counters.approximate import RATES, ApproximateCounter
from hypothesis import given, settings
from hypothesis import strategies as st

WORD_FREE, RUN_MIN = 5, 20
SCALE = 20 if os.environ.get("CTXCORE_THOROUGH") == "1" else 1


def ascii_class(ch: str) -> str:
    """a lower, A upper, 0 digit, s space/tab, n line break, r one of +/=-_, p any other mark or control."""
    if ch in string.ascii_lowercase:
        return "a"
    if ch in string.ascii_uppercase:
        return "A"
    if ch in string.digits:
        return "0"
    if ch in " \t":
        return "s"
    if ch.isspace():
        return "n"
    return "r" if ch in "+/=-_" else "p"


def kind(ch: str) -> str:
    """The model's kind of one non-ASCII character (feature name, or '' for white space and lone surrogates)."""
    cp = ord(ch)
    if cp > 0xFFFF:
        return "emoji" if 0x1F000 <= cp <= 0x1FFFF else "cjk_rare"
    if ch in COMMON_CJK:
        return "cjk"
    if 0x3400 <= cp <= 0x4DBF or 0x4E00 <= cp <= 0x9FFF or 0xF900 <= cp <= 0xFAFF:
        return "cjk_rare"
    if 0x3040 <= cp <= 0x30FF or 0x31F0 <= cp <= 0x31FF or 0xFF66 <= cp <= 0xFF9F:
        return "kana"
    if 0xAC00 <= cp <= 0xD7AF or 0x1100 <= cp <= 0x11FF or 0x3130 <= cp <= 0x318F:
        return "hangul"
    if 0x3000 <= cp <= 0x303F or 0xFF00 <= cp <= 0xFFEF or 0x2018 <= cp <= 0x201F or cp in (0x2026, 0xB7):
        return "cjk_punct"
    if ch.isspace() or 0xD800 <= cp <= 0xDFFF:
        return ""
    if ch.isdigit():
        return "digit_groups"
    return "letters" if ch.isalpha() else "symbols"


def runs(classes: list[str], members: str) -> list[tuple[int, int]]:
    """(start, end) of every maximal run of classes in ``members``."""
    out, i = [], 0
    while i < len(classes):
        if classes[i] in members:
            j = i
            while j < len(classes) and classes[j] in members:
                j += 1
            out.append((i, j))
            i = j
        else:
            i += 1
    return out


def pieces(classes: list[str]) -> dict[str, int]:
    """Word parts, extra letters, digit groups, mark runs, indents and line-break groups of ASCII classes."""
    f = dict.fromkeys(FEATURES, 0)
    for i, j in runs(classes, "aA"):
        f["parts"] += 1
        f["humps"] += sum(classes[k] == "a" and classes[k + 1] == "A" for k in range(i, j - 1))
        f["extra_letters"] += max(0, j - i - WORD_FREE)
    for i, j in runs(classes, "0"):
        f["digit_groups"] += math.ceil((j - i) / 3)
    for i, j in runs(classes, "pr"):
        # a lone mark joins the next word, unless a space before it takes it
        joined = j - i == 1 and j < len(classes) and classes[j] in "aA" and (i == 0 or classes[i - 1] != "s")
        f["joined_marks" if joined else "punct_runs"] += 1
        f["punct_extra"] += j - i - 1
    for i, j in runs(classes, "s"):
        if j - i >= 2 and not (j < len(classes) and classes[j] == "n"):
            f["indents"] += 1  # indentation, unless it joins the line break after it
        elif j - i == 1 and j == len(classes):
            f["indents"] += 1  # one trailing space
        if j < len(classes) and classes[j] == "0":
            f["indents"] += 1  # a number takes no leading space
    f["newlines"] += sum(i == 0 or classes[i - 1] not in "pr" for i, _ in runs(classes, "n"))  # not after a mark
    return f


def reference_features(text: str) -> list[float]:
    """The eighteen feature counts of ``text``, one character at a time."""
    classes = [ascii_class(ch) if ch.isascii() else "o" for ch in text]
    random_chars = 0
    for i, j in runs(classes, "aA0r"):
        run, n = classes[i:j], j - i
        if n >= RUN_MIN and run.count("A") * 5 >= n and run.count("a") * 5 >= n:
            random_chars += n
            classes[i:j] = ["o"] * n  # priced per character, so no word, digit or mark of its own
    f = pieces(classes)
    f["random_chars"] = random_chars
    for ch in text:
        if not ch.isascii() and (name := kind(ch)):
            f[name] += 1
    return [float(f[name]) for name in FEATURES]


# --- strategies ------------------------------------------------------------------------------------------

COMMON = sorted(COMMON_CJK)
# code points on both sides of every block edge and threshold the model (and the fast tables) cut at
EDGES = [0x7F, 0x80, 0xB6, 0xB7, 0xB8, 0xFF, 0x100, 0x10FF, 0x1100, 0x11FF, 0x1200, 0x2017, 0x2018, 0x201F, 0x2020,
         0x2025, 0x2026, 0x2027, 0x2FFF, 0x3000, 0x303F, 0x3040, 0x30FF, 0x3100, 0x312F, 0x3130, 0x318F, 0x3190,
         0x31EF, 0x31F0, 0x31FF, 0x3200, 0x33FF, 0x3400, 0x4DBF, 0x4DC0, 0x4DFF, 0x4E00, 0x9FFF, 0xA000, 0xABFF,
         0xAC00, 0xD7AF, 0xD7B0, 0xD7FF, 0xE000, 0xF8FF, 0xF900, 0xFAFF, 0xFB00, 0xFEFF, 0xFF00, 0xFF65, 0xFF66,
         0xFF9F, 0xFFA0, 0xFFEF, 0xFFF0, 0xFFFD, 0x10000, 0x1EFFF, 0x1F000, 0x1F600, 0x1FFFF, 0x20000, 0x10FFFF]
special = st.sampled_from([chr(cp) for cp in EDGES] + COMMON[:3] + COMMON[-3:] + list("龘、。，！“”…—→é²µ\xa0\x85"))
cjk = st.one_of(st.sampled_from(COMMON), st.characters(min_codepoint=0x4E00, max_codepoint=0x9FFF),
                st.characters(min_codepoint=0x3000, max_codepoint=0x30FF), st.characters(min_codepoint=0xFF00,
                                                                                        max_codepoint=0xFFEF))
emoji = st.characters(min_codepoint=0x1F000, max_codepoint=0x1FAFF)
code_chars = st.sampled_from(string.ascii_letters + string.digits + " \t\n\r_+-=/.,;:()[]{}<>\"'#@*&|\\\x00\x0c\x1f")
hexrun = st.text(alphabet="0123456789abcdef", min_size=16, max_size=48)
b64run = st.text(alphabet=string.ascii_letters + string.digits + "+/=_-", min_size=16, max_size=64)
word = st.from_regex(r"[A-Za-z][a-z]{0,9}([A-Z][a-z]{0,6}){0,2}", fullmatch=True)
mixed_piece = st.one_of(st.text(alphabet=st.one_of(code_chars, cjk, emoji, special), max_size=12), hexrun, b64run, word,
                        st.sampled_from([" ", "  ", "    ", "\n", "\n\n", " \n", "  \n", "\t", "1234567", "x.y", "!!"]))
mixed_text = st.lists(mixed_piece, max_size=40).map("".join)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20) | hexrun,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=20)
json_text = st.tuples(json_values, st.sampled_from([None, 2, 4])).map(lambda v: json.dumps(v[0], indent=v[1],
                                                                                        ensure_ascii=False))


def check(text: str) -> None:
    """The fast counts of ``text`` are the reference counts."""
    assert count_features(text) == reference_features(text), repr(text)


@settings(max_examples=150 * SCALE, deadline=None)
@given(st.text(max_size=200))
def test_arbitrary_unicode(text: str) -> None:
    """Any text (hypothesis' full alphabet, astral planes included) counts as the reference scan counts it."""
    check(text)


@settings(max_examples=150 * SCALE, deadline=None)
@given(mixed_text)
def test_code_cjk_emoji_and_random_runs(text: str) -> None:
    """Code, CJK, emoji, block-edge characters, hex and base64 runs, indentation, in any mix."""
    check(text)


@settings(max_examples=75 * SCALE, deadline=None)
@given(json_text)
def test_json(text: str) -> None:
    """JSON documents, compact and indented, non-ASCII kept."""
    check(text)


@settings(max_examples=75 * SCALE, deadline=None)
@given(st.text(alphabet=st.one_of(st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), code_chars, cjk, emoji),
               max_size=60))
def test_lone_surrogates(text: str) -> None:
    """Text with lone surrogates (not valid UTF-16) takes the per-code-point route and still counts the same."""
    check(text)


def test_every_bmp_character_alone_and_in_company() -> None:
    """Each BMP code point, alone, between letters and after an ideograph, has the reference kind."""
    chars = [chr(cp) for cp in range(0x80, 0x10000)]
    for i in range(0, len(chars), 512):
        block = "".join(chars[i : i + 512])
        check(block)
        check("a" + "a".join(chars[i : i + 64]) + "的")


def test_long_texts_beyond_the_cached_masks() -> None:
    """Texts around and well past the first mask size (4096 bytes) count the same."""
    rng = random.Random(16)
    alphabet = string.printable + "的一是龘、。，かカ한😀𠀀—é" + "".join(COMMON[:40])
    for size in (4095, 4096, 4097, 9000, 70_000):
        check("".join(rng.choice(alphabet) for _ in range(size)))
        check("".join(rng.choice(string.printable) for _ in range(size)))


def test_frequent_ideographs_are_counted_by_encoding_maps() -> None:
    """The frequent ideographs fit three charmap encoding maps (the C lookup, not a dict), NUL excepted."""
    maps = _unit_tables()[3]
    assert len(maps) == 3 and all(type(m).__name__ == "EncodingMap" for m in maps)
    assert count_features("\0的\0")[FEATURES.index("cjk")] == 1


def test_estimate_is_the_weighted_sum() -> None:
    """count_text is the rounded-up weighted sum of the features, for both families."""
    text = "def f(x):\n    return x  # 计算的结果 😀 3f2a9c1be4d07a6f5e8b2c9d1a0f4e7b\n"
    for family, rates in RATES.items():
        want = math.ceil(sum(v * r for v, r in zip(reference_features(text), rates.values, strict=True)))
        assert ApproximateCounter(family).count_text(text) == want


def test_a_lone_non_ascii_space_costs_one_token() -> None:
    """Text whose characters have no feature (non-ASCII spaces, a lone surrogate) still costs one token."""
    for text in ("\x85", "\xa0", "\u2028", "\xa0\u2029", "\ud800"):
        assert sum(count_features(text)) == 0
        assert ApproximateCounter().count_text(text) == 1
