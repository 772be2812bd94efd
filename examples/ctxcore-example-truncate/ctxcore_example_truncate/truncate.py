"""The ``truncate_tool_results`` filter: a long tool result is cut to its first ``max_chars`` characters.

A shortened result replaces the original, so it is a new message with a new
id, and the build report lists the original as ``compressed`` into it. The
replacement is deterministic, which is what makes the filter idempotent (ctxcore's
``FilterContract.test_idempotent`` applies it to its own output and compares
message ids):

- the copy's id is derived from the original's id and the filter's settings,
  so the same input gives the same output ids in every build;
- the copy carries ``metadata["ctxcore_example_truncate"]`` (the original's id
  and length), and a result carrying it is left alone: it still exceeds
  ``max_chars`` by the marker, and cutting it again would replace it again.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from ctxcore import FilterContext, Message

__all__ = ["DEFAULT_MARKER", "DEFAULT_MAX_CHARS", "META", "TruncateConfig", "TruncateToolResults"]

DEFAULT_MAX_CHARS = 2000
DEFAULT_MARKER = "\n[... truncated]"

#: metadata key of a shortened result: ``{"original_id": ..., "original_chars": ...}``.
META = "ctxcore_example_truncate"


class TruncateConfig(BaseModel):
    """Options of the ``truncate_tool_results`` filter."""

    model_config = ConfigDict(extra="forbid")

    max_chars: int = Field(default=DEFAULT_MAX_CHARS, gt=0, description="Longest tool result kept as is.")
    marker: str = Field(default=DEFAULT_MARKER, description="Appended to a shortened result.")


class TruncateToolResults:
    """Replaces string tool results longer than ``max_chars`` with their first ``max_chars`` characters and a marker."""

    def __init__(self, max_chars: int = DEFAULT_MAX_CHARS, marker: str = DEFAULT_MARKER) -> None:
        if max_chars <= 0:
            raise ValueError(f"max_chars must be positive, got {max_chars}")
        self.max_chars = max_chars
        self.marker = marker

    def apply(self, messages: Sequence[Message], ctx: FilterContext) -> list[Message]:
        """The messages with long tool results shortened; the report records each replacement."""
        out: list[Message] = []
        for m in messages:
            short = self.truncate(m)
            if short is not m and ctx.report is not None:
                before, after = ctx.counter.count_message(m), ctx.counter.count_message(short)
                ctx.report.record_compression(ctx.step_id, [m.id], short, before, after, stage="truncate")
            out.append(short)
        return out

    def truncate(self, m: Message) -> Message:
        """``m`` itself unless it is a long string tool result not shortened before; else its shortened copy."""
        if m.role != "tool" or m.zone == "protected" or not isinstance(m.content, str) or META in m.metadata:
            return m
        if len(m.content) <= self.max_chars:
            return m
        return m.with_provenance(
            id=self.replacement_id(m),
            content=m.content[: self.max_chars] + self.marker,
            metadata={**m.metadata, META: {"original_id": m.id, "original_chars": len(m.content)}},
        )

    def replacement_id(self, m: Message) -> str:
        """The id of ``m``'s shortened copy: the same for the same message and settings, every time."""
        key = "\0".join((m.id, str(self.max_chars), self.marker))
        return hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]
