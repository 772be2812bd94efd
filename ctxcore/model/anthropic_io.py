"""Anthropic Messages API -> ctxcore messages: what :meth:`Message.from_anthropic` does.

One Anthropic message can become several ctxcore messages: a user turn carries
the ``tool_result`` blocks answering the previous assistant's calls, and ctxcore
(like OpenAI) keeps each result as its own ``tool`` message. So the general
function, :func:`messages_from_anthropic`, returns a list;
:meth:`Message.from_anthropic` is the one-message form.

Block mapping (the renderer in :mod:`ctxcore.render.anthropic` is its inverse):

- ``text`` -> :class:`TextBlock` (a lone text block becomes plain string content);
- ``image`` (``base64`` or ``url`` source) -> :class:`ImageBlock` (base64 as a
  ``data:`` URL);
- ``document`` (``base64`` or ``file`` source) -> :class:`FileBlock`;
- ``tool_use`` -> :class:`ToolCall` (``input`` as JSON text);
- ``tool_result`` -> a ``tool`` message (``is_error`` kept in
  ``metadata["anthropic_extra"]``);
- ``thinking`` / ``redacted_thinking``: assistant only. Anthropic requires them
  sent back unchanged in a tool-use turn, so the assistant's whole original
  content list is kept byte-exact in ``metadata["anthropic_content"]`` (with the
  fingerprint of the message it was read into) and the renderer re-sends it
  verbatim as long as the message still reads the same. OpenAI renderings leave
  thinking out.

``cache_control`` on a user turn's blocks and on ``tool_result`` blocks is
kept in ``metadata["anthropic_cache_control"]`` (with the fingerprint of the
message it was read into), and the renderer puts it back on the same block
while the message still reads the same: a round trip keeps the caller's
breakpoints, and they count against Anthropic's cap of 4 when ctxcore places
its own (docs/caching.md). Marks on blocks nested inside a ``tool_result`` and
on assistant blocks are dropped (ctxcore places its own breakpoints there).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
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

__all__ = [
    "ANTHROPIC_CACHE_KEY",
    "ANTHROPIC_CONTENT_KEY",
    "ANTHROPIC_EXTRA_KEY",
    "ANTHROPIC_FINGERPRINT_KEY",
    "RESULT_BLOCK",
    "message_from_anthropic",
    "messages_from_anthropic",
    "anthropic_cache_marks",
    "raw_anthropic_content",
]

#: metadata key holding an assistant message's original Anthropic content blocks (thinking kept).
ANTHROPIC_CONTENT_KEY = "anthropic_content"
#: metadata key holding the fingerprint of the message the original blocks were read into.
ANTHROPIC_FINGERPRINT_KEY = "anthropic_fingerprint"
#: metadata key for Anthropic fields ctxcore does not model (a tool result's ``is_error``).
ANTHROPIC_EXTRA_KEY = "anthropic_extra"
#: metadata key holding the caller's ``cache_control`` marks of a user turn or tool result.
ANTHROPIC_CACHE_KEY = "anthropic_cache_control"
#: the block index of a mark on the ``tool_result`` block itself (not on a block of its content).
RESULT_BLOCK = -1

_THINKING = frozenset({"thinking", "redacted_thinking"})


def messages_from_anthropic(data: Any, **provenance: Any) -> list[Message]:
    """The ctxcore messages of one Anthropic message (a dict, or an SDK ``Message``/param object).

    ``provenance`` (``source``, ``trust``, ``priority``, ``metadata``...) is given
    to every message made; an explicit ``id`` is only allowed when one message
    results.

    Raises:
        ValueError: the input is not an Anthropic message ctxcore can represent;
            the message names the block index and type.
    """
    if type(data) is dict and not provenance:
        made = _plain_messages(data)
        if made is not None:
            return made
    return _validated_messages(data, **provenance)


def _validated_messages(data: Any, **provenance: Any) -> list[Message]:
    """:func:`messages_from_anthropic` through validation only: the reference its fast path is held equal to.

    Raises:
        ValueError: as :func:`messages_from_anthropic`.
    """
    data = _plain(data)
    if not isinstance(data, Mapping):
        raise ValueError(f"expected an Anthropic message object, got {type(data).__name__}")
    role = data.get("role")
    if role not in ("user", "assistant"):
        raise ValueError(f"an Anthropic message has role 'user' or 'assistant', not {role!r} (the system prompt is the request's 'system' field)")
    content = data.get("content")
    if isinstance(content, str):
        return [_make(role, content, (), {}, provenance)]
    if not isinstance(content, list):
        raise ValueError(f"'content' must be a string or a list of blocks, not {type(content).__name__}")
    blocks = [_block(i, b) for i, b in enumerate(content)]
    if role == "assistant":
        return [_assistant(blocks, provenance)]
    return _user(blocks, provenance)


def message_from_anthropic(data: Any, **provenance: Any) -> Message:
    """The single ctxcore message of an Anthropic message; see :func:`messages_from_anthropic`.

    Raises:
        ValueError: also when the message maps to several ctxcore messages (a user
            turn with several tool results, or tool results and text).
    """
    made = messages_from_anthropic(data, **provenance)
    if len(made) != 1:
        raise ValueError(
            f"this Anthropic user turn holds {len(made)} ctxcore messages (tool results are separate "
            "'tool' messages); use ctxcore.messages_from_anthropic(...) to get them all"
        )
    return made[0]


def raw_anthropic_content(m: Message) -> list[dict[str, Any]] | None:
    """The original Anthropic blocks of an assistant message, if kept and still describing it."""
    raw = m.metadata.get(ANTHROPIC_CONTENT_KEY)
    if raw is None or m.metadata.get(ANTHROPIC_FINGERPRINT_KEY) != m.fingerprint:
        return None  # changed since it was read (compressed, edited): render from the fields
    return [dict(b) for b in raw]


def anthropic_cache_marks(m: Message) -> dict[int, dict[str, Any]]:
    """The caller's ``cache_control`` marks of ``m`` by content index (-1: the ``tool_result`` block), if still valid.

    Empty when there are none or ``m`` changed since it was read (the marks
    named blocks of the content it had then).
    """
    kept = m.metadata.get(ANTHROPIC_CACHE_KEY)
    if not kept or kept.get("fingerprint") != m.fingerprint:
        return {}
    return {int(index): dict(control) for index, control in kept["marks"]}


# ---------------------------------------------------------------- internals
def _plain(data: Any) -> Any:
    """SDK objects (pydantic models) as plain dicts; dicts and lists as they are."""
    dump = getattr(data, "model_dump", None)
    if callable(dump) and not isinstance(data, Message):
        return dump(mode="json", exclude_none=True)
    return data


def _block(index: int, block: Any) -> dict[str, Any]:
    block = _plain(block)
    if not isinstance(block, Mapping) or not isinstance(block.get("type"), str):
        raise ValueError(f"content[{index}]: a content block is an object with a 'type'")
    out = {k: v for k, v in block.items() if k != "cache_control"} | {"__index__": index}
    if isinstance(block.get("cache_control"), Mapping):
        out["__cache__"] = dict(block["cache_control"])
    return out


def _wire(b: Mapping[str, Any]) -> dict[str, Any]:
    """A block as the API reads it, without the keys ingestion added (its index, its cache mark)."""
    return {k: v for k, v in b.items() if k not in _INTERNAL}


_INTERNAL = frozenset({"__index__", "__cache__"})


def _assistant(blocks: list[dict[str, Any]], provenance: dict[str, Any]) -> Message:
    """The assistant message of an Anthropic turn; its original blocks kept when any is more than text or a tool call."""
    parts: list[TextBlock | ProviderBlock] = []
    calls: list[ToolCall] = []
    verbatim = False  # whether the renderer must re-send the original blocks
    for b in blocks:
        kind = b["type"]
        if kind == "text":
            parts.append(TextBlock(text=_str(b, "text")))
            verbatim = verbatim or not b.keys() <= _PLAIN_TEXT_KEYS  # citations
        elif kind == "tool_use":
            calls.append(_tool_call(b))
            verbatim = verbatim or not b.keys() <= _PLAIN_TOOL_USE_KEYS
        elif kind in _THINKING:
            verbatim = True  # not content: Anthropic strips earlier turns' thinking itself
        else:
            parts.append(_provider_block(b))
            verbatim = True
    message = _make("assistant", _assistant_content(parts), tuple(calls), {}, provenance)
    if not verbatim:
        return message
    raw = [_wire(b) for b in blocks]
    metadata = {**message.metadata, ANTHROPIC_CONTENT_KEY: raw, ANTHROPIC_FINGERPRINT_KEY: message.fingerprint}
    return message.model_copy(update={"metadata": metadata})


_PLAIN_TEXT_KEYS = frozenset({"type", "text", "__index__", "__cache__"})
_PLAIN_TOOL_USE_KEYS = frozenset({"type", "id", "name", "input", "__index__", "__cache__"})


def _assistant_content(parts: list[TextBlock | ProviderBlock]) -> Any:
    """Text blocks as the message's content (a lone one as its string); provider blocks keep the tuple."""
    if len(parts) == 1 and isinstance(parts[0], TextBlock):
        return parts[0].text
    return tuple(parts) if parts else None


