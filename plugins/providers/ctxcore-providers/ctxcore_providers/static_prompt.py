"""``static_prompt``: a fixed, trusted system message (persona, protocol text)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ctxcore import Message, system
from ctxcore.kit import DEFAULT_PROMPTS, get_prompt


class StaticPromptConfig(BaseModel):
    """Options of the ``static_prompt`` provider: ``text``, or ``prompt`` naming a default text."""

    model_config = ConfigDict(extra="forbid")

    text: str | None = Field(default=None, min_length=1, description="The system prompt text.")
    prompt: str | None = Field(
        default=None,
        description="Name of a default prompt text (persona, react_protocol, tool_contract, ...), "
        "overridable from the pipeline's prompts: section or the project config.",
        json_schema_extra={"enum": [*sorted(DEFAULT_PROMPTS), None]},  # the names the validator accepts
    )
    priority: int = Field(default=100, description="Priority among messages (higher is reduced later).")

    @model_validator(mode="after")
    def _one_source(self) -> StaticPromptConfig:
        if (self.text is None) == (self.prompt is None):
            raise ValueError("give exactly one of 'text' (the prompt itself) or 'prompt' (a default prompt name)")
        if self.prompt is not None and self.prompt not in DEFAULT_PROMPTS:
            raise ValueError(f"unknown prompt name {self.prompt!r}; known: {', '.join(sorted(DEFAULT_PROMPTS))}")
        return self

    def resolved_text(self) -> str:
        """The text: ``text`` as given, or the named prompt as currently configured."""
        return self.text if self.text is not None else get_prompt(str(self.prompt))


class StaticPrompt:
    """Emits one system message in the protected zone, identical on every build.

    The message (and its id) is created once, so repeated builds send a
    byte-identical prefix and its token count is cached. An empty text is an
    error, unless ``allow_empty`` (a named prompt overridden to ``""``): then
    it emits nothing.
    """

    def __init__(self, text: str, priority: int = 100, *, allow_empty: bool = False) -> None:
        if not text and not allow_empty:
            raise ValueError("static_prompt needs a non-empty text")
        self._messages: tuple[Message, ...] = (
            (system(text, priority=priority, zone="protected", trust="trusted"),) if text else ()
        )

    def get_messages(self, state: Mapping[str, Any], runtime: Mapping[str, Any]) -> Sequence[Message]:
        """Return the prompt message."""
        return self._messages
