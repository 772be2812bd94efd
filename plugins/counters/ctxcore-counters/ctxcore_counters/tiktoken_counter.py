"""``tiktoken``: exact OpenAI token counts, loaded without any network access.

Encodings come from :mod:`ctxcore_counters.encodings` (``bpe_file``, the
tiktoken cache directory, or a package that bundles the file); message
overheads follow OpenAI's published counting rules (see :mod:`ctxcore.engine.counting`).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ctxcore import MessageCounter
from ctxcore_counters.encodings import (
    MODEL_ENCODINGS,
    EncodingUnavailable,
    encoding_for_model,
    load_encoding,
)

__all__ = ["TiktokenConfig", "TiktokenCounter", "EncodingUnavailable", "MODEL_ENCODINGS", "encoding_for_model"]

#: function-schema init overhead of the OpenAI cookbook rule, per encoding.
_TOOL_FUNCTION_INIT = {"cl100k_base": 10, "o200k_base": 7}


class TiktokenConfig(BaseModel):
    """Options of the ``tiktoken`` counter."""

    model_config = ConfigDict(extra="forbid")

    encoding: Literal["cl100k_base", "o200k_base"] | None = Field(default=None, description="Encoding name (default cl100k_base).")
    model: str | None = Field(default=None, description="OpenAI model name; picks the encoding (gpt-4o -> o200k_base).")
    bpe_file: str | None = Field(default=None, description="Path to a .tiktoken ranks file (plain or .gz) to load offline.")

    @model_validator(mode="after")
    def _one_of(self) -> TiktokenConfig:
        if self.encoding and self.model:
            raise ValueError("give 'encoding' or 'model', not both")
        return self


class TiktokenCounter(MessageCounter):
    """Exact counts with a tiktoken encoding (cl100k_base or o200k_base), offline.

    Raises:
        EncodingUnavailable: at construction, when no offline source has the
            encoding; the message lists the ways to provide one.
    """

    def __init__(self, encoding: str | None = None, *, model: str | None = None, bpe_file: str | None = None) -> None:
        if encoding and model:
            raise ValueError("give encoding or model, not both")
        self.encoding_name = encoding or (encoding_for_model(model) if model else "cl100k_base")
        self.name = f"tiktoken:{self.encoding_name}"
        self._encoding = load_encoding(self.encoding_name, bpe_file)
        self._encode = self._encoding.encode_ordinary
        self.tool_function_init = _TOOL_FUNCTION_INIT[self.encoding_name]

    def count_text(self, text: str) -> int:
        """Exact token count; special-token text counts as ordinary text."""
        return len(self._encode(text)) if text else 0

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` (ordinary encoding)."""
        return self._encode(text)