def _provider_block(b: dict[str, Any]) -> ProviderBlock:
    """A block ctxcore does not model, kept as it came (without its index)."""
    return ProviderBlock(api="anthropic", raw=_wire(b))


def _user(blocks: list[dict[str, Any]], provenance: dict[str, Any]) -> list[Message]:
    out: list[Message] = []
    rest: list[Any] = []
    marks: list[tuple[int, dict[str, Any]]] = []
    for b in blocks:
        if b["type"] == "tool_result":
            if rest:
                raise ValueError(f"content[{b['__index__']}]: tool_result blocks must come before any other block of the user turn")
            out.append(_with_marks(_tool_result(b, provenance), [(RESULT_BLOCK, b["__cache__"])] if "__cache__" in b else []))
        else:
            if "__cache__" in b:
                marks.append((len(rest), b["__cache__"]))
            rest.append(_user_part(b))
    if rest or not out:
        content: Any = rest[0].text if len(rest) == 1 and isinstance(rest[0], TextBlock) else tuple(rest)
        out.append(_with_marks(_make("user", content, (), {}, provenance), marks))
    if len(out) > 1 and "id" in provenance:
        raise ValueError("an explicit id names one message, but this Anthropic turn makes several")
    return out


def _with_marks(m: Message, marks: list[tuple[int, dict[str, Any]]]) -> Message:
    """``m`` holding the caller's cache marks (content index, ``cache_control``) for the renderer to put back."""
    if not marks:
        return m
    kept = {"fingerprint": m.fingerprint, "marks": [[index, control] for index, control in marks]}
    return m.model_copy(update={"metadata": {**m.metadata, ANTHROPIC_CACHE_KEY: kept}})


