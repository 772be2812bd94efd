"""Lossless converters between pydantic-ai's ``ModelMessage`` lists and ctxcore messages.

pydantic-ai groups parts: one ``ModelRequest`` holds system prompts, user
prompts and tool returns side by side; one ``ModelResponse`` holds text,
tool calls and thinking. ctxcore wants one message per role turn, with a tool
call's results right after it. The mapping (docs/integrations.md#pydantic-ai):

- each part of a ``ModelRequest`` is one ctxcore message: ``SystemPromptPart``
  -> ``system``; ``UserPromptPart`` -> ``user`` (str content, or text / image /
  file blocks); a tool return (``ToolReturnPart`` and its typed subclasses: a
  malformed call's ``outcome="retried"`` return too) -> ``tool`` with its
  ``tool_call_id`` and the text the model is shown; ``RetryFeedbackPart`` ->
  ``user`` with the feedback text; a legacy ``RetryPromptPart`` as the part
  pydantic-ai sends in its place (a retried return naming its call, or retry
  feedback), so its text is what the model is shown; any other
  request part (instruction, settings and tool-availability deltas, speech,
  compaction: nothing the model reads as a message) *rides along* with the
  part before it in the same request (with the first readable part when none
  is before it), so it never becomes a message of its own: a delta between two
  tool returns must not split a call's results (the window would be illegal);
  a request with no readable part at all gives one empty ``user`` placeholder
  per part, which only carries it;
- a whole ``ModelResponse`` is one ``assistant`` message: its ``TextPart``\\ s
  are the content (a string for one, text blocks for several), its tool calls
  (``ToolCallPart`` and typed subclasses) are ``tool_calls`` with the argument
  text pydantic-ai sends (``args_as_json_str``: arguments that do not parse as a
  JSON object go as ``{"INVALID_JSON": "<raw text>"}``, so a malformed call is
  counted with its raw text and paired with the return answering it); its
  ``ThinkingPart``\\ s are text blocks of the content too, in the inline form
  pydantic-ai's OpenAI chat model sends back (``<think>`` tags), so they are
  counted and budgeted (``thinking=False``: carried, not counted, for a model
  that does not send them back); native (server-side) tool calls and returns
  and compaction parts are text blocks of their JSON in their place (see
  :func:`native_text`), so a web search result or a compaction summary is
  counted and budgeted; on the way back they are the original parts, never
  text. Files and speech ride along without being counted.

Every converted message carries a :class:`PydanticAIOrigin` in
``metadata["pydantic_ai"]``: the original ``ModelMessage``, the part and its
index, and the view the model reads. :func:`to_pydantic_ai` gives back the
original objects where nothing the model reads changed (so the round trip is
exact, timestamps, ids, provider details and all), rebuilds only the parts a
filter changed (``dataclasses.replace`` keeps every other field), and makes
new parts for messages ctxcore added. The origin is an in-process object, not
JSON: store pydantic-ai histories with pydantic-ai's ``ModelMessagesTypeAdapter``.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Sequence
from typing import Any

from pydantic_ai import messages as pydantic_ai_messages
from pydantic_ai.messages import (
    BaseToolCallPart,
    BaseToolReturnPart,
    BinaryContent,
    CompactionPart,
    ImageUrl,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    NativeToolCallPart,
    NativeToolReturnPart,
    RetryFeedbackPart,
    RetryPromptPart,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from ctxcore import FileBlock, ImageBlock, Message, TextBlock, ToolCall

__all__ = ["METADATA_KEY", "PydanticAIOrigin", "convert_model_message", "from_pydantic_ai", "native_text", "thinking_text",
           "to_pydantic_ai", "unchanged"]

#: the metadata key of a converted message's :class:`PydanticAIOrigin`.
METADATA_KEY = "pydantic_ai"

_View = tuple[Any, ...]


class PydanticAIOrigin:
    """Where a ctxcore message came from: the pydantic-ai message, the part (``None`` for a response) and its index.

    ``view`` is what the model read when the message was converted (role,
    content, tool_call_id, tool_calls); a message whose view still matches is
    given back as the original part. ``span`` is the range of the request's
    part indices the message stands for: its own part and the parts riding
    along with it (``(index, index + 1)`` when none do); on the way back the
    riders are given back around the message's part, in their order.
    """

    __slots__ = ("message", "index", "part", "view", "seen", "span")

    def __init__(self, message: ModelMessage, index: int, part: Any, view: _View,
                 span: tuple[int, int] | None = None) -> None:
        self.message = message
        self.index = index
        self.part = part
        self.view = view
        self.span = span if span is not None else (index, index + 1)
        #: the last message object found to read as converted (a next build skips comparing it again)
        self.seen: Message | None = None

    def reads_as_converted(self, message: Message) -> bool:
        """Whether ``message`` reads (role, content, tool ids) as the converted message did."""
        if self.seen is message:
            return True
        if self.view == (message.role, message.content, message.tool_call_id, message.tool_calls):
            self.seen = message  # messages are immutable: the same object reads the same next time
            return True
        return False

    def __repr__(self) -> str:
        kind = type(self.part).__name__ if self.part is not None else "ModelResponse"
        return f"PydanticAIOrigin({kind}, index={self.index})"


def _view(message: Message) -> _View:
    return (message.role, message.content, message.tool_call_id, message.tool_calls)


def unchanged(message: Message) -> PydanticAIOrigin | None:
    """The message's origin if what the model reads of it is as converted, else ``None``."""
    origin = message.metadata.get(METADATA_KEY)
    if not isinstance(origin, PydanticAIOrigin):
        return None
    return origin if origin.reads_as_converted(message) else None


