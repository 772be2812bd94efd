"""Shared message-walking for token counters: the counter contract in one base class.

A counter plugin implements ``count_text``; :class:`MessageCounter` turns that
into message, request, image and tool-schema counts following OpenAI's published
rules for chat models:

- every message costs ``tokens_per_message`` (3) plus its role and its values;
  a ``name`` costs one more token;
- every request is primed with ``reply_priming`` (3) tokens for the reply;
- a tool call costs ``tokens_per_tool_call`` plus its id, name and JSON arguments;
- an image costs OpenAI's tile rule (:func:`ctxcore.model.images.openai_image_tokens`),
  or ``image_tokens`` flat when a counter sets it (providers with another rule);
- tool definitions follow the OpenAI cookbook rule for function schemas;
- a provider block (an Anthropic server tool result, a Responses reasoning
  item...) costs the tokens of its compact JSON, which is what the API reads.

Lives in core because every counter plugin needs it and plugins never import
each other.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any

from ctxcore.model.images import image_size, openai_image_tokens
from ctxcore.model.messages import FileBlock, ImageBlock, Message, ProviderBlock, TextBlock

__all__ = ["MessageCounter"]


class MessageCounter(ABC):
    """Base class for counters: subclasses provide :meth:`count_text` and a ``name``.

    ``name`` is the counter's identity: two counters with the same name must give
    the same counts (the count cache is keyed by it), so it includes whatever
    configuration changes counts (``tiktoken:o200k_base``, ``approximate:cl100k``).
    Class attributes hold the per-message overheads; subclasses may change them.
    """

    name: str = "counter"
    tokens_per_message: int = 3
    tokens_per_name: int = 1
    tokens_per_tool_call: int = 3
    reply_priming: int = 3
    #: flat cost per image; ``None`` applies OpenAI's detail/tile rule.
    image_tokens: int | None = None
    # Function-schema overheads of the OpenAI cookbook rule (gpt-4o values).
    tool_function_init: int = 7
    tool_properties_init: int = 3
    tool_property_key: int = 3
    tool_enum_init: int = -3
    tool_enum_item: int = 3
    tool_end: int = 12

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
            return self.count_image(block)
        if isinstance(block, FileBlock):
            return self.count_text(block.filename or "") + self.count_text(block.file_id or "") + self.count_text(block.file_data or "")
        if isinstance(block, ProviderBlock):
            return self.count_text(block.wire_json)  # the provider reads the block's JSON
        return 0  # pragma: no cover - Message only holds the block types above

    def count_image(self, block: ImageBlock) -> int:
        """Tokens of one image: ``image_tokens`` when set, else OpenAI's tile rule."""
        if self.image_tokens is not None:
            return self.image_tokens
        size = image_size(block) if block.detail != "low" else None
        width, height = size if size else (None, None)
        return openai_image_tokens(width, height, block.detail)

    def count_messages(self, messages: Sequence[Message]) -> int:
        """Tokens of a request: every message plus the reply priming."""
        return sum(self.count_message(m) for m in messages) + self.reply_priming

    def count_tools(self, tools: Sequence[Mapping[str, Any]]) -> int:
        """Tokens of tool definitions, by the OpenAI cookbook rule for function schemas.

        Accepts ``{"type": "function", "function": {...}}`` entries or bare
        function objects. Each function costs an init overhead plus
        ``name:description``; each parameter a key overhead plus
        ``key:type:description`` and its enum values; nested object properties
        are counted the same way (the cookbook stops at the top level, which
        under-counts nested schemas).
        """
        if not tools:
            return 0
        count = 0
        for tool in tools:
            function = tool.get("function", tool)
            if not isinstance(function, Mapping):
                raise ValueError(f"tool definition must be a mapping, not {type(function).__name__}")
            count += self.tool_function_init
            count += self.count_text(f"{function.get('name', '')}:{_strip_dot(function.get('description'))}")
            parameters = function.get("parameters") or {}
            count += self._count_properties(parameters.get("properties") or {})
        return count + self.tool_end

    def _count_properties(self, properties: Mapping[str, Any]) -> int:
        if not properties:
            return 0
        count = self.tool_properties_init
        for key, spec in properties.items():
            spec = spec if isinstance(spec, Mapping) else {}
            count += self.tool_property_key
            enum = spec.get("enum")
            if enum:
                count += self.tool_enum_init
                for item in enum:
                    count += self.tool_enum_item + self.count_text(str(item))
            kind = spec.get("type", "")
            kind = "|".join(map(str, kind)) if isinstance(kind, list) else str(kind)
            count += self.count_text(f"{key}:{kind}:{_strip_dot(spec.get('description'))}")
            count += self._count_properties(spec.get("properties") or {})
            items = spec.get("items")
            if isinstance(items, Mapping):
                count += self._count_properties(items.get("properties") or {})
        return count


def _strip_dot(description: Any) -> str:
    text = str(description or "")
    return text[:-1] if text.endswith(".") else text
