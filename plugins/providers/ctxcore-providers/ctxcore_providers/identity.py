"""``identity``: who and where the agent runs (workspace, OS, Python, channel).

There is deliberately no clock value: the text is the same on every turn of a
channel, so the system prompt stays byte-identical and provider prompt caches
keep hitting. The time goes into the current user message instead (see
``runtime_context``).
"""

from __future__ import annotations

import platform
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ctxcore import Message, system
from ctxcore.kit import get_prompt
from ctxcore_providers._render import stable_id

#: formatting hints per channel; a channel not listed gets none.
DEFAULT_FORMAT_HINTS: dict[str, str] = {
    "telegram": "Replies are shown in a messaging app: keep them short, use simple Markdown (bold, lists, code), no tables or headings.",
    "whatsapp": "Replies are shown in a messaging app: keep them short, no Markdown tables or headings; *bold* and lists only.",
    "slack": "Replies are shown in Slack: use Slack mrkdwn (*bold*, `code`, lists), no tables or headings.",
    "discord": "Replies are shown in Discord: keep them under 2000 characters, simple Markdown, no tables.",
    "signal": "Replies are shown in a messaging app: plain text, short paragraphs.",
    "sms": "Replies are sent as SMS: plain text only, no Markdown, as short as possible.",
    "email": "Replies are sent as e-mail: plain text paragraphs, no Markdown.",
    "plain": "The channel shows plain text only: no Markdown.",
}


class IdentityConfig(BaseModel):
    """Options of the ``identity`` provider."""

    model_config = ConfigDict(extra="forbid")

    workspace: str = Field(default=".", description="The workspace path shown (resolved to an absolute path).")
    channel: str | None = Field(default=None, description="Channel name; runtime['channel'] overrides it.")
    format_hints: dict[str, str] = Field(default_factory=dict, description="Extra or replacement per-channel formatting hints.")
    template: str | None = Field(default=None, description="Text with {workspace}, {os}, {python}; default: the 'identity' prompt.")
    priority: int = 100


class Identity:
    """Renders the identity block once per channel and reuses it."""

    def __init__(self, workspace: str | Path = ".", channel: str | None = None, *, format_hints: Mapping[str, str] | None = None,
                 template: str | None = None, priority: int = 100) -> None:
        self.channel = channel
        self.hints = {**DEFAULT_FORMAT_HINTS, **(format_hints or {})}
        self.priority = priority
        base = template if template is not None else get_prompt("identity")
        values = {
            "{workspace}": str(Path(workspace).expanduser().resolve()),
            "{os}": f"{platform.system()} {platform.release()} ({platform.machine()})",
            "{python}": f"{sys.version_info.major}.{sys.version_info.minor}.{sys.version_info.micro}",
        }
        for placeholder, value in values.items():  # not str.format: templates may hold other braces
            base = base.replace(placeholder, value)
        self.base = base
        self._by_channel: dict[str | None, tuple[Message, ...]] = {}

    def text(self, channel: str | None) -> str:
        """The identity text for ``channel``."""
        text = self.base
        if channel:
            text += f"\nChannel: {channel}"
            hint = self.hints.get(channel.lower())
            if hint:
                text += f"\n\nFormatting: {hint}"
        return text

    def get_messages(self, state: Mapping[str, Any], runtime: Mapping[str, Any]) -> Sequence[Message]:
        """The identity system message for the runtime's (or configured) channel."""
        channel = runtime.get("channel") or self.channel
        channel = str(channel) if channel else None
        cached = self._by_channel.get(channel)
        if cached is None:
            text = self.text(channel)
            cached = (system(text, id=stable_id("identity", text), priority=self.priority),)
            self._by_channel[channel] = cached
        return cached
