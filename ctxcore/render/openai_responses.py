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

from ctxcore.errors import InvalidHistory
from ctxcore.model.blocks import ProviderBlock, foreign_block, foreign_block_error
from ctxcore.model.messages import FileBlock, ImageBlock, Message, TextBlock
from ctxcore.model.responses_io import RESPONSES_ROLE_KEY, raw_responses_items
from ctxcore.render._input import coerce
from ctxcore.render.openai import check_openai_message

__all__ = ["check_responses", "responses_tools", "to_openai_responses"]


def to_openai_responses(
    messages: Iterable[Message | Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] = ()
) -> dict[str, Any]:
    """The messages (and tools) as the ``input`` (and ``tools``) of an OpenAI ``responses.create`` call.

    Order is kept: an assistant message's text item comes before its
    ``function_call`` items, each result is a ``function_call_output`` with the
    call's ``call_id``. Thinking kept from Anthropic replies is not sent.
    An assistant turn read from Responses items (reasoning, hosted tool calls,
    compaction) is re-sent item for item while unchanged; changed, its
    provider blocks are sent as they came, in content order, before its
    function calls. A system message read from a ``developer`` item is sent
    as ``developer``.

    Raises:
        InvalidHistory: a provider block of another API (an Anthropic server
            tool result...), naming the message and the block.
    """
    items: list[dict[str, Any]] = []
    for index, m in enumerate(coerce(messages)):
        try:
            items.extend(_items(m))
        except InvalidHistory as exc:
            raise InvalidHistory(str(exc), index=index) from None
    body: dict[str, Any] = {"input": items}
    if tools:
        body["tools"] = responses_tools(tools)
    return body


def check_responses(items: Sequence[Message]) -> None:
    """Raise :class:`InvalidHistory` for the first message the Responses API would reject (pairing is checked elsewhere).

    A message holding provider blocks must hold the Responses API's own; one
    without them follows OpenAI's chat rules (the same for both APIs).
    """
    for index, m in enumerate(items):
        if isinstance(m.content, tuple) and any(isinstance(b, ProviderBlock) for b in m.content):
            foreign = foreign_block(m.content, "openai-responses")
            if foreign is not None:
                raise InvalidHistory(foreign_block_error(foreign, "the OpenAI Responses API"), index=index)
            continue
        check_openai_message(m, index)


def _items(m: Message) -> list[dict[str, Any]]:
    """The input items of one message."""
    if m.role == "tool":
        return [{"type": "function_call_output", "call_id": m.tool_call_id, "output": _output(m)}]
    if m.role == "assistant":
        raw = raw_responses_items(m)
        if raw is not None:
            return raw
        return _assistant_items(m)
    role = m.metadata.get(RESPONSES_ROLE_KEY, m.role) if m.role == "system" else m.role
    if not isinstance(m.content, tuple) or not any(isinstance(b, ProviderBlock) for b in m.content):
        return [{"role": role, "content": _content(m)}]
    return _split_items(role, m.content)


def _assistant_items(m: Message) -> list[dict[str, Any]]:
    """An assistant message from its fields: text and provider blocks in order, then its function calls."""
    items: list[dict[str, Any]] = []
    if isinstance(m.content, tuple) and any(isinstance(b, ProviderBlock) for b in m.content):
        items.extend(_split_items("assistant", m.content, assistant=True))
    elif m.text.strip():
        items.append({"role": "assistant", "content": m.text})
    items.extend({"type": "function_call", "call_id": c.id, "name": c.name, "arguments": c.arguments} for c in m.tool_calls)
    return items


def _split_items(role: str, content: tuple[Any, ...], assistant: bool = False) -> list[dict[str, Any]]:
    """Content holding provider blocks as items: each block its own item, the parts between as a message."""
    items: list[dict[str, Any]] = []
    pending: list[Any] = []

    def flush() -> None:
        if pending:
            text = "\n".join(b.text for b in pending if isinstance(b, TextBlock))
            items.append({"role": role, "content": text if assistant else [_part(b) for b in pending]})
            pending.clear()

    for b in content:
        if not isinstance(b, ProviderBlock):
            pending.append(b)
            continue
        if b.api != "openai-responses":
            raise InvalidHistory(foreign_block_error(b, "the OpenAI Responses API"))
        flush()
        items.append(dict(b.raw))
    flush()
    return items


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


def _part(b: TextBlock | ImageBlock | FileBlock | ProviderBlock) -> dict[str, Any]:
    if isinstance(b, TextBlock):
        return {"type": "input_text", "text": b.text}
    if isinstance(b, ImageBlock):
        return {"type": "input_image", "image_url": b.url, "detail": b.detail or "auto"}
    if isinstance(b, ProviderBlock):  # inside a tool result: no item of its own there
        raise InvalidHistory(foreign_block_error(b, "an OpenAI Responses function_call_output")
                             if b.api != "openai-responses" else
                             f"a {b.kind!r} item cannot be part of a function_call_output; send it as its own item")
    part: dict[str, Any] = {"type": "input_file"}
    for key in ("file_id", "file_data", "filename"):
        if getattr(b, key) is not None:
            part[key] = getattr(b, key)
    return part
