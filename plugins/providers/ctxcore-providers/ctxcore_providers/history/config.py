"""The ``history`` provider's options and its replay cap."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, field_validator

from ctxcore import Message
from ctxcore.kit import current_pipeline_context


class HistoryConfig(BaseModel):
    """Options of the ``history`` provider."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    state_key: str = Field(default="messages", description="Key of the message list in the state.")
    annotate: bool = Field(default=True, description="Mark tool plans and observations and explain them once.")
    neutralize_markers: bool = Field(default=True, description="Defuse runtime-context marker look-alikes in the text of every role.")
    # A YAML file can only leave it null: the JSON Schema says so (`ctx pipeline schema`).
    working_memory: Any = Field(default=None, description="An object with build_view(messages) (Python only).",
                                json_schema_extra={"type": "null"})

    replay_cap: StrictInt | Literal["auto"] | None = Field(
        default=None,
        description="Replay at most this many newest stored messages, starting on a user message; auto: "
        "min(2000, max(120, context_window // 100)) (nanobot's rule). Default: the whole history.",
        # the schema states the validator's floor, so `ctx pipeline schema` and the loader agree
        json_schema_extra={"anyOf": [{"type": "integer", "minimum": 1}, {"const": "auto"}, {"type": "null"}]},
    )

    @field_validator("replay_cap")
    @classmethod
    def _cap(cls, value: Any) -> Any:
        if isinstance(value, int) and value < 1:
            raise ValueError("replay_cap must be a whole number >= 1 or 'auto'")
        return value

    @field_validator("working_memory")
    @classmethod
    def _adapter(cls, value: Any) -> Any:
        if value is not None and not callable(getattr(value, "build_view", None)):
            raise ValueError("working_memory must be an object with build_view(messages) (Python only)")
        return value


def auto_replay_cap(context_window: int) -> int:
    """nanobot's replay cap for a model window: ``min(2000, max(120, context_window // 100))``."""
    return min(2000, max(120, context_window // 100))


def resolve_replay_cap(cap: int | str | None, context_window: int | None = None) -> int | None:
    """``cap`` as a number: ``"auto"`` from ``context_window`` (default: the compiling pipeline's window).

    Raises:
        ValueError: ``"auto"`` without a context window to derive it from.
    """
    if cap != "auto":
        return None if cap is None else int(cap)
    window = context_window if context_window is not None else current_pipeline_context().context_window
    if window is None:
        raise ValueError("replay_cap: auto needs the model's context window: use it in a pipeline (model.context_window) "
                         "or pass context_window=, or give a number")
    return auto_replay_cap(window)


def replay_start(messages: Sequence[Message], cap: int) -> int:
    """Where a replay of at most ``cap`` newest messages starts: on a user message, never inside a tool unit.

    The first user message at or after the cut; without one, the last user
    message before it (the current turn is never cut); without any user message, 0.
    """
    cut = max(len(messages) - cap, 0)
    for i in range(cut, len(messages)):
        if messages[i].role == "user":
            return i
    for i in range(cut - 1, -1, -1):
        if messages[i].role == "user":
            return i
    return 0
