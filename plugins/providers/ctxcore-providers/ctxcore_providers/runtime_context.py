"""``runtime_context``: the current user message, with a runtime-metadata block appended.

Design: the current turn is not part of the stored history. The agent passes
it as ``state[input_key]`` (default ``"input"``: a string, an OpenAI user dict,
or ``{"content": ..., "media": [paths]}``), and this provider emits it as the
last user message with the block after the user's text::

    <user text>

    [Runtime Context — metadata only, not instructions]
    Current Time: 2026-11-29 20:15 (Sunday) UTC
    Channel: telegram
    Chat ID: 42
    Sender ID: alice
    [/Runtime Context]

The user's text comes first, so the message's prefix is stable. Because the
provider builds a new message and never writes to the state, the block is never
persisted back into history; ``metadata["original_content"]`` holds what the
agent should store. Marker look-alikes in the user's text are neutralised; the
``history`` provider does the same for stored user and tool messages, so the
block written here is the only live one.

Runtime values (``runtime`` mapping): ``now`` (a datetime or ISO 8601 text,
else the provider's clock), ``channel``, ``chat_id``, ``sender_id``. Channel and Chat ID are
written only when both are known.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ctxcore import Message, TextBlock
from ctxcore.kit import get_prompt
from ctxcore_providers._markers import neutralize_markers
from ctxcore_providers._render import stable_id
from ctxcore_providers.media import MAX_IMAGE_BYTES, attachment_blocks

Clock = Callable[[], datetime]

#: line breaks and control characters; a runtime value containing them could add lines to the block.
_BREAKS = re.compile("[\x00-\x1f\x7f\x85\u2028\u2029]+")


def _one_line(value: Any) -> str:
    return _BREAKS.sub(" ", str(value)).strip()


def _utc_now() -> datetime:
    return datetime.now(timezone.utc)


class RuntimeContextConfig(BaseModel):
    """Options of the ``runtime_context`` provider."""

    model_config = ConfigDict(extra="forbid")

    input_key: str = Field(default="input", description="State key of the current user message.")
    channel: str | None = Field(default=None, description="Default channel when runtime['channel'] is absent.")
    timezone: str | None = Field(default=None, description="IANA zone for Current Time (default UTC).")
    time_format: str = Field(default="%Y-%m-%d %H:%M (%A) %Z", description="strftime format of Current Time.")
    max_image_bytes: int = Field(default=MAX_IMAGE_BYTES, gt=0, description="Larger images are referenced by path.")


class RuntimeContext:
    """Emits the current user message with its runtime block (nothing when there is no input)."""

    def __init__(self, input_key: str = "input", *, channel: str | None = None, timezone_name: str | None = None,
                 time_format: str = "%Y-%m-%d %H:%M (%A) %Z", max_image_bytes: int = MAX_IMAGE_BYTES,
                 clock: Clock = _utc_now) -> None:
        self.input_key = input_key
        self.channel = channel
        self.tz: Any = timezone.utc
        if timezone_name:
            from zoneinfo import ZoneInfo

            self.tz = ZoneInfo(timezone_name)
        self.time_format = time_format
        self.max_image_bytes = max_image_bytes
        self.clock = clock
        self.header = get_prompt("runtime_context_header")
        self.footer = get_prompt("runtime_context_footer")

    def block(self, runtime: Mapping[str, Any]) -> str:
        """The runtime block for these runtime values."""
        now = runtime.get("now") or self.clock()
        if isinstance(now, str):
            try:
                now = datetime.fromisoformat(now)
            except ValueError:
                raise ValueError(f"runtime['now'] {now!r} is not an ISO 8601 time like 2026-03-01T09:30:00+00:00") from None
        if not isinstance(now, datetime):
            raise ValueError(f"runtime['now'] must be a datetime or ISO 8601 text, not {type(now).__name__}")
        if now.tzinfo is None:
            now = now.replace(tzinfo=timezone.utc)
        lines = [self.header, f"Current Time: {now.astimezone(self.tz).strftime(self.time_format)}"]
        channel = runtime.get("channel") or self.channel
        chat_id = runtime.get("chat_id")
        if channel and chat_id:
            lines += [f"Channel: {_one_line(channel)}", f"Chat ID: {_one_line(chat_id)}"]
        if runtime.get("sender_id"):
            lines.append(f"Sender ID: {_one_line(runtime['sender_id'])}")
        lines.append(self.footer)
        return "\n".join(neutralize_markers(line) if 1 <= i < len(lines) - 1 else line for i, line in enumerate(lines))

    def _input(self, state: Mapping[str, Any]) -> tuple[str, list[str]] | None:
        value = state.get(self.input_key)
        if value is None:
            return None
        if isinstance(value, Message):
            if value.role != "user":
                raise ValueError(f"state[{self.input_key!r}] must be a user message, not {value.role!r}")
            return value.text, list(value.metadata.get("media") or ())
        if isinstance(value, str):
            return value, []
        if isinstance(value, Mapping):
            if value.get("role", "user") != "user":
                raise ValueError(f"state[{self.input_key!r}] must be a user message, not role {value.get('role')!r}")
            content = value.get("content", "")
            if not isinstance(content, str):
                raise ValueError(f"state[{self.input_key!r}]['content'] must be text; put attachments in 'media'")
            media = value.get("media") or []
            if not isinstance(media, list) or not all(isinstance(m, str) for m in media):
                raise ValueError(f"state[{self.input_key!r}]['media'] must be a list of file paths")
            return content, list(media)
        raise ValueError(f"state[{self.input_key!r}] must be a string or a user message dict, not {type(value).__name__}")

    def get_messages(self, state: Mapping[str, Any], runtime: Mapping[str, Any]) -> Sequence[Message]:
        """The current user message with the runtime block appended after the user's text."""
        parsed = self._input(state)
        if parsed is None:
            return ()
        original, media = parsed
        text = neutralize_markers(original)
        images, references = attachment_blocks(media, max_image_bytes=self.max_image_bytes) if media else ([], [])
        if references:  # attachment names come from senders too: neutralise them like the text
            references = [neutralize_markers(r) for r in references]
            text = "\n".join([text, *references]) if text else "\n".join(references)
        full = f"{text}\n\n{self.block(runtime)}" if text else self.block(runtime)
        content: Any = full if not images else (*images, TextBlock(text=full))
        metadata = {"runtime_context": True, "original_content": original}
        return (Message(id=stable_id("current", self.input_key, original), role="user", content=content, metadata=metadata),)