# ------------------------------------------------------------------ pydantic-ai -> ctxcore
def _user_content(content: str | Sequence[Any]) -> str | tuple[Any, ...]:
    if isinstance(content, str):
        return content
    blocks: list[Any] = []
    for item in content:
        if isinstance(item, str):
            blocks.append(TextBlock(text=item))
        elif isinstance(item, ImageUrl):
            blocks.append(ImageBlock(url=item.url))
        elif isinstance(item, BinaryContent) and item.is_image:
            blocks.append(ImageBlock(url=item.data_uri))
        elif isinstance(item, BinaryContent):
            blocks.append(FileBlock(file_data=item.base64, filename=item.identifier))
        elif hasattr(item, "url"):  # audio, video and document URLs: counted as a file reference
            blocks.append(FileBlock(file_id=str(item.url)))
        elif isinstance(getattr(item, "content", None), str):  # TextContent and StructuredContent
            blocks.append(TextBlock(text=item.content))
        # CachePoint and other markers carry no content: kept in the origin part only.
    return tuple(blocks)


def _readable(part: Any) -> bool:
    """Whether the model reads ``part`` as a message of its own (else it rides along with one)."""
    return (isinstance(part, SystemPromptPart | UserPromptPart | RetryPromptPart | RetryFeedbackPart)
            or (isinstance(part, BaseToolReturnPart) and not isinstance(part, NativeToolReturnPart)))


#: pydantic-ai's own translation of a legacy ``RetryPromptPart`` into the part it sends in its place (private; absent
#: before 2.7x, where the legacy part was sent as it is)
_translate_legacy = getattr(pydantic_ai_messages, "_translate_legacy_retry_part", None)


