"""OpenAI Responses API input items -> ctxcore messages: the inverse of :func:`ctxcore.render.to_openai_responses`.

A Responses conversation is a flat list of items: messages (``{"role",
"content"}``, optionally ``"type": "message"``), one ``function_call`` item per
tool call and one ``function_call_output`` item per result. ctxcore keeps an
assistant's calls on one message (as the chat API does), so a run of
consecutive ``function_call`` items becomes one assistant message whose
``tool_calls`` are the run's calls in order; an assistant text item before
them stays its own message (the pair is as legal as one message).

A run of the model's output items that holds anything beyond text and
function calls (``reasoning``, hosted tool calls, ``compaction``...) becomes
one assistant message instead: its content is the text and
:class:`~ctxcore.model.blocks.ProviderBlock` items in order, its tool calls
the function calls, and the original items are kept in
``metadata["responses_items"]`` so the renderer re-sends them item for item
while the message is unchanged (reasoning before its function call, its
``encrypted_content`` byte-exact). An item that follows such a run and is not
a message or a ``function_call_output`` (``mcp_approval_response`` after its
request) joins it: a request and its answer are one message.

Mapping:

- a message item -> a message of its role; ``developer`` -> a system
  message marked ``metadata["responses_role"] = "developer"`` (rendered back
  as developer); content parts ``input_text``/``output_text``
  -> text (a lone text part becomes plain string content, as a reply does),
  ``refusal`` -> its text, ``input_image`` (by URL) -> :class:`ImageBlock`,
  ``input_file`` -> :class:`FileBlock`;
- ``function_call`` -> a :class:`ToolCall` (``call_id``, ``name``, ``arguments``);
- ``function_call_output`` -> a ``tool`` message answering ``call_id``;
- ``reasoning``, ``web_search_call``, ``file_search_call``,
  ``code_interpreter_call``, ``image_generation_call``, ``mcp_call``,
  ``mcp_list_tools``, ``mcp_approval_request``, ``compaction`` and any other
  output item -> a provider block of the assistant turn;
- any other item on its own (``item_reference``, a future type) -> a user
  message holding it as a provider block: kept, never refused.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import ValidationError

from ctxcore.model._unchecked import unchecked_call, unchecked_message, unchecked_text
from ctxcore.model.blocks import ProviderBlock
from ctxcore.model.messages import (
    FileBlock,
    ImageBlock,
    Message,
    TextBlock,
    ToolCall,
)

__all__ = ["RESPONSES_FINGERPRINT_KEY", "RESPONSES_ITEMS_KEY", "RESPONSES_ROLE_KEY", "assistant_from_output",
           "messages_from_responses", "raw_responses_items"]

#: metadata key holding an assistant turn's original Responses items (reasoning, hosted calls kept).
RESPONSES_ITEMS_KEY = "responses_items"
#: metadata key holding the fingerprint of the message those items were read into.
RESPONSES_FINGERPRINT_KEY = "responses_fingerprint"
#: metadata key holding a system message's original role when it was ``developer``.
RESPONSES_ROLE_KEY = "responses_role"

_ROLES = frozenset({"user", "assistant", "system"})
#: items the model outputs: they join the assistant turn they are read in.
_OUTPUT_KINDS = frozenset({
    "function_call", "reasoning", "compaction", "web_search_call", "file_search_call", "code_interpreter_call",
    "image_generation_call", "mcp_call", "mcp_list_tools", "mcp_approval_request", "computer_call",
    "local_shell_call", "shell_call", "apply_patch_call", "custom_tool_call", "tool_search_call",
})
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
    run: list[tuple[int, Mapping[str, Any]]] = []  # the assistant side's consecutive items
    for i, raw in enumerate(items):
        item = _plain(raw)
        if not isinstance(item, Mapping):
            raise ValueError(f"item {i}: a Responses input item is an object, not {type(item).__name__}")
        kind = item.get("type", "message")
        if _assistant_side(kind, item, run):
            run.append((i, item))
            continue
        out.extend(_assistant_run(run, provenance))
        run = []
        if kind == "message":
            out.append(_message(i, item, provenance))
        elif kind == "function_call_output":
            call_id = item.get("call_id")
            if not isinstance(call_id, str) or not call_id:
                raise ValueError(f"item {i}: a function_call_output needs the 'call_id' of the call it answers")
            out.append(_make(i, {"role": "tool", "tool_call_id": call_id, "content": _content(i, item.get("output", ""))}, provenance))
        else:  # an input-side item ctxcore does not model: kept as sent, as the user's
            out.append(_make(i, {"role": "user", "content": (_provider_item(i, item),)}, provenance))
    out.extend(_assistant_run(run, provenance))
    if len(out) > 1 and "id" in provenance:
        raise ValueError("an explicit id names one message, but these items make several")
    return out


def _assistant_side(kind: Any, item: Mapping[str, Any], run: list[tuple[int, Mapping[str, Any]]]) -> bool:
    """Whether ``item`` belongs to the assistant turn being read (``run``: its items so far).

    The model's output items (text, function calls, reasoning, hosted tool
    calls, compaction) are; so is any other item (``mcp_approval_response``,
    ``computer_call_output``, a future type) that follows a provider item of
    the turn, so a request and its answer are one message no filter can split.
    """
    if kind == "message":
        return item.get("role") == "assistant"
    if kind in _OUTPUT_KINDS:
        return True
    return kind != "function_call_output" and any(_is_provider_kind(k.get("type", "message")) for _, k in run)


def _is_provider_kind(kind: Any) -> bool:
    return kind not in ("message", "function_call", "function_call_output")


def _assistant_run(run: list[tuple[int, Mapping[str, Any]]], provenance: dict[str, Any]) -> list[Message]:
    """The messages of a run of assistant-side items.

    Without provider items: each text item its own message, then one message
    with the run's function calls (as before provider items existed). With
    them: one message whose content is the text and provider blocks in order
    and whose tool calls are the function calls; the original items are kept
    so an unchanged message is re-sent item for item.
    """
    if not run:
        return []
    if not any(_is_provider_kind(item.get("type", "message")) for _, item in run):
        return _plain_run(run, provenance)
    parts: list[Any] = []
    calls: list[ToolCall] = []
    for i, item in run:
        kind = item.get("type", "message")
        if kind == "function_call":
            calls.append(_call(i, item))
        elif kind == "message":
            content = _content(i, item.get("content"))
            parts.extend([TextBlock(text=content)] if isinstance(content, str) else content or ())
        else:
            parts.append(_provider_item(i, item))
    first = run[0][0]
    message = _make(first, {"role": "assistant", "content": tuple(parts) or None, "tool_calls": tuple(calls)}, provenance)
    kept = [dict(item) for _, item in run]
    metadata = {**message.metadata, RESPONSES_ITEMS_KEY: kept, RESPONSES_FINGERPRINT_KEY: message.fingerprint}
    return [message.model_copy(update={"metadata": metadata})]


def assistant_from_output(output: Iterable[Any], **provenance: Any) -> Message:
    """The one assistant message of a response's ``output`` items (what ``Thread.add_response`` appends).

    Text parts become text, ``function_call`` items tool calls; every other
    item (reasoning, hosted calls, compaction, a future type) a provider
    block in order, with the original items kept for a byte-exact re-send.

    Raises:
        ValueError: an item of a wrong shape, naming ``output[i]``.
    """
    run = []
    for i, raw in enumerate(output):
        item = _plain(raw)
        if not isinstance(item, Mapping):
            raise ValueError(f"output[{i}]: a Responses output item is an object, not {type(item).__name__}")
        run.append((i, item))
    if not any(_is_provider_kind(item.get("type", "message")) for _, item in run):
        return _plain_reply(run, provenance)
    return _assistant_run(run, provenance)[0]


def _plain_reply(run: list[tuple[int, Mapping[str, Any]]], provenance: dict[str, Any]) -> Message:
    """Text and function calls only: one message of the output text parts and the calls (nothing kept raw)."""
    texts: list[str] = []
    calls: list[ToolCall] = []
    for i, item in run:
        if item.get("type", "message") == "function_call":
            calls.append(_call(i, item))
        else:
            texts.extend(p["text"] for p in item.get("content") or [] if p.get("type") == "output_text")
    content: Any = texts[0] if len(texts) == 1 else (tuple(TextBlock(text=t) for t in texts) if texts else None)
    return _make(0, {"role": "assistant", "content": content, "tool_calls": tuple(calls)}, provenance)


def _plain_run(run: list[tuple[int, Mapping[str, Any]]], provenance: dict[str, Any]) -> list[Message]:
    out: list[Message] = []
    calls: list[ToolCall] = []
    for i, item in run:
        if item.get("type", "message") == "function_call":
            calls.append(_call(i, item))
            continue
        if calls:
            out.append(_make(i, {"role": "assistant", "content": None, "tool_calls": tuple(calls)}, provenance))
            calls = []
        out.append(_message(i, item, provenance))
    if calls:
        out.append(_make(run[-1][0], {"role": "assistant", "content": None, "tool_calls": tuple(calls)}, provenance))
    return out


def _provider_item(i: int, item: Mapping[str, Any]) -> ProviderBlock:
    try:
        return ProviderBlock(api="openai-responses", raw=dict(item))
    except ValidationError as exc:
        raise ValueError(f"item {i}: {exc.errors(include_url=False)[0]['msg'].removeprefix('Value error, ')}") from None


def raw_responses_items(m: Message) -> list[dict[str, Any]] | None:
    """The original Responses items of an assistant message, if kept and still describing it."""
    raw = m.metadata.get(RESPONSES_ITEMS_KEY)
    if raw is None or m.metadata.get(RESPONSES_FINGERPRINT_KEY) != m.fingerprint:
        return None  # changed since it was read (compressed, edited): render from the fields
    return [dict(item) for item in raw]


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
    if role == "developer":  # the newer name for system instructions: a system message that renders back as developer
        given = {**provenance, "metadata": {**(provenance.get("metadata") or {}), RESPONSES_ROLE_KEY: "developer"}}
        return _make(i, {"role": "system", "content": _content(i, item.get("content"))}, given)
    if role not in _ROLES:
        raise ValueError(f"item {i}: a message item has role 'user', 'assistant', 'system' or 'developer', not {role!r}")
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
        else:
            return None  # reasoning, hosted calls, compaction: kept as provider blocks by the checking path
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
