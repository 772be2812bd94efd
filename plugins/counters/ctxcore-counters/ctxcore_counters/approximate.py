"""``approximate``: a script-aware token estimate calibrated on real tokenizers.

No dependency and no vocabulary. Text is split into pieces the way OpenAI's
pre-tokenizers split it, and each kind of piece is priced by a rate measured
against the real tokenizer of the chosen ``family`` (cl100k or o200k):

- CJK ideographs, kana and hangul: per character; ideographs in two groups,
  the frequent ones (a single cl100k token each, listed in ``_cjk_common``) and
  the rest (two or three byte-level tokens each); o200k's larger vocabulary
  holds many more CJK words, so its rates are much lower;
- Latin words (split at camelCase humps): one token up to a calibrated length,
  then a fraction of a token per extra letter; other alphabets per character;
- digits: one token per group of up to three (both encodings split numbers so);
- punctuation runs, CJK punctuation, runs of spaces (indentation), line breaks;
- long unbroken runs that look random (base64, hex ids, hashes): per character;
- other non-ASCII symbols (box drawing, arrows) and emoji: per character.

The rates come from ``bench/calibrate_approximate.py`` on the repository's
corpora and are scaled so the estimate errs on the high side: within -5% ...
+12% of the real count on English and Chinese prose, mixed Chinese/English
technical text, Python source and JSON (table in docs/counters.md).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ctxcore import MessageCounter
from ctxcore_counters._cjk_common import COMMON_CJK

__all__ = ["ApproximateConfig", "ApproximateCounter", "Rates", "RATES", "features"]

Family = Literal["cl100k", "o200k"]


class ApproximateConfig(BaseModel):
    """Options of the ``approximate`` counter."""

    model_config = ConfigDict(extra="forbid")

    family: Family = Field(default="cl100k", description="Tokenizer family the rates are calibrated for: cl100k or o200k.")
    chars_per_token: int | None = Field(
        default=None, ge=1,
        description="Plain mode: a string costs len(text) // chars_per_token tokens (the reference SimpleTokenCounter "
        "rule); no calibration, family is not used.",
    )


# One alternative per kind of piece; the order matters (first match wins).
_PIECES = re.compile(
    r"(?P<cjk>[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f]+)"
    r"|(?P<kana>[\u3040-\u309f\u30a0-\u30ff\u31f0-\u31ff\uff66-\uff9f]+)"
    r"|(?P<hangul>[\uac00-\ud7af\u1100-\u11ff\u3130-\u318f]+)"
    r"|(?P<run>[A-Za-z0-9+/=_-]{20,})"
    r"|(?P<ascii>[A-Za-z]+)"
    r"|(?P<letters>[^\W\d_]+)"
    r"|(?P<digits>\d+)"
    r"|(?P<newline>[ \t]*(?:\r?\n)+)"
    r"|(?P<space>[ \t]+)"
    r"|(?P<cjk_punct>[\u3000-\u303f\uff00-\uffef\u2018-\u201f\u2026\u00b7]+)"
    r"|(?P<emoji>[\U0001f000-\U0001ffff]+)"
    r"|(?P<symbols>[^\x00-\x7f\w\s]+)"
    r"|(?P<punct>[^\w\s]+|_+)"
    r"|(?P<other>\s+)"
)
_CAMEL = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")
_WORD_FREE = 5  # letters a word part may have and still be priced as one token

# Feature vector positions (see :func:`features`).
_F = (
    "parts",         # Latin word parts (camelCase split): one token each
    "extra_letters", # letters beyond _WORD_FREE in those parts
    "letters",       # characters of other alphabets (Cyrillic, Greek, accented runs...)
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
_I = {name: i for i, name in enumerate(_F)}


@dataclass(frozen=True)
class Rates:
    """Tokens per unit of each feature, in the order of :data:`FEATURES`."""

    values: tuple[float, ...]

    def __post_init__(self) -> None:
        if len(self.values) != len(_F):
            raise ValueError(f"expected {len(_F)} rates, got {len(self.values)}")


FEATURES = _F

#: calibrated rates per family (from bench/calibrate_approximate.py; see docs/counters.md).
RATES: dict[str, Rates] = {
    "cl100k": Rates((1.022, 0.0623, 0.6, 0.9449, 2.3065, 1.1, 1.3, 1.0, 0.9997, 0.0647, 1.0, 1.1522, 1.0, 0.6484, 0.9, 2.8)),
    "o200k": Rates((0.9502, 0.1457, 0.3, 0.5995, 1.4487, 0.9, 0.8, 1.0, 1.1326, 0.0581, 1.0, 0.9855, 1.0, 0.5521, 0.7, 1.6)),
}


def _looks_random(run: str) -> bool:
    """True for base64/hex-like runs; False for long identifiers such as snake_case names."""
    digits = sum(c.isdigit() for c in run)
    upper = sum(c.isupper() for c in run)
    lower = sum(c.islower() for c in run)
    n = len(run)
    return digits * 10 >= n or (upper * 5 >= n and lower * 5 >= n)


def features(text: str) -> list[float]:
    """Counts of each kind of piece in ``text`` (the estimate is their weighted sum)."""
    f = [0.0] * len(_F)
    _add(text, f)
    return f


_PARTS, _EXTRA = _I["parts"], _I["extra_letters"]
_INDENTS, _PUNCT_RUNS, _PUNCT_EXTRA, _NEWLINES = _I["indents"], _I["punct_runs"], _I["punct_extra"], _I["newlines"]
_DIGITS, _CJK, _CJK_RARE, _RANDOM = _I["digit_groups"], _I["cjk"], _I["cjk_rare"], _I["random_chars"]
_DROP_COMMON = {ord(ch): None for ch in COMMON_CJK}


def _add(text: str, f: list[float]) -> None:
    end = len(text)
    parts = extra = 0
    for m in _PIECES.finditer(text):
        kind = m.lastgroup or ""  # every alternative is named
        piece = m.group()
        if kind == "ascii":
            if piece.islower() or (piece[0].isupper() and piece[1:].islower()) or len(piece) == 1:
                parts += 1  # one part: the common case, without the camelCase split
                if len(piece) > _WORD_FREE:
                    extra += len(piece) - _WORD_FREE
            else:
                _add_word(piece, f)
        elif kind == "space":
            if len(piece) > 1 or m.end() == end:  # one space is absorbed by the next word, if any
                f[_INDENTS] += 1
        elif kind == "punct":
            if len(piece) == 1 and text[m.end() : m.end() + 1].isalpha():
                continue  # a single mark before a word is absorbed into it ('.x', '"key', '(a')
            f[_PUNCT_RUNS] += 1
            f[_PUNCT_EXTRA] += len(piece) - 1
        elif kind == "newline" or kind == "other":
            f[_NEWLINES] += 1
        elif kind == "digits":
            f[_DIGITS] += (len(piece) + 2) // 3
        elif kind == "cjk":
            rare = len(piece.translate(_DROP_COMMON))  # str.translate deletes the common ones in C
            f[_CJK] += len(piece) - rare
            f[_CJK_RARE] += rare
        elif kind == "run":
            if _looks_random(piece):
                f[_RANDOM] += len(piece)
            else:
                _add_identifier(piece, f)
        else:  # letters, kana, hangul, cjk_punct, symbols, emoji: per character
            f[_I[kind]] += len(piece)
    f[_PARTS] += parts
    f[_EXTRA] += extra


def _add_word(word: str, f: list[float]) -> None:
    for part in _CAMEL.findall(word):
        f[_I["parts"]] += 1
        if len(part) > _WORD_FREE:
            f[_I["extra_letters"]] += len(part) - _WORD_FREE


def _add_identifier(run: str, f: list[float]) -> None:
    """A long run that is not random: price its word parts and separators normally."""
    for piece in re.findall(r"[A-Za-z]+|\d+|[^A-Za-z\d]+", run):
        if piece[0].isalpha():
            _add_word(piece, f)
        elif piece[0].isdigit():
            f[_I["digit_groups"]] += math.ceil(len(piece) / 3)
        elif len(piece) > 1:
            f[_I["punct_runs"]] += 1
            f[_I["punct_extra"]] += len(piece) - 1


def estimate(text: str, rates: Rates) -> int:
    """The rounded-up weighted sum of ``text``'s features."""
    if not text:
        return 0
    return math.ceil(sum(v * r for v, r in zip(features(text), rates.values, strict=True)))


class ApproximateCounter(MessageCounter):
    """Script-aware estimate with rates calibrated for ``family`` (cl100k or o200k)."""

    def __init__(self, family: Family = "cl100k", *, chars_per_token: int | None = None) -> None:
        if family not in RATES:
            raise ValueError(f"unknown family {family!r}; use one of {', '.join(RATES)}")
        if chars_per_token is not None and (isinstance(chars_per_token, bool) or not isinstance(chars_per_token, int)
                                            or chars_per_token < 1):
            raise ValueError(f"chars_per_token must be a whole number >= 1, got {chars_per_token!r}")
        self.family = family
        self.chars_per_token = chars_per_token
        self.name = f"approximate:{family}" if chars_per_token is None else f"approximate:plain-{chars_per_token}"
        self._rates = RATES[family]

    def count_text(self, text: str) -> int:
        """Estimated tokens of ``text`` (0 for empty text); plain mode: ``len(text) // chars_per_token``."""
        if self.chars_per_token is not None:
            return len(text) // self.chars_per_token
        return estimate(text, self._rates)
