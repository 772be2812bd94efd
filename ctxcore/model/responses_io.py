"""OpenAI Responses API input items -> ctxcore messages: the inverse of :func:`ctxcore.render.to_openai_responses`.

A Responses conversation is a flat list of items: messages (``{"role",
"content"}``, optionally ``"type": "message"``), one ``function_call`` item per
tool call and one ``function_call_output`` item per result. ctxcore keeps an
assistant's calls on one message (as the chat API does), so a run of
consecutive ``function_call`` items becomes one assistant message whose
``tool_calls`` are the run's calls in order; an assistant text item before
them stays its own message (the pair is as legal as one message).

Mapping:

- a message item -> a message of its role (``developer`` is refused, as in
  :meth:`Message.from_openai`); content parts ``input_text``/``output_text``
  -> text (a lone text part becomes plain string content, as a reply does),
  ``refusal`` -> its text, ``input_image`` (by URL) -> :class:`ImageBlock`,
  ``input_file`` -> :class:`FileBlock`;
- ``function_call`` -> a :class:`ToolCall` (``call_id``, ``name``, ``arguments``);
- ``function_call_output`` -> a ``tool`` message answering ``call_id``;
- ``reasoning`` -> nothing: ctxcore cannot re-send encrypted reasoning (as
  ``Thread.add_response`` does with a reply's reasoning).

Anything else (``item_reference``, built-in tool calls) is refused, naming the item.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import ValidationError

from ctxcore.model._unchecked import unchecked_call, unchecked_message, unchecked_text
from ctxcore.model.messages import (
    FileBlock,
    ImageBlock,
    Message,
    TextBlock,
    ToolCall,
)

__all__ = ["messages_from_responses"]

_ROLES = frozenset({"user", "assistant", "system"})
_TEXT_PARTS = frozenset({"input_text", "output_text"})


def messages_from_responses(items: Iterable[Any], **provenance: Any) -> list[Message]:
    """The ctxcore messages of a list of Responses input items (dicts or SDK objects).

    ``provenance`` (``source``, ``trust``, ``priority``, ``metadata``...) is given
    to every message made; an explicit ``id`` is only allowed when one message results.

    Raises:
        ValueError: an item is not one ctxcore can represent; the message names its index.
    """
    if type(items) is list and not provenance:
        made = _plain_messages(items)
        if made is not None:
            return made
    return _validated_messages(items, **provenance)


def _validated_messages(items: Iterable[Any], **provenance: Any) -> list[Message]:
    """:func:`messages_from_responses` through validation only: the reference its fast path is held equal to.

    Raises:
        ValueError: as :func:`messages_from_responses`.
    """
    out: list[Message] = []
    calls: list[ToolCall] = []
    for i, raw in enumerate(items):
        item = _plain(raw)
        if not isinstance(item, Mapping):
            raise ValueError(f"item {i}: a Responses input item is an object, not {type(item).__name__}")
        kind = item.get("type", "message")
        if kind == "function_call":
            calls.append(_call(i, item))
            continue
        if calls:
            out.append(_make(i, {"role": "assistant", "content": None, "tool_calls": tuple(calls)}, provenance))
            calls = []
        if kind == "message":
            out.append(_message(i, item, provenance))
        elif kind == "function_call_output":
            call_id = item.get("call_id")
            if not isinstance(call_id, str) or not call_id:
                raise ValueError(f"item {i}: a function_call_output needs the 'call_id' of the call it answers")
            out.append(_make(i, {"role": "tool", "tool_call_id": call_id, "content": _content(i, item.get("output", ""))}, provenance))
        elif kind != "reasoning":
            raise ValueError(
                f"item {i}: Responses item type {kind!r} is not supported "
                "(message, function_call, function_call_output, reasoning)"
            )
    if calls:
        out.append(_make(len(out), {"role": "assistant", "content": None, "tool_calls": tuple(calls)}, provenance))
    if len(out) > 1 and "id" in provenance:
        raise ValueError("an explicit id names one message, but these items make several")
    return out


def _plain(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    if callable(dump) and not isinstance(value, Message):
        return dump(mode="json", exclude_none=True)
    return value


def _call(i: int, item: Mapping[str, Any]) -> ToolCall:
    call_id, name, arguments = item.get("call_id"), item.get("name"), item.get("arguments", "{}")
    if not isinstance(call_id, str) or not call_id or not isinstance(name, str) or not isinstance(arguments, str):
        raise ValueError(f"item {i}: a function_call needs string 'call_id', 'name' and 'arguments'")
    return ToolCall(id=call_id, name=name, arguments=arguments)


def _message(i: int, item: Mapping[str, Any], provenance: dict[str, Any]) -> Message:
    role = item.get("role")
    if role == "developer":
        raise ValueError(f"item {i}: role 'developer' is not supported; use 'system'")
    if role not in _ROLES:
        raise ValueError(f"item {i}: a message item has role 'user', 'assistant' or 'system', not {role!r}")
    return _make(i, {"role": role, "content": _content(i, item.get("content"))}, provenance)


def _content(i: int, content: Any) -> str | tuple[Any, ...] | None:
    if content is None or isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise ValueError(f"item {i}: 'content' must be a string or a list of parts, not {type(content).__name__}")
    blocks: list[Any] = []
    for k, part in enumerate(content):
        kind = part.get("type") if isinstance(part, Mapping) else None
        where = f"item {i}: content[{k}]"
        if kind in _TEXT_PARTS or kind == "refusal":
            text = part.get("refusal" if kind == "refusal" else "text")
            if not isinstance(text, str):
                raise ValueError(f"{where}: a {kind} part needs a string {'refusal' if kind == 'refusal' else 'text'!r}")
            blocks.append(TextBlock(text=text))
        elif kind == "input_image":
            url = part.get("image_url")
            if not isinstance(url, str):
                raise ValueError(f"{where}: an input_image part needs an 'image_url' (a file_id image is not supported)")
            blocks.append(ImageBlock(url=url, detail=part.get("detail")))
        elif kind == "input_file":
            blocks.append(FileBlock(file_id=part.get("file_id"), file_data=part.get("file_data"), filename=part.get("filename")))
        else:
            raise ValueError(f"{where}: unsupported content part type {kind!r} "
                             "(supported: input_text, output_text, refusal, input_image, input_file)")
    if len(blocks) == 1 and isinstance(blocks[0], TextBlock):
        return blocks[0].text
    return tuple(blocks)


def _make(i: int, fields: dict[str, Any], provenance: dict[str, Any]) -> Message:
    try:
        return Message(**fields, **provenance)
    except ValidationError as exc:
        detail = "; ".join(e["msg"].removeprefix("Value error, ") for e in exc.errors(include_url=False))
        raise ValueError(f"item {i}: {detail}") from None


# ---------------------------------------------------------------- the fast path
# What the checking path's Message(...) is given (its fields-set) for each kind of message.
_GIVEN_MESSAGE = frozenset({"role", "content"})
_GIVEN_CALLS = frozenset({"role", "content", "tool_calls"})
_GIVEN_RESULT = frozenset({"role", "content", "tool_call_id"})
_NOT_PLAIN: Any = object()


def _plain_messages(items: list[Any]) -> list[Message] | None:
    """The messages of plain Responses items, made without validation; ``None``: take the checking path.

    Plain: dicts whose fields have their exact types (a message item of role
    user, assistant or system with ``str``, null or text-part content; a
    ``function_call`` with ``str`` call_id, name and arguments, a
    ``function_call_output`` with a non-empty ``str`` call_id and ``str`` or
    text-part output; ``reasoning``). For those the checks are exactly what
    :func:`_validated_messages` makes and the messages equal its messages
    (same fields, same fields-set; a hypothesis property in
    tests/test_convert_fast.py) but for their random ids. Anything else
    returns ``None``: the checking path converts it or names what is wrong.
    """
    out: list[Message] = []
    calls: list[ToolCall] = []
    for item in items:
        if type(item) is not dict:
            return None
        kind = item.get("type", "message")
        if kind == "function_call":
            call = _plain_call(item)
            if call is None:
                return None
            calls.append(call)
            continue
        if calls:
            out.append(unchecked_message("assistant", _GIVEN_CALLS, None, tuple(calls)))
            calls = []
        if kind == "message":
            role, content = item.get("role"), _plain_content(item.get("content"))
            if type(role) is not str or role not in _ROLES or content is _NOT_PLAIN:
                return None
            out.append(unchecked_message(role, _GIVEN_MESSAGE, content))
        elif kind == "function_call_output":
            call_id, content = item.get("call_id"), _plain_content(item.get("output", ""))
            if type(call_id) is not str or not call_id or content is _NOT_PLAIN:
                return None
            out.append(unchecked_message("tool", _GIVEN_RESULT, content, tool_call_id=call_id))
        elif kind != "reasoning":
            return None
    if calls:
        out.append(unchecked_message("assistant", _GIVEN_CALLS, None, tuple(calls)))
    return out


def _plain_call(item: dict[str, Any]) -> ToolCall | None:
    call_id, name, arguments = item.get("call_id"), item.get("name"), item.get("arguments", "{}")
    if type(call_id) is not str or not call_id or type(name) is not str or type(arguments) is not str:
        return None
    return unchecked_call(call_id, name, arguments)


def _plain_content(content: Any) -> Any:
    """:func:`_content` of ``str``, null or text-part content; :data:`_NOT_PLAIN` for anything else."""
    if content is None or type(content) is str:
        return content
    if type(content) is not list:
        return _NOT_PLAIN
    blocks: list[TextBlock] = []
    for part in content:
        kind = part.get("type") if type(part) is dict else None
        if type(kind) is not str:  # (an unhashable one is the checking path's error)
            return _NOT_PLAIN
        text = part.get("text") if kind in _TEXT_PARTS else part.get("refusal") if kind == "refusal" else None
        if type(text) is not str:
            return _NOT_PLAIN
        blocks.append(unchecked_text(text))
    return blocks[0].text if len(blocks) == 1 else tuple(blocks)