def _request_part(part: Any) -> dict[str, Any]:
    if isinstance(part, RetryPromptPart) and _translate_legacy is not None:
        part = _translate_legacy(part)  # counted as what the model is sent: a retried return, or retry feedback
    if isinstance(part, SystemPromptPart):
        return {"role": "system", "content": part.content}
    if isinstance(part, UserPromptPart):
        return {"role": "user", "content": _user_content(part.content)}
    if isinstance(part, BaseToolReturnPart) and not isinstance(part, NativeToolReturnPart):
        return {"role": "tool", "content": part.model_response_str(), "tool_call_id": part.tool_call_id, "name": part.tool_name}
    if isinstance(part, RetryPromptPart) and part.tool_name is not None:
        return {"role": "tool", "content": part.model_response(), "tool_call_id": part.tool_call_id, "name": part.tool_name}
    if isinstance(part, RetryPromptPart | RetryFeedbackPart):
        return {"role": "user", "content": part.model_response()}
    return {"role": "user", "content": ""}


def thinking_text(part: ThinkingPart) -> str:
    """A thinking part as it is counted: the inline form pydantic-ai's OpenAI chat model sends (``<think>`` tags).

    Sent in a ``reasoning_content`` field instead, the text is the same without the tags (a few tokens
    fewer): counting the inline form never under-counts either.
    """
    return f"<think>\n{part.content}\n</think>"


_NATIVE = (NativeToolCallPart, NativeToolReturnPart, CompactionPart)


def native_text(part: NativeToolCallPart | NativeToolReturnPart | CompactionPart) -> str:
    """A native tool call or return, or a compaction, as it is counted: the compact JSON of what goes on the wire.

    The provider's model class turns the part into its own block or item (a
    ``server_tool_use``, a ``web_search_call``, a ``compaction``...): the tool
    name, call id, arguments or content, and the ``provider_details`` it sends
    back (signatures, encrypted content). Values that are not JSON (a date in a
    result) count as their text.
    """
    if isinstance(part, CompactionPart):
        wire: dict[str, Any] = {"type": "compaction", "id": part.id, "content": part.content}
    elif isinstance(part, NativeToolCallPart):
        wire = {"type": "native_tool_call", "id": part.tool_call_id, "name": part.tool_name, "input": part.args}
    else:
        wire = {"type": "native_tool_return", "tool_use_id": part.tool_call_id, "name": part.tool_name,
                "content": part.content}
    wire.update(part.provider_details or {})
    return json.dumps({k: v for k, v in wire.items() if v is not None}, ensure_ascii=False, separators=(",", ":"),
                      default=str)


def _counted_text(part: Any, thinking: bool) -> str | None:
    """The text a response part is counted by, or ``None`` when it is not counted."""
    if isinstance(part, TextPart):
        return part.content
    if isinstance(part, ThinkingPart):
        return thinking_text(part) if thinking and part.content else None
    if isinstance(part, _NATIVE):
        return native_text(part)
    return None


def _response_fields(response: ModelResponse, thinking: bool = True) -> dict[str, Any]:
    texts = [t for t in (_counted_text(p, thinking) for p in response.parts) if t is not None]
    calls = tuple(
        ToolCall(id=p.tool_call_id, name=p.tool_name, arguments=p.args_as_json_str())
        for p in response.parts
        if isinstance(p, BaseToolCallPart) and not isinstance(p, NativeToolCallPart)
    )
    content: str | tuple[Any, ...] | None = None
    if len(texts) == 1:
        content = texts[0]
    elif texts:
        content = tuple(TextBlock(text=t) for t in texts)
    return {"role": "assistant", "content": content, "tool_calls": calls}


def _make(fields: dict[str, Any], origin_of: ModelMessage, index: int, part: Any,
          span: tuple[int, int] | None = None) -> Message:
    message = Message(**fields)
    # set after validation, which copies the dict: the view is what the validated message reads
    message.metadata[METADATA_KEY] = PydanticAIOrigin(origin_of, index, part, _view(message), span)
    return message


def _request_messages(request: ModelRequest) -> tuple[Message, ...]:
    """One message per readable part, each carrying the unreadable parts after it (the first also those before)."""
    parts = request.parts
    readable = [i for i, part in enumerate(parts) if _readable(part)]
    if not readable:
        return tuple(_make(_request_part(part), request, i, part) for i, part in enumerate(parts))
    bounds = [0, *readable[1:], len(parts)]
    return tuple(_make(_request_part(parts[i]), request, i, parts[i], (bounds[k], bounds[k + 1]))
                 for k, i in enumerate(readable))