def _user_part(b: dict[str, Any]) -> TextBlock | ImageBlock | FileBlock | ProviderBlock:
    kind, where = b["type"], f"content[{b['__index__']}]"
    if kind == "text":
        text = TextBlock(text=_str(b, "text"))
        return text if b.keys() <= _PLAIN_TEXT_KEYS else _provider_block(b)
    source = b.get("source")
    if kind not in ("image", "document"):
        return _provider_block(b)  # search_result, container_upload, a future type: kept as sent
    if not isinstance(source, Mapping):
        raise ValueError(f"{where}: an {kind} block needs a 'source' object")
    if not _modelled_source(b):
        return _provider_block(b)  # a document of text/url/content, citations on: kept as sent
    stype = source.get("type")
    if stype == "base64":
        url = f"data:{source.get('media_type')};base64,{source.get('data')}"
        return ImageBlock(url=url) if kind == "image" else FileBlock(file_data=url, filename=b.get("title"))
    if stype == "url" and kind == "image":
        return ImageBlock(url=str(source.get("url")))
    if stype == "file" and kind == "document":
        return FileBlock(file_id=str(source.get("file_id")), filename=b.get("title"))
    raise ValueError(f"{where}: {kind} source type {stype!r} is not supported (image: base64, url; document: base64, file)")


