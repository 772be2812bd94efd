"""``approximate``: a script-aware token estimate calibrated on real tokenizers.

No dependency and no vocabulary. Text is split into pieces the way OpenAI's
pre-tokenizers split it, and each kind of piece is priced by a rate measured
against the real tokenizer of the chosen ``family`` (cl100k or o200k):

- CJK ideographs, kana and hangul: per character; ideographs in two groups,
  the frequent ones (a single cl100k token each, listed in ``_cjk_common``) and
  the rest (two or three byte-level tokens each); o200k's larger vocabulary
  holds many more CJK words, so its rates are much lower;
- Latin words: one token up to a calibrated length, then a fraction of a token
  per extra letter; camelCase humps and a single mark joined to a word a
  fraction each; other alphabets per character;
- digits: one token per group of up to three (both encodings split numbers so);
- punctuation runs, CJK punctuation, runs of spaces (indentation, the space
  before a number), line breaks (free right after punctuation, which takes them);
- long unbroken runs that look random (base64): per character;
- other non-ASCII symbols (box drawing, arrows) and emoji: per character.

The rates come from ``bench/calibrate_approximate.py`` on the repository's
corpora and are scaled so the estimate errs on the high side: within -5% ...
+12% of the real count on English and Chinese prose, mixed Chinese/English
technical text, Python source and nine shapes of JSON, and on three held-out
JSON corpora (table in docs/counters.md).
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ctxcore import MessageCounter
from ctxcore_counters._features import FEATURES, count_features

__all__ = ["ApproximateConfig", "ApproximateCounter", "FEATURES", "Rates", "RATES", "features"]

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


_F = FEATURES


@dataclass(frozen=True)
class Rates:
    """Tokens per unit of each feature, in the order of :data:`FEATURES`."""

    values: tuple[float, ...]

    def __post_init__(self) -> None:
        if len(self.values) != len(_F):
            raise ValueError(f"expected {len(_F)} rates, got {len(self.values)}")


#: calibrated rates per family (from bench/calibrate_approximate.py; see docs/counters.md).
RATES: dict[str, Rates] = {
    "cl100k": Rates((1.0297, 0.0623, 0.6, 0.8722, 2.4714, 1.1, 1.3, 1.0, 1.0, 0.0651, 1.0, 1.0, 1.0, 0.7146, 0.9, 2.8, 0.3772, 0.2368)),
    "o200k": Rates((0.9575, 0.1457, 0.3, 0.5352, 1.5923, 0.9, 0.8, 1.0, 1.0, 0.0745, 1.0, 1.0, 1.0, 0.6955, 0.7, 1.6, 0.2506, 0.3609)),
}


def features(text: str) -> list[float]:
    """Counts of each kind of piece in ``text`` (the estimate is their weighted sum)."""
    return count_features(text)


def estimate(text: str, rates: Rates) -> int:
    """The rounded-up weighted sum of ``text``'s features (products summed in feature order), at least 1.

    A non-empty text never costs nothing: a lone non-ASCII space (U+00A0, U+0085, U+2028) or lone
    surrogate has no feature of its own, but every tokenizer gives it a token.
    """
    if not text:
        return 0
    return max(1, math.ceil(sum(map(operator.mul, count_features(text), rates.values))))


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