def convert_model_message(message: ModelMessage, thinking: bool = True) -> tuple[Message, ...]:
    """The ctxcore messages of one pydantic-ai message (the unit the conversion cache keeps).

    With ``thinking`` a response's ``ThinkingPart`` texts are text blocks of its content (in their place,
    inline form: see :func:`thinking_text`), so they are counted and budgeted as the framework sends them.

    Raises:
        TypeError: ``message`` is neither a ``ModelRequest`` nor a ``ModelResponse``.
    """
    if isinstance(message, ModelResponse):
        return (_make(_response_fields(message, thinking), message, 0, None),)
    if isinstance(message, ModelRequest):
        return _request_messages(message)
    raise TypeError(f"expected a pydantic-ai ModelRequest or ModelResponse, got {type(message).__name__}")


def from_pydantic_ai(messages: Iterable[ModelMessage], *, thinking: bool = True) -> list[Message]:
    """Convert pydantic-ai messages to ctxcore messages (one per request part, one per response).

    Raises:
        ValueError: an item is not a pydantic-ai message; names its index.
    """
    out: list[Message] = []
    for i, message in enumerate(messages):
        try:
            out.extend(convert_model_message(message, thinking))
        except TypeError as exc:
            raise ValueError(f"message {i}: {exc}") from None
    return out


# ------------------------------------------------------------------ ctxcore -> pydantic-ai
def _user_item(block: Any) -> Any:
    if isinstance(block, TextBlock):
        return block.text
    if isinstance(block, ImageBlock):
        return BinaryContent.from_data_uri(block.url) if block.url.startswith("data:") else ImageUrl(url=block.url)
    if block.file_data is not None:
        import base64

        return BinaryContent(data=base64.b64decode(block.file_data), media_type="application/octet-stream")
    raise ValueError(f"a file block without data (file_id {block.file_id!r}) has no pydantic-ai user content")


def _text(message: Message) -> str:
    return message.text


def _new_request_part(message: Message, origin: PydanticAIOrigin | None) -> Any:
    """A request part for a message ctxcore added or changed.

    A changed part keeps its type and other fields where its content is what
    the model reads (system and user prompts, tool returns); a changed legacy
    ``RetryPromptPart`` naming a tool becomes the ``ToolReturnPart`` with
    ``outcome="retried"`` that pydantic-ai 2.x uses instead, and a changed retry
    feedback a user prompt with the new text, both keeping their timestamp.
    """
    old = origin.part if origin is not None else None
    timestamp = getattr(old, "timestamp", None)
    stamp = {"timestamp": timestamp} if timestamp is not None else {}
    if message.role == "system":
        if isinstance(old, SystemPromptPart):
            return dataclasses.replace(old, content=_text(message))
        return SystemPromptPart(_text(message), **stamp)
    if message.role == "user":
        content = message.content
        value: Any = "" if content is None else content if isinstance(content, str) else [_user_item(b) for b in content]
        return dataclasses.replace(old, content=value) if isinstance(old, UserPromptPart) else UserPromptPart(value, **stamp)
    if message.role == "tool":
        if isinstance(old, RetryPromptPart) and old.tool_call_id == message.tool_call_id:
            # the deprecated part's replacement (pydantic-ai 2.x): a retried return answering the call
            return ToolReturnPart(tool_name=old.tool_name or message.name or "", content=_text(message),
                                  tool_call_id=old.tool_call_id, outcome="retried", timestamp=old.timestamp)
        if isinstance(old, BaseToolReturnPart) and old.tool_call_id == message.tool_call_id:
            return dataclasses.replace(old, content=_text(message))
        return ToolReturnPart(tool_name=message.name or "", content=_text(message), tool_call_id=message.tool_call_id or "", **stamp)
    raise ValueError(f"an {message.role} message is not a request part")


