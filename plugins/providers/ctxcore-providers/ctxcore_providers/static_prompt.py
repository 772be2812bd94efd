"""``static_prompt``: a fixed, trusted system message (persona, protocol text)."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field

from ctxcore.messages import Message, system


class StaticPromptConfig(BaseModel):
    """Options of the ``static_prompt`` provider."""

    model_config = ConfigDict(extra="forbid")

    text: str = Field(min_length=1, description="The system prompt text.")
    priority: int = Field(default=100, description="Priority among messages (higher is reduced later).")


class StaticPrompt:
    """Emits one system message in the protected zone, identical on every build.

    The message (and its id) is created once, so repeated builds send a
    byte-identical prefix and its token count is cached.
    """

    def __init__(self, text: str, priority: int = 100) -> None:
        if not text:
            raise ValueError("static_prompt needs a non-empty text")
        self._message = system(text, priority=priority, zone="protected", trust="trusted")

    def get_messages(self, state: Mapping[str, Any], runtime: Mapping[str, Any]) -> Sequence[Message]:
        """Return the prompt message."""
        return (self._message,)
