"""The Anthropic streaming wire format for a finished answer: the events a ``"stream": true`` request gets.

:class:`~ctxcore.testing.harness.anthropic_server.MessagesServer` makes each
answer whole (a ``message`` object). Clients that stream (pydantic-ai's
``AnthropicModel`` always does, and so does the ``anthropic`` package's
``messages.stream``) must receive the same answer as the server-sent events the
Messages API sends, so that they parse and accumulate it as they do against the
hosted API. This module only cuts a finished message into those events (no I/O,
no state), so the streamed and the non-streamed answers cannot disagree.

The sequence, per the ``anthropic`` package's ``types/raw_message_*_event.py``:
``message_start`` (the message with no content, no stop reason), then per
content block ``content_block_start`` / ``content_block_delta``\\ s /
``content_block_stop``, then ``message_delta`` (the stop reason and the output
tokens) and ``message_stop``. A block starts empty and fills through deltas the
way the API fills it: ``text`` through ``text_delta`` (one per word),
``thinking`` through ``thinking_delta`` then ``signature_delta``, and
``tool_use``, ``server_tool_use`` and ``mcp_tool_use`` through
``input_json_delta`` pieces of their input's JSON. Any other block (server tool
results, ``redacted_thinking``, ``compaction``...) arrives whole in its
``content_block_start``, as results do from the API.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["message_events"]

_INPUT_PIECE = 8  # characters of a tool input's JSON per delta: several deltas for any real call
_TOOL_KINDS = frozenset({"tool_use", "server_tool_use", "mcp_tool_use"})


def message_events(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The streaming events of one finished ``message`` object, in the order the API sends them."""
    usage = dict(message.get("usage") or {})
    start = {**message, "content": [], "stop_reason": None, "stop_sequence": None, "usage": {**usage, "output_tokens": 1}}
    events: list[dict[str, Any]] = [{"type": "message_start", "message": start}]
    for index, block in enumerate(message.get("content") or []):
        events += _block_events(index, block)
    events.append({"type": "message_delta",
                   "delta": {"stop_reason": message.get("stop_reason"), "stop_sequence": message.get("stop_sequence")},
                   "usage": {"output_tokens": usage.get("output_tokens", 0)}})
    events.append({"type": "message_stop"})
    return events


def _block_events(index: int, block: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``content_block_start``, the deltas that fill the block, ``content_block_stop``."""
    kind = block.get("type")
    deltas: list[dict[str, Any]]
    if kind == "text" and "citations" not in block:
        empty: dict[str, Any] = {**block, "text": ""}
        deltas = [{"type": "text_delta", "text": w} for w in re.findall(r"\S*\s*", str(block["text"])) if w]
    elif kind == "thinking":
        empty = {**block, "thinking": "", "signature": ""}
        deltas = [{"type": "thinking_delta", "thinking": block.get("thinking", "")},
                  {"type": "signature_delta", "signature": block.get("signature", "")}]
    elif kind in _TOOL_KINDS:
        empty = {**block, "input": {}}
        text = json.dumps(block.get("input") or {})
        deltas = [{"type": "input_json_delta", "partial_json": text[k:k + _INPUT_PIECE]}
                  for k in range(0, len(text), _INPUT_PIECE)]
    else:  # results, redacted thinking, compaction, cited text: whole at the start
        empty, deltas = dict(block), []
    return [{"type": "content_block_start", "index": index, "content_block": empty},
            *({"type": "content_block_delta", "index": index, "delta": d} for d in deltas),
            {"type": "content_block_stop", "index": index}]