def _new_response(message: Message, origin: PydanticAIOrigin | None) -> ModelResponse:
    """The response for an assistant message ctxcore added or changed (a changed one keeps its other parts)."""
    texts = [t for t in _texts(message.content) if t]
    calls = list(message.tool_calls)
    old = origin.message if origin is not None else None
    if not isinstance(old, ModelResponse) or origin is None:
        parts: list[Any] = [TextPart(t) for t in texts]
        parts += [ToolCallPart(tool_name=c.name, args=c.arguments, tool_call_id=c.id) for c in calls]
        return ModelResponse(parts=parts)
    # a counted thought (a text block of the converted content) stays a thinking part while the new content
    # keeps its text, and goes with it; an uncounted one (``thinking=False``) was never the filter's to drop
    thoughts = {thinking_text(p) for p in old.parts if isinstance(p, ThinkingPart)}
    counted = thoughts.intersection(_texts(origin.view[1]))
    kept = thoughts.intersection(texts)
    # native tool parts and compactions stay as they were (a call without its return would be refused);
    # their counted text is never sent as the answer's
    natives = {native_text(p) for p in old.parts if isinstance(p, _NATIVE)}
    texts = [t for t in texts if t not in thoughts and t not in natives]
    old_calls = {p.tool_call_id: p for p in old.parts if isinstance(p, BaseToolCallPart) and not isinstance(p, NativeToolCallPart)}
    new_parts: list[Any] = []
    for part in old.parts:
        if isinstance(part, ThinkingPart):
            thought = thinking_text(part)
            if thought not in counted or thought in kept:
                new_parts.append(part)
        elif isinstance(part, TextPart):
            if texts:  # the first text part's place takes the (new) text; the others go
                new_parts.extend(dataclasses.replace(part, content=t) for t in texts)
                texts = []
        elif isinstance(part, BaseToolCallPart) and not isinstance(part, NativeToolCallPart):
            if calls:
                new_parts.extend(_call_part(c, old_calls.get(c.id)) for c in calls)
                calls = []
        else:
            new_parts.append(part)
    new_parts += [TextPart(t) for t in texts] + [_call_part(c, None) for c in calls]
    return dataclasses.replace(old, parts=new_parts)


def _texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    return [b.text for b in content or () if isinstance(b, TextBlock)]


def _call_part(call: ToolCall, old: Any) -> Any:
    if old is not None and old.tool_name == call.name and old.args_as_json_str() == call.arguments:
        return old
    args: Any = call.arguments
    if old is not None and isinstance(old.args, dict):
        try:
            args = json.loads(call.arguments)
        except ValueError:
            pass
    return ToolCallPart(tool_name=call.name, args=args, tool_call_id=call.id)


#: parts made for messages ctxcore added, by message id: the same message gives the same part object.
FreshParts = dict[str, tuple[_View, Any]]


def _fresh_part(message: Message, fresh: FreshParts | None, used: FreshParts | None) -> Any:
    view = _view(message)
    if fresh is not None and used is not None:
        known = fresh.get(message.id)
        part = known[1] if known is not None and known[0] == view else _new_request_part(message, None)
        used[message.id] = (view, part)
        return part
    return _new_request_part(message, None)


def _intact(group: list[Message]) -> ModelRequest | None:
    """The original request when ``group`` is all of its parts, in order, as converted (the common case, kept lean)."""
    origin = group[0].metadata.get(METADATA_KEY)
    if not isinstance(origin, PydanticAIOrigin):
        return None
    original = origin.message
    if not isinstance(original, ModelRequest):
        return None
    end = 0
    for m in group:
        o = m.metadata.get(METADATA_KEY)
        if (not isinstance(o, PydanticAIOrigin) or o.message is not original or o.span[0] != end
                or not o.reads_as_converted(m)):
            return None
        end = o.span[1]
    return original if end == len(original.parts) else None