def _modelled_source(b: dict[str, Any]) -> bool:
    """Whether an image or document block maps to an image or file block with nothing lost."""
    if not b.keys() <= _PLAIN_MEDIA_KEYS[b["type"]]:
        return False
    return (b["type"], b["source"].get("type")) in _MODELLED_SOURCES


_PLAIN_MEDIA_KEYS = {"image": frozenset({"type", "source", "__index__", "__cache__"}),
                     "document": frozenset({"type", "source", "title", "__index__", "__cache__"})}
_MODELLED_SOURCES = frozenset({("image", "base64"), ("image", "url"), ("document", "base64"), ("document", "file")})


def _tool_result(b: dict[str, Any], provenance: dict[str, Any]) -> Message:
    where = f"content[{b['__index__']}]"
    call_id = b.get("tool_use_id")
    if not isinstance(call_id, str) or not call_id:
        raise ValueError(f"{where}: a tool_result needs the 'tool_use_id' of the call it answers")
    raw = b.get("content", "")
    if isinstance(raw, str):
        content: Any = raw
    elif isinstance(raw, list):
        parts = [_user_part(_block(k, p) | {"__index__": b["__index__"]}) for k, p in enumerate(raw)]
        content = parts[0].text if len(parts) == 1 and isinstance(parts[0], TextBlock) else tuple(parts)
    else:
        raise ValueError(f"{where}: tool_result content must be a string or a list of blocks")
    extra = {"is_error": b["is_error"]} if "is_error" in b else {}
    return _make("tool", content, (), {ANTHROPIC_EXTRA_KEY: extra} if extra else {}, provenance, tool_call_id=call_id)


def _tool_call(b: dict[str, Any]) -> ToolCall:
    where = f"content[{b['__index__']}]"
    if not isinstance(b.get("id"), str) or not isinstance(b.get("name"), str):
        raise ValueError(f"{where}: a tool_use block needs string 'id' and 'name'")
    return ToolCall(id=b["id"], name=b["name"], arguments=json.dumps(b.get("input", {}), ensure_ascii=False))


def _str(b: Mapping[str, Any], key: str) -> str:
    value = b.get(key)
    if not isinstance(value, str):
        raise ValueError(f"content[{b['__index__']}]: a {b['type']} block needs a string {key!r}")
    return value


def _make(
    role: str, content: Any, calls: Sequence[ToolCall], metadata: dict[str, Any], provenance: dict[str, Any], **fields: Any
) -> Message:
    given = dict(provenance)
    merged = {**dict(given.pop("metadata", None) or {}), **metadata}
    try:
        return Message(role=role, content=content, tool_calls=tuple(calls), metadata=merged, **fields, **given)  # type: ignore[arg-type]
    except ValidationError as exc:
        raise ValueError("; ".join(e["msg"].removeprefix("Value error, ") for e in exc.errors(include_url=False))) from None


# ---------------------------------------------------------------- the fast path
# What the checking path's Message(...) is given (its fields-set) for a turn, and for a tool result.
_GIVEN = frozenset({"role", "content", "tool_calls", "metadata"})
_GIVEN_RESULT = _GIVEN | {"tool_call_id"}


