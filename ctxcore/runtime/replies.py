"""Model replies -> the assistant :class:`Message` a thread appends (``Thread.add_response``).

Accepted, as SDK objects or their dicts:

- an OpenAI chat completion (its first choice), or a chat completion message;
- an OpenAI Responses API response (``output`` items: ``message`` text and
  ``function_call`` items become one assistant message; ``reasoning`` (with
  its ``encrypted_content``), hosted tool calls, ``compaction`` and any other
  item become provider blocks of it, re-sent byte-exact, see
  :func:`ctxcore.model.responses_io.assistant_from_output`);
- an Anthropic ``Message`` (or its dict): text, ``tool_use``, ``thinking`` and
  ``redacted_thinking`` blocks, the thinking kept byte-exact for re-sending;
  server tool calls and results, MCP blocks, ``compaction`` and any other
  block as provider blocks (docs/blocks.md).

Keys of an OpenAI reply that only exist in responses (``annotations``) are
dropped so the message can be sent back as a request message.

Refused: the output of the standalone ``responses.compact()`` endpoint. It
is not a model turn but a replacement for the whole conversation (the user
messages, then one compaction item), which a thread cannot append. Server-side
compaction (``context_management=[{"type": "compaction", ...}]`` on
``responses.create``) returns its compaction item inside an ordinary reply,
which is kept like any other item.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ctxcore.model.anthropic_io import message_from_anthropic
from ctxcore.model.messages import Message
from ctxcore.model.responses_io import assistant_from_output

__all__ = ["applied_edits", "message_from_reply"]

# What an assistant message in a chat-completions request may carry.
_OPENAI_ASSISTANT_KEYS = frozenset({"role", "content", "name", "tool_calls", "refusal", "audio", "function_call"})
_ANTHROPIC_ONLY_BLOCKS = frozenset({
    "tool_use", "thinking", "redacted_thinking", "server_tool_use", "mcp_tool_use", "compaction", "container_upload",
})


def message_from_reply(response: Any, **provenance: Any) -> Message:
    """The assistant message of a model reply from any of the supported APIs.

    Raises:
        ValueError: the reply is none of the supported shapes (or has no choice),
            named in the message; or it is the output of ``responses.compact()``.
    """
    marker = response.get("object") if isinstance(response, Mapping) else getattr(response, "object", None)
    if marker == "response.compaction":
        raise ValueError(
            "add_response got the output of responses.compact(), which replaces the conversation rather than "
            "answering it, so a thread cannot append it; use server-side compaction instead: pass "
            "context_management=[{\"type\": \"compaction\", \"compact_threshold\": N}] to responses.create and "
            "give its reply to add_response (the compaction item is kept, and builds start at it)"
        )
    data = _plain(response)
    if not isinstance(data, Mapping):
        raise ValueError(f"add_response expects an OpenAI or Anthropic reply (object or dict), got {type(response).__name__}")
    if isinstance(data.get("output"), list):
        return _from_responses(data, provenance)
    if "choices" in data:
        choices = data.get("choices") or []
        if not choices:
            raise ValueError("the chat completion has no choices")
        data = _plain(choices[0]).get("message") or {}
    if _is_anthropic(data):
        return message_from_anthropic({"role": "assistant", "content": data.get("content")}, **provenance)
    if data.get("role") != "assistant":
        raise ValueError(f"a reply is an assistant message, not role {data.get('role')!r}")
    kept = {k: v for k, v in data.items() if k in _OPENAI_ASSISTANT_KEYS and v is not None}
    kept.setdefault("content", None)
    return Message.from_openai(kept, **provenance)


def applied_edits(response: Any) -> list[dict[str, Any]]:
    """The context edits Anthropic reports it applied before answering (``context_management.applied_edits``).

    Anthropic clears old tool results or thinking server-side (``context_management``
    edits) and says so in the reply only; a thread keeps the report in its step
    metadata so what the server dropped stays on record. Empty for other replies.
    """
    data = _plain(response)
    managed = data.get("context_management") if isinstance(data, Mapping) else None
    edits = managed.get("applied_edits") if isinstance(managed, Mapping) else None
    return [dict(e) for e in edits if isinstance(e, Mapping)] if isinstance(edits, list) else []


def _is_anthropic(data: Mapping[str, Any]) -> bool:
    if "stop_reason" in data or data.get("type") == "message":
        return True
    content = data.get("content")
    return isinstance(content, list) and any(
        isinstance(b, Mapping) and b.get("type") in _ANTHROPIC_ONLY_BLOCKS for b in content
    )


def _from_responses(data: Mapping[str, Any], provenance: dict[str, Any]) -> Message:
    return assistant_from_output(data["output"], **provenance)


def _plain(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    if callable(dump) and not isinstance(value, Message):
        return dump(mode="json", exclude_none=True)
    return value
