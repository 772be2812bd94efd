"""OpenAI Responses API: ``to_openai_responses``, the ``input`` items and ``tools`` of ``responses.create``.

The Responses API takes a flat list of input items instead of chat messages:
a message (``{"role", "content"}``) per system, user or assistant text, one
``function_call`` item per tool call an assistant made, and one
``function_call_output`` item per tool result. Content parts are the input
types (``input_text``, ``input_image``, ``input_file``); an assistant's earlier
text is sent as a plain string, which the API accepts for every role.
The request rules are the chat API's (same pairing of calls and results), so
:func:`ctxcore.render.validate_request` with ``provider="openai"`` applies.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ctxcore.model.messages import FileBlock, ImageBlock, Message, TextBlock
from ctxcore.render._input import coerce

__all__ = ["responses_tools", "to_openai_responses"]


def to_openai_responses(
    messages: Iterable[Message | Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] = ()
) -> dict[str, Any]:
    """The messages (and tools) as the ``input`` (and ``tools``) of an OpenAI ``responses.create`` call.

    Order is kept: an assistant message's text item comes before its
    ``function_call`` items, each result is a ``function_call_output`` with the
    call's ``call_id``. Thinking kept from Anthropic replies is not sent.
    """
    items: list[dict[str, Any]] = []
    for m in coerce(messages):
        if m.role == "tool":
            items.append({"type": "function_call_output", "call_id": m.tool_call_id, "output": _output(m)})
            continue
        if m.role == "assistant":
            if m.text.strip():
                items.append({"role": "assistant", "content": m.text})
            items.extend(
                {"type": "function_call", "call_id": c.id, "name": c.name, "arguments": c.arguments} for c in m.tool_calls
            )
            continue
        items.append({"role": m.role, "content": _content(m)})
    body: dict[str, Any] = {"input": items}
    if tools:
        body["tools"] = responses_tools(tools)
    return body


def responses_tools(tools: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Tool definitions as Responses API function tools (flat ``name``, ``description``, ``parameters``).

    Accepts chat function tools (``{"type": "function", "function": {...}}``), tools
    already in the Responses shape (passed through) and Anthropic tools
    (``input_schema`` becomes ``parameters``).

    Raises:
        ValueError: a tool is none of these; the message names its index.
    """
    out: list[dict[str, Any]] = []
    for i, tool in enumerate(tools):
        if not isinstance(tool, Mapping):
            raise ValueError(f"tools[{i}]: a tool definition is an object, not {type(tool).__name__}")
        function = tool.get("function")
        spec: Mapping[str, Any] = function if isinstance(function, Mapping) else tool
        name = spec.get("name")
        if not isinstance(name, str) or not name:
            raise ValueError(f"tools[{i}]: a tool needs a 'name'")
        rendered: dict[str, Any] = {"type": "function", "name": name}
        if spec.get("description"):
            rendered["description"] = spec["description"]
        rendered["parameters"] = dict(spec.get("parameters") or spec.get("input_schema") or {"type": "object", "properties": {}})
        # The API's default is strict: true, which rejects most hand-written schemas; say what was meant.
        rendered["strict"] = bool(spec.get("strict", False))
        out.append(rendered)
    return out


def _content(m: Message) -> str | list[dict[str, Any]]:
    if m.content is None or isinstance(m.content, str):
        return m.content or ""
    return [_part(b) for b in m.content]


def _output(m: Message) -> str | list[dict[str, Any]]:
    """A tool result's output: its text, or input parts when it carries images or files."""
    if m.content is None or isinstance(m.content, str) or all(isinstance(b, TextBlock) for b in m.content):
        return m.text
    return [_part(b) for b in m.content]


def _part(b: TextBlock | ImageBlock | FileBlock) -> dict[str, Any]:
    if isinstance(b, TextBlock):
        return {"type": "input_text", "text": b.text}
    if isinstance(b, ImageBlock):
        return {"type": "input_image", "image_url": b.url, "detail": b.detail or "auto"}
    part: dict[str, Any] = {"type": "input_file"}
    for key in ("file_id", "file_data", "filename"):
        if getattr(b, key) is not None:
            part[key] = getattr(b, key)
    return part
