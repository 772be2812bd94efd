"""Shared message-walking for token counters.

A counter plugin implements ``count_text``; :class:`MessageCounter` turns that
into message, request and tool-schema counts following OpenAI's published rules
for chat models (every message costs a fixed overhead plus its role and values;
a ``name`` costs one more token; every reply is primed with three tokens). Lives
in core because every counter plugin needs it and plugins never import each
other.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from typing import Any, Mapping, Sequence

from ctxcore.messages import FileBlock, ImageBlock, Message, TextBlock

__all__ = ["MessageCounter"]


class MessageCounter(ABC):
    """Base class for counters: subclasses provide :meth:`count_text` and a ``name``.

    Class attributes hold the per-message overheads; subclasses may change them.
    ``image_tokens`` is a flat cost per image until detail-aware pricing lands.
    """

    name: str = "counter"
    tokens_per_message: int = 3
    tokens_per_name: int = 1
    tokens_per_tool_call: int = 3
    reply_priming: int = 3
    image_tokens: int = 85

    @abstractmethod
    def count_text(self, text: str) -> int:
        """Tokens of a bare string."""

    def count_message(self, message: Message) -> int:
        """Overhead, role, content blocks, name, tool_call_id and tool calls with arguments."""
        count = self.tokens_per_message + self.count_text(message.role)
        content = message.content
        if isinstance(content, str):
            count += self.count_text(content)
        elif content:
            for block in content:
                count += self._count_block(block)
        if message.name:
            count += self.count_text(message.name) + self.tokens_per_name
        if message.tool_call_id:
            count += self.count_text(message.tool_call_id)
        for call in message.tool_calls:
            count += (
                self.tokens_per_tool_call
                + self.count_text(call.id)
                + self.count_text(call.name)
                + self.count_text(call.arguments)
            )
        return count

    def _count_block(self, block: Any) -> int:
        if isinstance(block, TextBlock):
            return self.count_text(block.text)
        if isinstance(block, ImageBlock):
            return self.image_tokens
        if isinstance(block, FileBlock):
            return self.count_text(block.filename or "") + self.count_text(block.file_id or "") + self.count_text(block.file_data or "")
        return 0  # pragma: no cover - Message only holds the block types above

    def count_messages(self, messages: Sequence[Message]) -> int:
        """Tokens of a request: every message plus the reply priming."""
        return sum(self.count_message(m) for m in messages) + self.reply_priming

    def count_tools(self, tools: Sequence[Mapping[str, Any]]) -> int:
        """Tokens of tool definitions, measured on their compact JSON."""
        if not tools:
            return 0
        return self.count_text(json.dumps(list(tools), ensure_ascii=False, separators=(",", ":"), sort_keys=True))