def _plain_messages(data: dict[str, Any]) -> list[Message] | None:
    """The messages of a plain Anthropic message dict, made without validation; ``None``: take the checking path.

    Plain: string content, or blocks that are dicts of the usual kinds with
    fields of their exact types (``text`` with a ``str`` text; an assistant's
    ``tool_use`` with ``str`` id and name and a dict ``input``; a user's
    ``tool_result`` with a non-empty ``str`` ``tool_use_id`` and ``str`` or
    text-block content, before any other block). For those the checks are
    exactly what :func:`_validated_messages` makes, and the
    messages equal its messages (same fields, same fields-set; a hypothesis
    property in tests/test_convert_fast.py) but for their random ids. Anything
    else (thinking, images, documents, an odd value, an error) returns
    ``None``: the checking path converts it or names what is wrong.
    """
    role, content = data.get("role"), data.get("content")
    if type(role) is not str or role not in ("user", "assistant"):
        return None
    if type(content) is str:
        return [unchecked_message(role, _GIVEN, content)]
    if type(content) is not list:
        return None
    if role == "user":
        return _plain_user(content)
    made = _plain_assistant(content)
    return None if made is None else [made]


def _plain_assistant(blocks: list[Any]) -> Message | None:
    texts: list[TextBlock] = []
    calls: list[ToolCall] = []
    for b in blocks:
        kind = b.get("type") if type(b) is dict else None
        if kind == "text":
            text = b.get("text")
            if type(text) is not str or len(b) != 2:  # citations (or cache_control): the checking path
                return None
            texts.append(unchecked_text(text))
        elif kind == "tool_use":
            call = _plain_call(b)
            if call is None:
                return None
            calls.append(call)
        else:
            return None
    return unchecked_message("assistant", _GIVEN, _joined(texts) if texts else None, tuple(calls))


def _plain_call(b: dict[str, Any]) -> ToolCall | None:
    call_id, name, given = b.get("id"), b.get("name"), b.get("input", {})
    if not b.keys() <= _PLAIN_TOOL_USE_KEYS or type(call_id) is not str or type(name) is not str or type(given) is not dict:
        return None
    try:
        arguments = json.dumps(given, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        return None  # the checking path raises what it raises
    return unchecked_call(call_id, name, arguments)


def _plain_user(blocks: list[Any]) -> list[Message] | None:
    out: list[Message] = []
    rest: list[TextBlock] = []
    for b in blocks:
        kind = b.get("type") if type(b) is dict else None
        if kind == "tool_result" and not rest:
            made = _plain_result(b)
            if made is None:
                return None
            out.append(made)
        elif kind == "text":
            text = b.get("text")
            if type(text) is not str or len(b) != 2:  # citations (or cache_control): the checking path
                return None
            rest.append(unchecked_text(text))
        else:
            return None
    if rest or not out:
        out.append(unchecked_message("user", _GIVEN, _joined(rest)))
    return out


def _plain_result(b: dict[str, Any]) -> Message | None:
    call_id, raw = b.get("tool_use_id"), b.get("content", "")
    if type(call_id) is not str or not call_id:
        return None
    if type(raw) is str:
        content: Any = raw
    elif type(raw) is list:
        parts: list[TextBlock] = []
        for p in raw:
            text = p.get("text") if type(p) is dict and p.get("type") == "text" and len(p) == 2 else None
            if type(text) is not str:
                return None
            parts.append(unchecked_text(text))
        content = _joined(parts)
    else:
        return None
    metadata = {ANTHROPIC_EXTRA_KEY: {"is_error": b["is_error"]}} if "is_error" in b else {}
    made = unchecked_message("tool", _GIVEN_RESULT, content, tool_call_id=call_id, metadata=metadata)
    control = b.get("cache_control")
    return _with_marks(made, [(RESULT_BLOCK, dict(control))]) if isinstance(control, Mapping) else made


def _joined(texts: list[TextBlock]) -> str | tuple[TextBlock, ...]:
    """A message's content of text blocks, as the checking path gives it: a lone block as its text."""
    return texts[0].text if len(texts) == 1 else tuple(texts)
