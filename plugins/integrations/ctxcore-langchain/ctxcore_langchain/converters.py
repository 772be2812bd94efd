"""Lossless conversion between LangChain messages and ctxcore :class:`~ctxcore.Message`.

``from_langchain`` maps what a model reads into ctxcore's slots (role, text and
image content, name, tool calls, tool_call_id), so ctxcore counts, trims and
validates it. Everything else is carried in ``metadata["langchain"]`` so
``to_langchain`` gives an equal LangChain message back:

- ``type``: the LangChain message type (``human``, ``ai``, ``system``, ``tool``,
  ``AIMessageChunk``...);
- ``fields``: every field ctxcore has no slot for, when it differs from its
  default (``id``, ``additional_kwargs``, ``response_metadata``,
  ``usage_metadata``, ``invalid_tool_calls``, ``status``, ``artifact``, and a
  ``ToolMessage``'s ``name``, which chat APIs do not send), by reference, not copied;
- ``content`` / ``tool_calls``: the original value, when ctxcore's form of it
  does not render back exactly (reasoning or thinking blocks, provider-specific
  block keys, v1 ``image`` blocks, string items in a list, tool-call args that
  are not plain JSON), with ``fingerprint``, the ctxcore fingerprint of the
  message at conversion. A filter that changed the message (a compressed tool
  output) changes its fingerprint: then the content and calls are rendered from
  ctxcore's fields and the originals are not used.

Content blocks ctxcore understands: ``text``, ``image_url`` (OpenAI form),
``image`` with ``url`` or ``base64`` + ``mime_type`` (LangChain v1 form) and
``file`` (OpenAI form). An assistant message's reasoning (``thinking``,
``redacted_thinking`` and ``reasoning`` blocks, ``additional_kwargs["reasoning"]``)
is counted as the strings it sends (text blocks in its place, see
:mod:`ctxcore_langchain.reasoning`; ``count_reasoning=False`` carries it
uncounted). Provider blocks (``ChatAnthropic``'s server tool, MCP and
compaction blocks, ``ChatOpenAI``'s Responses hosted tool items, LangChain's v1
``server_tool_call`` / ``server_tool_result`` blocks, see
:mod:`ctxcore_langchain.provider`) are :class:`ctxcore.ProviderBlock` objects in their
place, counted by their JSON and given back as the dicts they came as; the hosted
tool items of ``additional_kwargs["tool_outputs"]`` are provider blocks placed first.
Other blocks (``tool_use``, audio...) are carried, not counted. A changed message
keeps the reasoning items and ``tool_outputs`` items still in its content.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from ctxcore import FileBlock, ImageBlock, Message, ProviderBlock, TextBlock, ToolCall
from ctxcore.kit import content_to_openai
from ctxcore_langchain.provider import keep_tool_outputs, model_api, provider_block, tool_outputs
from ctxcore_langchain.reasoning import KWARGS, counted_blocks, is_reasoning, reasoning_parts, restore_reasoning

__all__ = ["LANGCHAIN_KEY", "from_langchain", "message_from_langchain", "message_to_langchain", "to_langchain"]

#: metadata key holding what a LangChain message has beyond ctxcore's slots.
LANGCHAIN_KEY = "langchain"

_ROLES: dict[str, str] = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool",
                          "AIMessageChunk": "assistant"}
_CLASSES: dict[str, type[BaseMessage]] = {"human": HumanMessage, "ai": AIMessage, "system": SystemMessage,
                                          "tool": ToolMessage, "AIMessageChunk": AIMessageChunk}
_BY_ROLE: dict[str, str] = {"user": "human", "assistant": "ai", "system": "system", "tool": "tool"}
# Fields mapped to ctxcore slots (or fixed by the class); every other field goes to ``fields``.
_SLOTS = frozenset({"content", "type", "name", "tool_calls", "tool_call_id"})
_defaults: dict[tuple[type[BaseMessage], str], Any] = {}


def from_langchain(messages: Iterable[BaseMessage], *, count_reasoning: bool = True, **provenance: Any) -> list[Message]:
    """The ctxcore messages of LangChain messages, one for one.

    ``provenance`` (``source``, ``priority``...) is given to every message.
    ``count_reasoning``: an assistant message's reasoning and thinking are text
    blocks of its content, counted and budgeted as sent (``False``: carried, not
    counted, for a chat model that does not send them back).
    ``ToolMessage`` becomes an untrusted ``tool`` message (ctxcore's default);
    ``SystemMessage`` a trusted system message: pass only system messages your
    own code wrote.

    Raises:
        ValueError: a message ctxcore cannot represent (a ``ChatMessage`` with a
            custom role, a ``FunctionMessage``, ``RemoveMessage``); names its index.
    """
    out: list[Message] = []
    for index, message in enumerate(messages):
        try:
            out.append(message_from_langchain(message, count_reasoning=count_reasoning, **provenance))
        except ValueError as exc:
            raise ValueError(f"message {index}: {exc}") from None
    return out


def to_langchain(messages: Iterable[Message]) -> list[BaseMessage]:
    """The LangChain messages of ctxcore messages (the inverse of :func:`from_langchain`)."""
    return [message_to_langchain(m) for m in messages]


def message_from_langchain(message: BaseMessage, *, count_reasoning: bool = True, **provenance: Any) -> Message:
    """One LangChain message as a ctxcore message; see :func:`from_langchain`."""
    kind = getattr(message, "type", None)
    role = _ROLES.get(kind) if isinstance(kind, str) else None
    if role is None or not isinstance(message, BaseMessage):
        raise ValueError(
            f"cannot convert {type(message).__name__} (type {kind!r}): ctxcore-langchain converts "
            "SystemMessage, HumanMessage, AIMessage and ToolMessage"
        )
    carried: dict[str, Any] = {"type": kind}
    extra = _unslotted(message)
    name = message.name
    if role == "tool" and name is not None:  # the tool's name: OpenAI's tool messages have no name, so not sent
        extra["name"], name = name, None
    if extra:
        carried["fields"] = extra
    raw_content = message.content
    reasoning = _reasoning_items(message, count_reasoning) if role == "assistant" else []
    outputs = tool_outputs(message.additional_kwargs, raw_content) if role == "assistant" else []
    api = model_api(message.response_metadata)
    content = _content_from_langchain(raw_content, reasoning, api, outputs)
    keep_content = _content_to_langchain(content) != raw_content
    if reasoning:
        carried["reasoning"] = reasoning
    if outputs:
        carried["tool_outputs"] = True
    calls: tuple[ToolCall, ...] = ()
    keep_calls = False
    if role == "assistant":
        raw_calls = message.tool_calls  # type: ignore[attr-defined]
        invalid = message.invalid_tool_calls  # type: ignore[attr-defined]
        # the invalid calls after the valid ones: the order ChatOpenAI sends them in
        calls = (*(_call_from_langchain(c) for c in raw_calls), *(_invalid_call(c) for c in invalid))
        keep_calls = _calls_to_langchain(calls, _invalid_ids(invalid))[0] != raw_calls
    fields: dict[str, Any] = {"role": role, "content": content, "name": name, "tool_calls": calls}
    if role == "tool":
        fields["tool_call_id"] = message.tool_call_id  # type: ignore[attr-defined]
    metadata = dict(provenance.pop("metadata", None) or {})
    metadata[LANGCHAIN_KEY] = carried
    made = Message(**fields, metadata=metadata, **provenance)
    if keep_content or keep_calls:
        if keep_content:
            carried["content"] = raw_content
        if keep_calls:
            carried["tool_calls"] = raw_calls
        carried["fingerprint"] = made.fingerprint
    return made


def message_to_langchain(message: Message) -> BaseMessage:
    """One ctxcore message as a LangChain message; see :func:`to_langchain`.

    A message that came from :func:`from_langchain` gets its class and carried
    fields back; one ctxcore made (a system prompt, a summary) becomes the
    class of its role.
    """
    carried = message.metadata.get(LANGCHAIN_KEY)
    carried = carried if isinstance(carried, Mapping) else {}
    kind = carried.get("type")
    if kind not in _CLASSES or _ROLES[kind] != message.role:
        kind = _BY_ROLE[message.role]
    same = "fingerprint" in carried and carried["fingerprint"] == message.fingerprint
    kwargs: dict[str, Any] = dict(carried.get("fields") or {})
    if same and "content" in carried:
        kwargs["content"] = carried["content"]
    else:
        _changed_content(kwargs, message, carried)
    if message.name is not None:
        kwargs["name"] = message.name
    if message.role == "assistant":
        known = kwargs.get("invalid_tool_calls") or ()
        if same and "tool_calls" in carried:
            kwargs["tool_calls"] = carried["tool_calls"]
        else:
            calls, invalid = _calls_to_langchain(message.tool_calls, _invalid_ids(known))
            kwargs["tool_calls"] = calls
            if invalid or known:
                kwargs["invalid_tool_calls"] = _originals(invalid, known)
    if message.role == "tool":
        kwargs["tool_call_id"] = message.tool_call_id
    if kind == "AIMessageChunk" and "type" in carried:
        # A chunk's validators derive tool_calls and tool_call_chunks from each other; the carried
        # values are already consistent, so they are set as they are.
        return AIMessageChunk.model_construct(**kwargs)
    return _CLASSES[kind](**kwargs)


# ---------------------------------------------------------------- internals
def _unslotted(message: BaseMessage) -> dict[str, Any]:
    """The fields of ``message`` outside ctxcore's slots whose value is not the default."""
    cls = type(message)
    out: dict[str, Any] = {}
    for key, value in message.__dict__.items():
        if key in _SLOTS:
            continue
        marker = (cls, key)
        if marker not in _defaults:
            info = cls.model_fields.get(key)
            _defaults[marker] = info.get_default(call_default_factory=True) if info is not None else _MISSING
        if value != _defaults[marker] or type(value) is not type(_defaults[marker]):
            out[key] = value
    return out


class _Missing:
    def __repr__(self) -> str:
        return "<missing>"


_MISSING = _Missing()


def _reasoning_items(message: BaseMessage, counted: bool) -> list[tuple[int, Any, tuple[str, ...]]]:
    """An assistant message's reasoning items: (place, the original, the strings it is counted by; none if not counted)."""
    items: list[tuple[int, Any, tuple[str, ...]]] = []
    if isinstance(message.content, str):
        return items
    found = message.additional_kwargs.get("reasoning")
    # ChatOpenAI sends it (its older Responses form) only with list content of dicts
    if (isinstance(found, Mapping) and (found.get("type") == "reasoning" or "summary" in found)
            and all(isinstance(b, Mapping) for b in message.content)):
        items.append((KWARGS, found, reasoning_parts(found) if counted else ()))
    items += [(i, item, reasoning_parts(item) if counted else ())
              for i, item in enumerate(message.content) if is_reasoning(item)]
    return items


def _content_from_langchain(content: Any, reasoning: Sequence[tuple[int, Any, tuple[str, ...]]] = (),
                            api: str | None = None, outputs: Sequence[ProviderBlock] = ()) -> str | tuple[Any, ...] | None:
    """ctxcore content: text, image, file and provider blocks, with each counted reasoning item's strings in its place.

    ``additional_kwargs`` items come first: the reasoning item's strings, then the ``tool_outputs`` blocks.
    """
    if isinstance(content, str):  # no reasoning is sent with string content
        return content
    parts = {place: p for place, _, p in reasoning if p}
    blocks: list[Any] = counted_blocks(parts[KWARGS]) if KWARGS in parts else []
    blocks += outputs
    for index, item in enumerate(content):
        if index in parts:
            blocks += counted_blocks(parts[index])
            continue
        block = _block(item, api)
        if block is not None:
            blocks.append(block)
    # nothing ctxcore reads (only tool_use blocks, say): None, the form the build gives it, so the
    # message is not seen as changed
    return tuple(blocks) or None


def _changed_content(kwargs: dict[str, Any], message: Message, carried: Mapping[str, Any]) -> None:
    """Set the LangChain content of a message a filter changed (or ctxcore made) from its ctxcore content.

    ``additional_kwargs["tool_outputs"]`` keeps the items whose blocks are still there, and then the
    content is a list (``ChatOpenAI`` sends them only beside list content); reasoning items likewise.
    """
    content, outputs_kept = message.content, False
    if carried.get("tool_outputs") and message.role == "assistant":
        content, outputs_kept = keep_tool_outputs(kwargs, content)
    if carried.get("reasoning") and message.role == "assistant":
        _with_reasoning(kwargs, content, carried["reasoning"])
    else:
        kwargs["content"] = _content_to_langchain(content)
    if outputs_kept and isinstance(kwargs["content"], str):
        kwargs["content"] = [{"type": "text", "text": kwargs["content"]}] if kwargs["content"] else []


def _with_reasoning(kwargs: dict[str, Any], content: str | tuple[Any, ...] | None,
                    items: Sequence[tuple[int, Any, tuple[str, ...]]]) -> None:
    """Set a changed message's content (and ``additional_kwargs``) with the reasoning items whose text it still holds.

    Content beside a kept reasoning item is a list (``ChatOpenAI`` sends ``additional_kwargs["reasoning"]``
    only with list content); otherwise it renders as usual (a string stays a string), and one plain text
    part left is given as its string.
    """
    blocks: tuple[Any, ...] = () if not content else (TextBlock(text=content),) if isinstance(content, str) else content
    restored, kept = restore_reasoning(blocks, _parts(blocks), items)
    # a kept additional_kwargs item is sent by ChatOpenAI only beside list content
    if any(map(is_reasoning, restored)) or (kept and any(place == KWARGS for place, _, _ in items)):
        kwargs["content"] = restored
    elif len(restored) == len(blocks):
        kwargs["content"] = _content_to_langchain(content)
    elif not restored:
        kwargs["content"] = ""
    else:
        only = restored[0]
        kwargs["content"] = only["text"] if len(restored) == 1 and only.get("type") == "text" else restored
    if not kept and "reasoning" in (kwargs.get("additional_kwargs") or {}):
        kwargs["additional_kwargs"] = {k: v for k, v in kwargs["additional_kwargs"].items() if k != "reasoning"}


def _block(item: Any, api: str | None = None) -> TextBlock | ImageBlock | FileBlock | ProviderBlock | None:
    """The ctxcore block of one LangChain content item, or None for a kind ctxcore does not read."""
    if isinstance(item, str):
        return TextBlock(text=item)
    if not isinstance(item, Mapping):
        return None
    kind = item.get("type")
    if kind not in _PLAIN_KINDS:
        return provider_block(item, api)
    if kind == "text" and isinstance(item.get("text"), str):
        return TextBlock(text=item["text"])
    if kind == "image_url":
        image = item.get("image_url")
        image = {"url": image} if isinstance(image, str) else image
        if isinstance(image, Mapping) and isinstance(image.get("url"), str):
            detail = image.get("detail")
            return ImageBlock(url=image["url"], detail=detail if detail in ("auto", "low", "high") else None)
    if kind == "image":
        if isinstance(item.get("url"), str):
            return ImageBlock(url=item["url"])
        data, mime = item.get("base64", item.get("data")), item.get("mime_type")
        if isinstance(data, str) and isinstance(mime, str):
            return ImageBlock(url=f"data:{mime};base64,{data}")
    if kind == "file" and isinstance(item.get("file"), Mapping):
        f = item["file"]
        parts = {k: f.get(k) for k in ("file_id", "file_data", "filename")}
        if all(v is None or isinstance(v, str) for v in parts.values()):
            return FileBlock(**parts)
    return None


_PLAIN_KINDS = frozenset({"text", "image_url", "image", "file"})


def _content_to_langchain(content: str | tuple[Any, ...] | None) -> str | list[Any]:
    """ctxcore content as LangChain content: OpenAI-form parts (LangChain reads them), ``""`` for none."""
    return "" if content is None else content if isinstance(content, str) else _parts(content)


def _parts(blocks: tuple[Any, ...]) -> list[Any]:
    """LangChain content parts of ctxcore blocks: OpenAI-form parts, a provider block as the dict it came as."""
    if not any(type(b) is ProviderBlock for b in blocks):
        return content_to_openai(blocks)
    return [dict(b.raw) if type(b) is ProviderBlock else content_to_openai((b,))[0] for b in blocks]


def _call_from_langchain(call: Mapping[str, Any]) -> ToolCall:
    args = call.get("args")
    try:
        arguments = json.dumps(args if args is not None else {}, ensure_ascii=False)
    except (TypeError, ValueError):
        arguments = json.dumps(args, ensure_ascii=False, default=str)
    return ToolCall(id=call.get("id") or "", name=call.get("name") or "", arguments=arguments)


def _invalid_call(call: Mapping[str, Any]) -> ToolCall:
    """A LangChain invalid tool call as a ctxcore call carrying its raw argument text (what ChatOpenAI sends)."""
    args = call.get("args")
    return ToolCall(id=call.get("id") or "", name=call.get("name") or "", arguments=args if isinstance(args, str) else "")


def _invalid_ids(invalid: Sequence[Mapping[str, Any]]) -> frozenset[str]:
    return frozenset(c.get("id") or "" for c in invalid)


def _originals(invalid: list[dict[str, Any]], known: Sequence[Mapping[str, Any]]) -> list[Any]:
    """Each invalid call rendered from ctxcore as the message's original one when its arguments still read the same.

    The same: the raw text, or the build's repair of it (``{"_unparsed_arguments": raw}``, the JSON object a
    provider accepts), so the framework sends its own invalid call, raw text and all.
    """
    by_id = {c.get("id") or "": c for c in known}
    out: list[Any] = []
    for call in invalid:
        original = by_id.get(call["id"])
        raw = _invalid_call(original).arguments if original is not None else None
        if raw is not None and call["args"] in (raw, json.dumps({"_unparsed_arguments": raw}, ensure_ascii=False)):
            out.append(original)
        else:
            out.append(call)
    return out


def _calls_to_langchain(calls: Sequence[ToolCall], invalid_ids: frozenset[str] = frozenset()
                        ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """LangChain ``tool_calls`` and ``invalid_tool_calls``: the calls named in ``invalid_ids`` and those whose
    arguments are not a JSON object."""
    valid: list[dict[str, Any]] = []
    invalid: list[dict[str, Any]] = []
    for c in calls:
        error: str | None
        try:
            args = c.parsed_arguments()
        except ValueError as exc:
            args, error = None, f"arguments are not JSON: {exc}"
        else:
            error = None if isinstance(args, dict) else "arguments are not a JSON object"
        if error is None and c.id in invalid_ids:
            error = "the model's arguments did not parse"
        if error is None:
            valid.append({"name": c.name, "args": args, "id": c.id, "type": "tool_call"})
        else:
            invalid.append({"name": c.name, "args": c.arguments, "id": c.id, "error": error, "type": "invalid_tool_call"})
    return valid, invalid
