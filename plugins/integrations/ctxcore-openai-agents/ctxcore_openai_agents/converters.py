"""Responses API input items <-> ctxcore messages, losslessly.

The Agents SDK keeps a run's history as Responses *input items*: messages
(``{"role": "user", "content": ...}`` or output messages with ``output_text``
parts), ``function_call`` and ``function_call_output`` items, ``reasoning``
items. ctxcore reasons about chat messages, so :func:`messages_from_items`
groups the items into messages:

- a run of assistant-side items (``reasoning``, assistant messages,
  ``function_call``, the self-contained hosted tool calls such as
  ``web_search_call``, MCP items (``mcp_call``, ``mcp_list_tools``, an
  approval request and the response that follows it) and ``compaction``) is
  one assistant message: its text, its tool calls, and each hosted, MCP or
  compaction item as a :class:`ctxcore.ProviderBlock` in its place (counted by
  its JSON; a compaction item is where ctxcore's builds start);
- each ``function_call_output`` is one ``tool`` message (untrusted);
- each user message is one ``user`` message. A ``system`` or ``developer``
  message found in the input is history, not the developer's instructions: it
  becomes an untrusted ``user`` message (ctxcore never lets history take the
  system role) and is re-sent as the item it was.

Every message carries the JSON copies of its items in
``metadata["openai_agents_items"]``, so :func:`items_from_messages` gives back
exactly the items when the message still reads as those items convert
(reasoning items, ids, statuses, annotations included), and renders a message a
filter changed (a truncated tool output, a summary) with
:func:`ctxcore.to_openai_responses`. Reasoning and hosted-tool items travel
with their assistant turn: kept or dropped with it. Reasoning is not content of
the message; the filter counts what the model reads of reasoning items by the
provider's rule (:mod:`ctxcore_openai_agents.reasoning`).

Messages are built without pydantic validation where this module has checked
every field by hand (:func:`_message`; the usual case: text content, string ids
and arguments); anything else goes through ``Message(...)`` and its errors. A
hypothesis property (tests/test_converters.py) checks that both give equal
messages for every item shape.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, cast

from ctxcore import FileBlock, ImageBlock, Message, ProviderBlock, TextBlock, ToolCall, to_openai_responses
from ctxcore_openai_agents.errors import UnsupportedItem

__all__ = [
    "ITEMS_KEY",
    "SOURCE",
    "assistant_texts",
    "group_items",
    "is_assistant_side",
    "items_from_messages",
    "json_copy",
    "message_from_group",
    "messages_from_items",
    "plain_item",
    "reads_same",
    "recorded_items",
]

#: metadata key of the JSON copies of the items a message was made from.
ITEMS_KEY = "openai_agents_items"
#: ``Message.source`` of messages made from the SDK's input items.
SOURCE = "openai-agents:input"

# Items that need no separate result item: hosted tool calls, MCP items (an approval response joins the
# request before it) and compaction. They ride with their assistant turn as provider blocks.
_HOSTED = frozenset({"web_search_call", "file_search_call", "image_generation_call", "code_interpreter_call",
                     "mcp_call", "mcp_list_tools", "mcp_approval_request", "mcp_approval_response", "compaction"})
_ASSISTANT_TYPES = frozenset({"reasoning", "function_call"}) | _HOSTED
_SUPPORTED = "message, function_call, function_call_output, reasoning, " + ", ".join(sorted(_HOSTED))


def plain_item(item: Any, index: int = 0) -> Mapping[str, Any]:
    """The item as a mapping: dicts as they are, the SDK's pydantic items dumped.

    Raises:
        UnsupportedItem: the item is neither.
    """
    if isinstance(item, Mapping):
        return item
    dump = getattr(item, "model_dump", None)
    if callable(dump):
        return dict(dump(mode="json", exclude_unset=True))
    raise UnsupportedItem(f"a Responses input item is an object, not {type(item).__name__}", index=index)


def is_assistant_side(item: Mapping[str, Any]) -> bool:
    """Whether the item belongs to an assistant turn (model output sent back as input)."""
    kind = item.get("type")
    if kind in _ASSISTANT_TYPES:
        return True
    return item.get("role") == "assistant" and kind in (None, "message")


def group_items(items: Sequence[Mapping[str, Any]]) -> list[tuple[int, int]]:
    """The ``(start, end)`` spans of the items that make one message each, in order."""
    spans: list[tuple[int, int]] = []
    i, n = 0, len(items)
    while i < n:
        j = i + 1
        if is_assistant_side(items[i]):
            while j < n and is_assistant_side(items[j]):
                j += 1
        spans.append((i, j))
        i = j
    return spans


def messages_from_items(items: Iterable[Any]) -> list[Message]:
    """The ctxcore messages of Responses input items (see the module docstring for the mapping).

    Raises:
        UnsupportedItem: an item of a type not listed there (``.index`` names it).
    """
    plain = [plain_item(item, i) for i, item in enumerate(items)]
    return [message_from_group(plain[start:end], start) for start, end in group_items(plain)]


def message_from_group(group: Sequence[Mapping[str, Any]], start: int = 0, *, validate: bool = False) -> Message:
    """The one message of a span from :func:`group_items`; ``start`` is its first index, for errors.

    ``validate=True`` builds every message through ``Message(...)`` (the
    reference the unvalidated construction is tested against; same result).
    """
    first = group[0]
    kind = first.get("type")
    if is_assistant_side(first):
        return _assistant(group, start, validate)
    if kind == "function_call_output":
        content = _output(first.get("output"), start)
        call_id = _text_field(first, "call_id", start)
        return _message({"role": "tool", "content": content, "tool_call_id": call_id, "trust": "untrusted",
                         "source": SOURCE, "metadata": {ITEMS_KEY: _copies(group, start)}},
                        not validate and _checked(content) and type(call_id) is str)
    if kind in (None, "message") and "role" in first:
        role = first.get("role")
        if role not in ("user", "system", "developer"):
            raise UnsupportedItem(f"a message item with role {role!r} (user, assistant, system, developer)", index=start)
        content = _content(first.get("content"), start)
        return _message({"role": "user", "content": content, "trust": "untrusted", "source": SOURCE,
                         "metadata": {ITEMS_KEY: _copies(group, start)}}, not validate and _checked(content))
    raise UnsupportedItem(f"Responses input item of type {kind!r} is not supported ({_SUPPORTED}); "
                          "drop or rewrite such items in your own filter before ctxcore's", index=start)


def items_from_messages(messages: Iterable[Message]) -> list[dict[str, Any]]:
    """Responses input items for the messages: the recorded items of unchanged ones, a fresh rendering of the rest."""
    out: list[dict[str, Any]] = []
    for m in messages:
        recorded = recorded_items(m)
        if recorded is not None:
            out.extend(json_copy(recorded))
        else:
            out.extend(to_openai_responses([m])["input"])
    return out


def recorded_items(m: Message) -> list[dict[str, Any]] | None:
    """The items ``m`` was made from, or ``None`` when it was not made from items or no longer reads as they convert.

    Reads as: :func:`reads_same` as the message the recorded items convert to
    now (so a message reloaded from a checkpoint is recognised too). Recorded
    items that do not convert to one message (edited metadata) are not used:
    the message is then rendered from what it reads.
    """
    items = m.metadata.get(ITEMS_KEY)
    if not isinstance(items, list) or not items or not all(isinstance(i, Mapping) for i in items):
        return None
    if group_items(items) != [(0, len(items))]:
        return None
    try:
        again = message_from_group(items)
    except (UnsupportedItem, ValueError):  # ValueError: pydantic's ValidationError of a hand-edited item
        return None
    return list(items) if reads_same(m, again) else None


def reads_same(a: Message, b: Message) -> bool:
    """Whether the model reads ``a`` and ``b`` alike: role, content, name, tool call id and tool calls.

    The fields :attr:`ctxcore.Message.fingerprint` digests, compared directly
    (the same objects compare by pointer), so telling a message a filter
    changed from its conversion needs no digest of either.
    """
    return a is b or (a.role == b.role and a.content == b.content and a.name == b.name
                      and a.tool_call_id == b.tool_call_id and a.tool_calls == b.tool_calls)


def _assistant(group: Sequence[Mapping[str, Any]], start: int, validate: bool) -> Message:
    parts: list[str | ProviderBlock] = []
    calls: list[ToolCall] = []
    for k, item in enumerate(group):
        kind = item.get("type")
        if kind == "function_call":
            call_id, name = _text_field(item, "call_id", start + k), _text_field(item, "name", start + k)
            calls.append(_call(call_id, name, item.get("arguments") or "{}", validate))
        elif kind in (None, "message"):
            parts.extend(assistant_texts(item.get("content"), start + k))
        elif kind in _HOSTED:
            parts.append(_provider(item, start + k))
    content: str | tuple[TextBlock | ProviderBlock, ...] | None
    if len(parts) == 1 and isinstance(parts[0], str):
        content = parts[0]
    else:
        content = tuple(TextBlock(text=p) if isinstance(p, str) else p for p in parts) or None
    return _message({"role": "assistant", "content": content, "tool_calls": tuple(calls), "trust": "untrusted",
                     "source": SOURCE, "metadata": {ITEMS_KEY: _copies(group, start)}},
                    not validate and _checked(content))


# Message's plain defaults (no factory), taken from the model so they follow it: what validation fills in.
_DEFAULTS = {name: f.default for name, f in Message.model_fields.items() if not f.is_required() and f.default_factory is None}
#: Message's own id factory (what validation calls for a message without an id).
_new_id = cast(Callable[[], str], Message.model_fields["id"].default_factory)
_CALL_FIELDS = frozenset({"id", "name", "arguments"})


def _message(fields: dict[str, Any], checked: bool) -> Message:
    """``Message(**fields)``; without validation when ``checked`` (the caller checked every field's type by hand).

    What the callers check is all that validation would check of these
    fields: the role is fixed and never ``system``, ``trust`` untrusted, a
    tool result has a string call id, only an assistant has tool calls, and the
    content is an exact ``str``, ``None`` or a tuple of blocks made by this
    module (:func:`_checked`). So ``Message.model_construct`` with the same
    fields-set gives the message validation would give (a fresh id, the
    model's defaults for the rest, the id from the model's own id factory).
    """
    if not checked:
        return Message(**fields)
    values = {**_DEFAULTS, **fields}
    values["id"] = _new_id()
    return Message.model_construct(set(fields), **values)


def _provider(item: Mapping[str, Any], index: int) -> ProviderBlock:
    """A hosted, MCP or compaction item as the provider block it is re-sent as (a JSON copy of it)."""
    try:
        return ProviderBlock(api="openai-responses", raw=json_copy(item))
    except (TypeError, ValueError) as exc:
        raise UnsupportedItem(f"a {item.get('type')} item is not JSON ({exc})", index=index) from exc


def _checked(content: Any) -> bool:
    """Whether ``content`` is what validation keeps as it is: an exact ``str``, ``None``, or this module's block tuple."""
    return content is None or type(content) is str or type(content) is tuple


def _call(call_id: str, name: str, arguments: Any, validate: bool) -> ToolCall:
    """A tool call; without validation when every field is an exact ``str`` and the arguments need no NaN repair."""
    if (validate or type(call_id) is not str or type(name) is not str or type(arguments) is not str
            or "NaN" in arguments or "Infinity" in arguments):
        return ToolCall(id=call_id, name=name, arguments=arguments)
    return ToolCall.model_construct(set(_CALL_FIELDS), id=call_id, name=name, arguments=arguments, type="function")


def assistant_texts(content: Any, index: int) -> list[str]:
    """The texts of an assistant message item's content (``output_text`` and ``refusal`` parts), in order."""
    if content is None:
        return []
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        raise UnsupportedItem(f"an assistant message's content is text or a list of parts, not {type(content).__name__}", index=index)
    texts = []
    for part in content:
        if isinstance(part, Mapping):
            text = part.get("refusal") if part.get("type") == "refusal" else part.get("text")
            if isinstance(text, str):
                texts.append(text)
    return texts


def _content(content: Any, index: int) -> str | tuple[Any, ...]:
    """A user message's content: its text, or blocks for its parts (parts ctxcore cannot model are not counted)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise UnsupportedItem(f"a message's content is text or a list of parts, not {type(content).__name__}", index=index)
    blocks = tuple(b for b in (_block(p) for p in content) if b is not None)
    return blocks


def _output(output: Any, index: int) -> str | tuple[Any, ...]:
    """A tool result's content: the output string, or blocks for a list of input parts."""
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        return tuple(b for b in (_block(p) for p in output) if b is not None)
    raise UnsupportedItem(f"a function_call_output's output is text or a list of parts, not {type(output).__name__}", index=index)


def _block(part: Any) -> TextBlock | ImageBlock | FileBlock | None:
    if not isinstance(part, Mapping):
        return None
    kind = part.get("type")
    if kind in ("input_text", "output_text", "text") and isinstance(part.get("text"), str):
        return TextBlock(text=part["text"])
    if kind == "input_image" and isinstance(part.get("image_url"), str):
        detail = part.get("detail")
        return ImageBlock(url=part["image_url"], detail=detail if detail in ("auto", "low", "high") else None)
    if kind == "input_file":
        fields = {k: part[k] for k in ("file_id", "file_data", "filename") if isinstance(part.get(k), str)}
        return FileBlock(**fields) if fields else None
    return None


def _text_field(item: Mapping[str, Any], key: str, index: int) -> str:
    value = item.get(key)
    if not isinstance(value, str) or not value:
        raise UnsupportedItem(f"a {item.get('type')} item needs a non-empty string {key!r}", index=index)
    return value


def _copies(group: Sequence[Mapping[str, Any]], start: int) -> list[Any]:
    """Private copies of the items (the runner's own dicts are never kept, or changed, by reference).

    JSON values only (what the Responses API and a checkpoint take); strings are
    shared, not copied, so the cost does not grow with the text.
    """
    try:
        return [json_copy(item) for item in group]
    except TypeError as exc:
        raise UnsupportedItem(f"an input item is not JSON ({exc})", index=start) from exc


_SCALARS = (str, int, float, bool, type(None))


def json_copy(value: Any) -> Any:
    """A private copy of a JSON value: dicts and lists (tuples too) rebuilt, strings and numbers shared.

    Raises:
        TypeError: a value that is not JSON (a set, an object, a non-string key).
    """
    if isinstance(value, _SCALARS):
        return value
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise TypeError(f"key {k!r} is not a string")
            out[k] = json_copy(v)
        return out
    if isinstance(value, (list, tuple)):
        return [json_copy(v) for v in value]
    raise TypeError(f"a {type(value).__name__} value")
