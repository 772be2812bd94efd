"""The full text of a message as a report shows it: content, tool calls with pretty-printed arguments.

A report's message records carry a 60-character preview; the pages show the
whole message behind an expand control. :func:`message_text` gives that text
(credentials redacted, like every text field of a page) and :func:`messages_by_id`
collects the messages a report can look texts up in.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from ctxcore.model.messages import ImageBlock, Message, ProviderBlock, TextBlock
from ctxcore.redaction import redact_text

__all__ = ["message_text", "messages_by_id"]


def _arguments(text: str) -> str:
    """Tool-call arguments indented as JSON; text that is not JSON is shown as it is."""
    try:
        return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    except (ValueError, TypeError):
        return text


def _content(m: Message) -> str:
    if m.content is None or isinstance(m.content, str):
        return m.content or ""
    parts: list[str] = []
    for block in m.content:
        if isinstance(block, TextBlock):
            parts.append(block.text)
        elif isinstance(block, ImageBlock):
            parts.append("[image]")
        elif isinstance(block, ProviderBlock):
            parts.append(f"[{block.kind}]")
        else:
            parts.append(f"[{getattr(block, 'type', 'block')}]")
    return "\n".join(parts)


def message_text(m: Message) -> dict[str, Any]:
    """``{"text": ..., "tool_calls": [{"id", "name", "arguments"}], "tool_call_id", "name"}``, redacted.

    ``arguments`` is pretty-printed JSON (two-space indent) when it parses.
    """
    return {
        "text": redact_text(_content(m)),
        "tool_calls": [{"id": c.id, "name": c.name, "arguments": redact_text(_arguments(c.arguments))}
                       for c in m.tool_calls],
        "tool_call_id": m.tool_call_id,
        "name": m.name,
    }


def messages_by_id(*groups: Iterable[Message] | None) -> dict[str, Message]:
    """Every message of ``groups`` by id (the first occurrence wins); ``None`` groups are skipped."""
    out: dict[str, Message] = {}
    for group in groups:
        for m in group or ():
            out.setdefault(m.id, m)
    return out