def _with_riders(origin: PydanticAIOrigin, part: Any) -> list[Any]:
    """``part`` (the message's own, as given back) between the parts riding along with it, in their order."""
    start, end = origin.span
    if end - start == 1:
        return [part]
    parts = origin.message.parts  # a ModelRequest: only request messages have a span wider than one
    return [*parts[start:origin.index], part, *parts[origin.index + 1:end]]


def _flush(group: list[Message], fresh: FreshParts | None = None, used: FreshParts | None = None) -> ModelRequest:
    intact = _intact(group)
    if intact is not None:
        return intact
    origins = [m.metadata.get(METADATA_KEY) for m in group]
    original = next((o.message for o in origins if isinstance(o, PydanticAIOrigin)), None)
    parts = []
    for message, origin in zip(group, origins, strict=True):
        same = unchanged(message)
        if same is not None:
            parts.extend(_with_riders(same, same.part))
        elif isinstance(origin, PydanticAIOrigin):
            parts.extend(_with_riders(origin, _new_request_part(message, origin)))
        else:
            parts.append(_fresh_part(message, fresh, used))
    if isinstance(original, ModelRequest):
        return dataclasses.replace(original, parts=parts)
    return ModelRequest(parts=parts)


def _append_request(out: list[ModelMessage], request: ModelRequest, merge: bool) -> None:
    last = out[-1] if merge and out else None
    if isinstance(last, ModelRequest):  # pydantic-ai's own rule: adjacent requests are one turn
        out[-1] = dataclasses.replace(last, parts=[*last.parts, *request.parts],
                                      instructions=last.instructions or request.instructions)
    else:
        out.append(request)


def to_pydantic_ai(messages: Iterable[Message], *, fresh: FreshParts | None = None, merge: bool = False) -> list[ModelMessage]:
    """Convert ctxcore messages to pydantic-ai messages.

    Consecutive non-assistant messages that came from one ``ModelRequest`` form
    that request again (the original object when all its parts are there and
    unchanged); a message ctxcore added joins the request next to it. Each
    assistant message is one ``ModelResponse``.

    ``fresh`` (a dict the caller keeps between calls) makes a message ctxcore
    added give the same part object every time, as long as it reads the same;
    it is updated to hold only the messages of this call. ``merge`` joins
    adjacent requests into one, as pydantic-ai does before every model call
    (the adapter's window; not for a lossless round trip, which keeps them apart).

    Raises:
        ValueError: a message cannot be represented (a file block with only a file id).
    """
    used: FreshParts | None = {} if fresh is not None else None
    out: list[ModelMessage] = []
    group: list[Message] = []
    group_source: Any = None
    for message in messages:
        origin = message.metadata.get(METADATA_KEY)
        source = origin.message if isinstance(origin, PydanticAIOrigin) else None
        if message.role == "assistant":
            if group:
                _append_request(out, _flush(group, fresh, used), merge)
                group, group_source = [], None
            if isinstance(source, ModelResponse) and origin.reads_as_converted(message):  # type: ignore[union-attr]
                out.append(source)
            else:
                out.append(_new_response(message, origin if isinstance(origin, PydanticAIOrigin) else None))
            continue
        if group and source is not None and group_source is not None and source is not group_source:
            _append_request(out, _flush(group, fresh, used), merge)
            group, group_source = [], None
        if (not group and isinstance(source, ModelRequest) and origin.span == (0, len(source.parts))  # type: ignore[union-attr]
                and origin.reads_as_converted(message)):  # type: ignore[union-attr]
            _append_request(out, source, merge)  # the common case: a one-message request, as it was
            continue
        group.append(message)
        if group_source is None:
            group_source = source
    if group:
        _append_request(out, _flush(group, fresh, used), merge)
    if fresh is not None and used is not None:
        fresh.clear()
        fresh.update(used)
    return out
