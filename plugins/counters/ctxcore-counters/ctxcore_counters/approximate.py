"""``approximate``: characters / 4, rounded up, with OpenAI's message overheads.

No dependency and no tokenizer. Good enough for English prose; it under-counts
CJK text badly (a script-aware estimate is planned). Use ``tiktoken`` when the
budget matters.
"""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict, Field

from ctxcore.counting import MessageCounter


class ApproximateConfig(BaseModel):
    """Options of the ``approximate`` counter."""

    model_config = ConfigDict(extra="forbid")

    chars_per_token: float = Field(default=4.0, gt=0, description="Characters counted as one token.")


class ApproximateCounter(MessageCounter):
    """Counts ``ceil(len(text) / chars_per_token)`` tokens per string."""

    name = "approximate"

    def __init__(self, chars_per_token: float = 4.0) -> None:
        if chars_per_token <= 0:
            raise ValueError("chars_per_token must be positive")
        self.chars_per_token = chars_per_token

    def count_text(self, text: str) -> int:
        """Characters divided by ``chars_per_token``, rounded up (0 for empty text)."""
        if not text:
            return 0
        return math.ceil(len(text) / self.chars_per_token)
