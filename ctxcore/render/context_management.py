"""Server-side context management: the pipeline's ``target.context_management`` and what it adds to a request.

Both providers can trim a long conversation on their side. Anthropic's Messages
API (beta) takes ``context_management={"edits": [...]}``: ``clear_tool_uses_20250919``
replaces old tool results with placeholders past a trigger, ``clear_thinking_20251015``
drops the thinking of older turns, and ``compact_20260112`` summarises everything
before a point into a ``compaction`` block. OpenAI's Responses API takes
``context_management=[{"type": "compaction", "compact_threshold": N}]``. The
settings here are validated with the field names of the official SDKs
(``anthropic.types.beta.BetaContextManagementConfigParam``,
``openai.types.responses.response_create_params.ContextManagement``), so a
typo fails when the pipeline loads, not as a 400 at run time. Why a module of
its own: the same settings render into two request shapes and one report
sentence each.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

__all__ = [
    "ANTHROPIC_BETAS",
    "ClearThinking",
    "ClearToolUses",
    "Compact",
    "ContextManagementSpec",
    "OpenAICompaction",
    "anthropic_context_management",
    "describe_context_management",
    "openai_context_management",
]

#: the ``anthropic-beta`` flags each edit needs (``client.beta.messages.create(betas=...)``).
ANTHROPIC_BETAS: dict[str, str] = {
    "clear_tool_uses_20250919": "context-management-2025-06-27",
    "clear_thinking_20251015": "context-management-2025-06-27",
    "compact_20260112": "compact-2026-01-12",
}


def _counted(kind: str) -> Any:
    """Accept ``N`` as shorthand for ``{"type": kind, "value": N}`` (the API's own form is accepted as it is)."""

    def convert(value: Any) -> Any:
        if isinstance(value, int) and not isinstance(value, bool):
            return {"type": kind, "value": value}
        return value

    return BeforeValidator(convert)


class _Counted(BaseModel):
    """A ``{"type": ..., "value": N}`` threshold of the Anthropic API."""

    model_config = ConfigDict(extra="forbid")
    value: int = Field(ge=0)


class InputTokens(_Counted):
    """A number of input tokens."""

    type: Literal["input_tokens"] = "input_tokens"


class ToolUses(_Counted):
    """A number of tool uses."""

    type: Literal["tool_uses"] = "tool_uses"


class ThinkingTurns(_Counted):
    """A number of assistant turns with thinking."""

    type: Literal["thinking_turns"] = "thinking_turns"


class ClearToolUses(BaseModel):
    """``clear_tool_uses_20250919``: past ``trigger``, replace the oldest tool results with placeholders, keeping ``keep``."""

    model_config = ConfigDict(extra="forbid")
    type: Literal["clear_tool_uses_20250919"]
    trigger: Annotated[InputTokens | ToolUses, _counted("input_tokens")] | None = None
    keep: Annotated[ToolUses, _counted("tool_uses")] | None = None
    clear_at_least: Annotated[InputTokens, _counted("input_tokens")] | None = None
    exclude_tools: list[str] | None = None
    clear_tool_inputs: bool | list[str] | None = None


class ClearThinking(BaseModel):
    """``clear_thinking_20251015``: keep the thinking blocks of the last ``keep`` assistant turns (or ``all``)."""

    model_config = ConfigDict(extra="forbid")
    type: Literal["clear_thinking_20251015"]
    keep: Annotated[ThinkingTurns | Literal["all"], _counted("thinking_turns")] | None = None


class Compact(BaseModel):
    """``compact_20260112``: past ``trigger`` input tokens, summarise the conversation into a ``compaction`` block."""

    model_config = ConfigDict(extra="forbid")
    type: Literal["compact_20260112"]
    trigger: Annotated[InputTokens, _counted("input_tokens")] | None = None
    instructions: str | None = None
    pause_after_compaction: bool | None = None


Edit = Annotated[ClearToolUses | ClearThinking | Compact, Field(discriminator="type")]


class OpenAICompaction(BaseModel):
    """OpenAI Responses ``{"type": "compaction", "compact_threshold": N}``: compact on the server past N tokens."""

    model_config = ConfigDict(extra="forbid")
    compact_threshold: int | None = Field(default=None, ge=1)


class ContextManagementSpec(BaseModel):
    """``target.context_management``: Anthropic ``edits`` and/or OpenAI ``compaction``.

    Attributes:
        edits: Anthropic context-management edits, in the API's order of application.
        compaction: OpenAI Responses server-side compaction.
    """

    model_config = ConfigDict(extra="forbid")
    edits: list[Edit] = Field(default_factory=list)
    compaction: OpenAICompaction | None = None


def anthropic_context_management(spec: ContextManagementSpec) -> tuple[dict[str, Any], list[str]] | None:
    """The ``context_management`` value and the beta flags for Anthropic, or ``None`` without edits."""
    if not spec.edits:
        return None
    edits = [edit.model_dump(exclude_none=True) for edit in spec.edits]
    betas = sorted({ANTHROPIC_BETAS[edit.type] for edit in spec.edits})
    return {"edits": edits}, betas


def openai_context_management(spec: ContextManagementSpec) -> list[dict[str, Any]] | None:
    """The Responses API ``context_management`` list, or ``None`` without ``compaction``."""
    if spec.compaction is None:
        return None
    return [{"type": "compaction", **spec.compaction.model_dump(exclude_none=True)}]


def describe_context_management(spec: ContextManagementSpec, provider: str, tokens: int | None = None) -> list[str]:
    """One report sentence per setting the server will apply for ``provider``.

    With ``tokens`` (the request's input tokens), a setting whose input-token
    trigger this request reaches says so: the server acts on this very call.
    """
    if provider != "anthropic":
        if spec.compaction is None:
            return []
        at = spec.compaction.compact_threshold
        note = (f"server: OpenAI will compact the conversation past {at:,} tokens" if at else
                "server: OpenAI will compact the conversation at its default threshold")
        return [note + _reached(at, tokens)]
    notes = []
    for edit in spec.edits:
        trigger = getattr(edit, "trigger", None)
        at = trigger.value if trigger is not None and trigger.type == "input_tokens" else None
        notes.append(_describe_edit(edit) + _reached(at, tokens))
    return notes


def _reached(at: int | None, tokens: int | None) -> str:
    """The clause a note gets when this request's input tokens reach the setting's trigger."""
    if at is None or tokens is None or tokens < at:
        return ""
    return f"; this request ({tokens:,} input tokens) reaches the trigger, so it applies to this call"


def _describe_edit(edit: ClearToolUses | ClearThinking | Compact) -> str:
    if isinstance(edit, ClearToolUses):
        when = f"past {edit.trigger.value:,} {edit.trigger.type.replace('_', ' ')}" if edit.trigger else "at its default trigger"
        keep = f", keeping the last {edit.keep.value}" if edit.keep else ""
        spared = f" (never {', '.join(edit.exclude_tools)})" if edit.exclude_tools else ""
        return f"server: Anthropic will clear tool uses {when}{keep}{spared}; cleared results become placeholders"
    if isinstance(edit, ClearThinking):
        keep = "all turns" if edit.keep == "all" else f"the last {edit.keep.value} turn(s)" if edit.keep else "the last turn"
        return f"server: Anthropic will clear thinking blocks except those of {keep}"
    when = f"past {edit.trigger.value:,} input tokens" if edit.trigger else "at its default trigger (150,000 input tokens)"
    return f"server: Anthropic will compact the conversation {when} into a compaction block"
