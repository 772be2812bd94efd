"""Rendering of HuggingFace chat templates with jinja2, the way ``transformers`` does.

``transformers`` renders a tokenizer's ``chat_template`` in a sandboxed jinja2
environment with ``trim_blocks`` and ``lstrip_blocks``, a ``tojson`` filter
that does not HTML-escape, and a ``raise_exception`` global. This module does
the same so templated counts need only ``jinja2``, not ``transformers``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from jinja2 import TemplateError
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

from ctxcore import ImageBlock, Message, ProviderBlock, TextBlock

__all__ = ["ChatTemplate", "TemplateError", "message_to_template_dict"]


def _raise_exception(message: str) -> None:
    raise TemplateError(message)


def _tojson(value: Any, ensure_ascii: bool = False, indent: int | None = None,
            separators: tuple[str, str] | None = None, sort_keys: bool = False) -> str:
    return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def _strftime_now(fmt: str) -> str:
    return datetime.now().strftime(fmt)


def message_to_template_dict(message: Message) -> dict[str, Any]:
    """A message as chat templates expect it (``transformers`` conventions).

    Text content is a string; content with images becomes a list of
    ``{"type": "text"}`` / ``{"type": "image"}`` parts; tool-call arguments are
    decoded to objects, as ``apply_chat_template`` expects. A provider block (a
    server tool result, a compaction...) is text: its compact JSON, in its
    place, which is what the model is given of it.
    """
    out: dict[str, Any] = {"role": message.role}
    content = message.content
    if content is None or isinstance(content, str):
        out["content"] = content or ""
    elif any(isinstance(b, ImageBlock) for b in content):
        out["content"] = [{"type": "text", "text": _text(b)} if isinstance(b, (TextBlock, ProviderBlock))
                          else {"type": "image"} for b in content if isinstance(b, (TextBlock, ImageBlock, ProviderBlock))]
    else:
        out["content"] = "\n".join(_text(b) for b in content if isinstance(b, (TextBlock, ProviderBlock)))
    if message.name:
        out["name"] = message.name
    if message.tool_call_id:
        out["tool_call_id"] = message.tool_call_id
    if message.tool_calls:
        out["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": _arguments(c.arguments)}}
            for c in message.tool_calls
        ]
    return out


def _text(block: TextBlock | ProviderBlock) -> str:
    return block.text if isinstance(block, TextBlock) else block.wire_json


def _arguments(text: str) -> Any:
    try:
        return json.loads(text) if text else {}
    except json.JSONDecodeError:
        return text  # not JSON: templates get the raw string


class ChatTemplate:
    """A compiled chat template plus the special-token values templates read."""

    def __init__(self, source: str, *, bos_token: str = "", eos_token: str = "") -> None:
        env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
        env.filters["tojson"] = _tojson
        env.globals["raise_exception"] = _raise_exception
        env.globals["strftime_now"] = _strftime_now
        self.source = source
        self._template = env.from_string(source)
        self._values = {"bos_token": bos_token, "eos_token": eos_token}

    def render(self, messages: Sequence[Mapping[str, Any]], *, add_generation_prompt: bool,
               tools: Sequence[Mapping[str, Any]] | None = None) -> str:
        """The prompt text for ``messages`` (dicts as :func:`message_to_template_dict` makes)."""
        return self._template.render(
            messages=list(messages), add_generation_prompt=add_generation_prompt, tools=list(tools) if tools else None,
            **self._values,
        )
