"""Messages: the one immutable type every provider emits and every filter sees.

A :class:`Message` carries what the model reads (role, content, tool calls) and
where it came from (``source``, ``trust``, ``zone``, ``priority``), so filters can
decide what to keep and the report can explain every token.

Conversion to and from OpenAI chat-completions dicts is lossless: keys ctxcore
does not model are kept in ``metadata["openai_extra"]`` and written back.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Callable, Mapping, Sequence
from functools import cached_property
from operator import attrgetter
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

__all__ = [
    "Role",
    "Trust",
    "Zone",
    "TextBlock",
    "ImageBlock",
    "FileBlock",
    "ContentBlock",
    "ToolCall",
    "Message",
    "system",
    "human",
    "ai",
    "tool",
    "OPENAI_EXTRA_KEY",
    "content_to_openai",
]

Role = Literal["system", "user", "assistant", "tool"]
Trust = Literal["trusted", "untrusted"]
Zone = Literal["protected", "dynamic"]

#: metadata key under which unmodelled OpenAI keys are kept for a lossless round trip.
OPENAI_EXTRA_KEY = "openai_extra"

_KNOWN_OPENAI_KEYS = frozenset({"role", "content", "name", "tool_call_id", "tool_calls"})


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class TextBlock(_Frozen):
    """A run of text inside a multi-part message."""

    type: Literal["text"] = "text"
    text: str


class ImageBlock(_Frozen):
    """An image, by URL or ``data:`` URL, with OpenAI's optional detail level.

    ``width`` and ``height`` (pixels) are optional and only used for token
    counting; when absent, counters read them from a ``data:`` URL's image
    header (see :mod:`ctxcore.model.images`). They are never sent to a provider.
    """

    type: Literal["image"] = "image"
    url: str
    detail: Literal["auto", "low", "high"] | None = None
    width: int | None = Field(default=None, gt=0)
    height: int | None = Field(default=None, gt=0)


class FileBlock(_Frozen):
    """A file attachment: an uploaded file id or inline base64 data."""

    type: Literal["file"] = "file"
    file_id: str | None = None
    file_data: str | None = None
    filename: str | None = None


ContentBlock = Annotated[TextBlock | ImageBlock | FileBlock, Field(discriminator="type")]


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def strict_json_loads(text: str) -> Any:
    """``json.loads`` that refuses ``NaN``, ``Infinity`` and ``-Infinity`` (Python accepts them; JSON does not).

    Raises:
        ValueError: invalid or non-strict JSON (``json.JSONDecodeError`` is a ``ValueError``).
    """
    return json.loads(text, parse_constant=_reject_constant)


def _null_constant(name: str) -> None:
    return None


class ToolCall(_Frozen):
    """One function call an assistant message requests; ``arguments`` is JSON text.

    Arguments that are JSON only to Python (``NaN``, ``Infinity``, which a model
    or ``json.dumps`` of a float can produce) are repaired when the call is made:
    each such constant becomes ``null``, so no request body ever carries one
    (``{"a": NaN}`` is not JSON, and providers reject the whole request).
    """

    id: str
    name: str
    arguments: str = "{}"
    type: Literal["function"] = "function"

    @field_validator("arguments")
    @classmethod
    def _strict_json(cls, value: str) -> str:
        if "NaN" not in value and "Infinity" not in value:  # the common case costs two substring scans
            return value
        try:
            strict_json_loads(value)
            return value  # the words are inside strings
        except ValueError:
            pass
        try:
            repaired = json.loads(value, parse_constant=_null_constant)
        except ValueError:
            return value  # not JSON at all: left for the target's checks to report
        return json.dumps(repaired, ensure_ascii=False)

    def parsed_arguments(self) -> Any:
        """Return the arguments decoded from (strict) JSON."""
        return strict_json_loads(self.arguments) if self.arguments else {}


def _new_id() -> str:
    return uuid.uuid4().hex


class Message(BaseModel):
    """An immutable chat message with provenance.

    ``trust`` and ``zone`` default from the role: tool results are untrusted,
    everything else trusted; system messages are protected, everything else dynamic.
    A system message can never be untrusted: untrusted text (files, tool output,
    memory) must not gain the authority of the system role.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(default_factory=_new_id)
    role: Role
    content: str | tuple[ContentBlock, ...] | None = None
    name: str | None = None
    tool_call_id: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    metadata: dict[str, Any] = Field(default_factory=dict)
    source: str | None = None
    trust: Trust = "trusted"
    zone: Zone = "dynamic"
    priority: int = 0

    @model_validator(mode="before")
    @classmethod
    def _role_defaults(cls, data: Any) -> Any:
        if isinstance(data, dict):
            role = data.get("role")
            if "trust" not in data and role == "tool":
                data = {**data, "trust": "untrusted"}
            if "zone" not in data and role == "system":
                data = {**data, "zone": "protected"}
        return data

    @model_validator(mode="after")
    def _check_roles(self) -> Message:
        if self.role == "system" and self.trust == "untrusted":
            raise ValueError(
                "untrusted content cannot take the system role; give it role 'user' "
                "or mark the source trusted"
            )
        if self.role == "tool" and not self.tool_call_id:
            raise ValueError("a tool message needs the tool_call_id of the call it answers")
        if self.tool_calls and self.role != "assistant":
            raise ValueError("only assistant messages can carry tool_calls")
        return self

    # ----------------------------------------------------------------- derived
    @cached_property
    def text(self) -> str:
        """The textual content: the string, or the text blocks joined by newlines."""
        if self.content is None:
            return ""
        if isinstance(self.content, str):
            return self.content
        return "\n".join(b.text for b in self.content if isinstance(b, TextBlock))

    @cached_property
    def fingerprint(self) -> str:
        """A digest of what the model reads (not id or provenance), for count caches."""
        payload = json.dumps(
            [self.role, _content_dump(self.content), self.name, self.tool_call_id,
             [[c.id, c.name, c.arguments] for c in self.tool_calls]],
            ensure_ascii=False,
            separators=(",", ":"),
        )
        return hashlib.blake2b(payload.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Message:
        """Copy without validation; derived values (``text``, ``fingerprint``) are recomputed.

        Prefer :meth:`with_provenance` for anything but trusted internal updates:
        ``model_copy`` does not re-run the role/trust checks.
        """
        if not deep and type(self) is Message:
            return copied_message(self, update)
        copied = super().model_copy(update=update, deep=deep)
        if update and not _READ_FIELDS.isdisjoint(update):
            for derived in _DERIVED:
                copied.__dict__.pop(derived, None)
        return copied

    @property
    def tool_call_ids(self) -> tuple[str, ...]:
        """Ids of the calls this (assistant) message requests."""
        return tuple(map(_CALL_ID, self.tool_calls))  # C-level: read by every legality and unit walk

    def with_provenance(self, **changes: Any) -> Message:
        """Return a copy with provenance (or other) fields changed, validated again.

        Use this rather than ``model_copy(update=...)``, which skips validation and
        so could, for example, put untrusted text in the system role.
        """
        return self.model_validate({**self.model_dump(exclude_defaults=False), **changes})

    # --------------------------------------------------------------- openai io
    @classmethod
    def from_openai(cls, data: Mapping[str, Any], **provenance: Any) -> Message:
        """Build a message from an OpenAI chat-completions message dict.

        Keys ctxcore does not model (``refusal``, ``audio``...) are kept in
        ``metadata["openai_extra"]`` so :meth:`to_openai` gives the same dict back.
        ``provenance`` sets ``id``, ``source``, ``trust``, ``zone``, ``priority`` or
        ``metadata``.

        Raises:
            ValueError: the dict is not a chat message ctxcore understands; the
                message names the offending key.
        """
        if type(data) is dict and (not provenance or provenance.keys() == _ID_ONLY):
            made = _plain_openai(cls, data, provenance.get("id"))
            if made is not None:
                return made
        if not isinstance(data, Mapping):
            raise ValueError(f"expected a message object, got {type(data).__name__}")
        if "role" not in data:
            raise ValueError("message has no 'role'")
        role = data["role"]
        if role == "developer":  # OpenAI's newer name for system instructions
            raise ValueError("role 'developer' is not supported; use 'system'")
        fields: dict[str, Any] = {"role": role}
        if "content" in data:
            fields["content"] = _content_from_openai(data["content"])
        if data.get("name") is not None:
            fields["name"] = data["name"]
        if data.get("tool_call_id") is not None:
            fields["tool_call_id"] = data["tool_call_id"]
        calls = data.get("tool_calls")
        if calls is not None and not isinstance(calls, list):
            raise ValueError(f"'tool_calls' must be a list, not {type(calls).__name__}")
        if calls:
            fields["tool_calls"] = tuple(_tool_call_from_openai(c) for c in calls)
        extra = {k: v for k, v in data.items() if k not in _KNOWN_OPENAI_KEYS}
        if "content" not in data:
            extra["__content_absent__"] = True
        if "tool_calls" in data and not calls:
            extra["tool_calls"] = calls
        metadata = dict(provenance.pop("metadata", None) or {})
        if extra:
            metadata[OPENAI_EXTRA_KEY] = extra
        try:
            return cls(**fields, metadata=metadata, **provenance)
        except ValidationError as exc:
            raise ValueError(_compact(exc)) from None

    @classmethod
    def from_openai_run(cls, items: Sequence[Any], start: int, out: list[Any],
                        make_id: Callable[[int, dict[str, Any], Any], str],
                        defer: Callable[[tuple[Any, ...]], Any] | None = None,
                        contents: dict[int, str] | None = None, tag: Any = None) -> int:
        """Convert the run of chat dicts from ``items[start]`` on, appending to ``out``; returns where the run stopped.

        The run is the dicts without a ``type`` key whose ``content`` is a string
        or null (a chat message in every API's reading); the first other item
        ends it. Item ``i`` becomes exactly ``Message.from_openai(item,
        id=make_id(i, item, item.get("content")))`` (a plain dict is built without
        validation, see :meth:`from_openai`), in one loop without per-item keyword
        handling: the history provider converts thousands of stored dicts with it.

        With ``defer``, a dict that passes the plain check (:func:`_plain_shape`)
        and whose tool calls (if any) are plain too (:func:`_plain_calls`) is not
        converted: ``defer((tag, contents, i, role, name, tool_call_id,
        calls, trust, zone))`` is appended instead and its content (unless
        null) put in ``contents[i]`` (each field read once; ``calls``: ``(id,
        name, arguments)`` of each call, flat; ``role`` the interned role name
        of :data:`_ROLE_DEFAULTS`, not the dict's own string; ``trust`` and
        ``zone`` its role's defaults), so a caller can build the message later,
        when it is read, from fields that are known to convert
        (:meth:`from_deferred`). ``defer`` is meant to be a ``tuple`` subclass
        (the history provider's stand-in), so making one runs no Python code.
        Every other dict is converted (and checked) here. The check is
        :func:`_plain_shape`'s, made inline (:func:`_defer_run`): one C-level
        key-set test and one read per field, no Python call per dict.

        Raises:
            ValueError: as :meth:`from_openai`; the items before the failing one
                are converted and in ``out`` (so it is ``items[start + `` the number
                appended ``]``).
        """
        plain, validated, append = _plain_openai, cls.from_openai, out.append
        i, n = start, len(items)
        while i < n:
            if defer is not None:
                i = _defer_run(items, i, append, defer, {} if contents is None else contents, tag)
                if i == n:
                    break
            item = items[i]
            if type(item) is not dict or "type" in item:
                break
            content = item.get("content")
            if content is not None and type(content) is not str:
                break
            message_id = make_id(i, item, content)
            made = plain(cls, item, message_id)
            append(validated(item, id=message_id) if made is None else made)
            i += 1
        return i

    @classmethod
    def from_deferred(cls, message_id: str, role: str, content: str | None, name: str | None, tool_call_id: str | None,
                      calls: tuple[str, ...], metadata: dict[str, Any] | None = None) -> Message:
        """The message of a dict that :meth:`from_openai_run` deferred, built from the fields it read, without checks.

        ``role``, ``content``, ``name``, ``tool_call_id`` and ``calls`` (the
        flat ``(id, name, arguments, ...)`` of the calls ``defer`` received) must be what a
        dict that passed the run's plain check held: then the result is exactly
        ``Message.from_openai(dict, id=message_id)`` — same fields, same
        fields-set (a hypothesis property in tests/test_messages_fast.py) —
        made in one step, without rebuilding the dict or checking it again (a
        next turn reads one such message after a garbage collection, when every
        extra step is a cache miss). ``metadata`` (and a ``content`` other than
        the dict's) gives what ``model_copy(update={"content": ..., "metadata":
        ...})`` of that message gives, in the same step: both fields are in
        its fields-set already.

        Raises:
            KeyError: ``role`` is not one of the four chat roles (the only check).
        """
        defaults = _ROLE_DEFAULTS[role]
        fields_set = set(defaults[2])
        if name is not None:
            fields_set.add("name")
        if tool_call_id is not None:
            fields_set.add("tool_call_id")
        if calls:
            fields_set.add("tool_calls")
            at = iter(calls)
            tool_calls: tuple[ToolCall, ...] = tuple([_checked_tool_call(c, f, a) for c, f, a in zip(at, at, at, strict=True)])
        else:
            tool_calls = ()
        m = _new_object(cls)
        _set(m, "__dict__", {"id": message_id, "role": role, "content": content, "name": name, "tool_call_id": tool_call_id,
                             "tool_calls": tool_calls, "metadata": {} if metadata is None else metadata, "source": None,
                             "trust": defaults[0], "zone": defaults[1], "priority": 0})
        _set_fields_set(m, fields_set)
        _set_extra(m, None)
        _set_private(m, None)
        return m

    @classmethod
    def from_anthropic(cls, data: Any, **provenance: Any) -> Message:
        """Build a message from an Anthropic Messages API message (dict or SDK object).

        Text, image, document, tool_use, tool_result, thinking and
        redacted_thinking blocks are understood; thinking blocks are kept
        byte-exact (with their signatures) and re-sent unchanged by
        :func:`ctxcore.render.to_anthropic`. A user turn carrying several tool
        results maps to several messages: use
        :func:`ctxcore.model.anthropic_io.messages_from_anthropic` for those.

        Raises:
            ValueError: the message cannot be represented; names the block index.
        """
        from ctxcore.model.anthropic_io import message_from_anthropic  # same layer; avoids an import cycle

        return message_from_anthropic(data, **provenance)

    def to_openai(self) -> dict[str, Any]:
        """Return the OpenAI chat-completions dict for this message."""
        extra = dict(self.metadata.get(OPENAI_EXTRA_KEY) or {})
        out: dict[str, Any] = {"role": self.role}
        if not extra.pop("__content_absent__", False):
            out["content"] = content_to_openai(self.content)
        if self.name is not None:
            out["name"] = self.name
        if self.tool_calls:
            out["tool_calls"] = [
                {"id": c.id, "type": c.type, "function": {"name": c.name, "arguments": c.arguments}}
                for c in self.tool_calls
            ]
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        out.update(extra)
        return out


_ID_ONLY = frozenset({"id"})
_CALL_ID = attrgetter("id")
# (trust, zone, fields-set of a plain dict of the role without name, call id or tool calls, the role's interned name)
# of a plain dict's role.
_ROLE_DEFAULTS: dict[Any, tuple[str, str, frozenset[str], str]] = {
    "user": ("trusted", "dynamic", frozenset({"id", "role", "content", "metadata"}), "user"),
    "assistant": ("trusted", "dynamic", frozenset({"id", "role", "content", "metadata"}), "assistant"),
    "system": ("trusted", "protected", frozenset({"id", "role", "content", "metadata", "zone"}), "system"),
    "tool": ("untrusted", "dynamic", frozenset({"id", "role", "content", "metadata", "trust"}), "tool"),
}
_new_object = object.__new__
_set = object.__setattr__
# Setters of BaseModel's three slots (a member descriptor's set skips the attribute lookup by name).
_set_fields_set = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_set_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
_set_private = BaseModel.__dict__["__pydantic_private__"].__set__


def _plain_shape(data: dict[str, Any]) -> tuple[str, str, frozenset[str], str] | None:
    """The role defaults (:data:`_ROLE_DEFAULTS`) of a plain chat dict, else ``None``: the check of :func:`_plain_openai`.

    Plain means: only the keys ctxcore models, ``content`` present and a string
    or null, ``name`` and ``tool_call_id`` strings or null, ``tool_calls`` (if
    present) a non-empty list on an assistant, a tool result with its call id.
    The tool calls themselves are checked where they are built.
    """
    if not data.keys() <= _KNOWN_OPENAI_KEYS or "content" not in data:
        return None
    role = data.get("role")
    defaults = _ROLE_DEFAULTS.get(role) if type(role) is str else None
    content = data["content"]
    if defaults is None or (content is not None and type(content) is not str):
        return None
    name = data.get("name")
    call_id = data.get("tool_call_id")
    if (name is not None and type(name) is not str) or (call_id is not None and type(call_id) is not str):
        return None
    if role == "tool" and not call_id:
        return None
    if "tool_calls" in data:
        raw = data["tool_calls"]
        if role != "assistant" or type(raw) is not list or not raw:
            return None
    return defaults


_ABSENT: Any = object()
_KNOWN_KEYS_HOLD = _KNOWN_OPENAI_KEYS.issuperset


def _defer_run(items: Sequence[Any], i: int, append: Callable[[Any], Any], defer: Callable[[tuple[Any, ...]], Any],
               contents: dict[int, str], tag: Any) -> int:
    """:meth:`Message.from_openai_run`'s deferred part: ``defer(...)`` each plain dict from ``items[i]`` on.

    Returns the index of the first item that is not a plain chat dict with
    plain calls (the run's own loop converts or stops there). The check is
    exactly :func:`_plain_shape` plus :func:`_plain_calls` (a hypothesis
    property in tests/test_messages_fast.py holds the two equal), written out
    in one loop: a cold 20,000-dict build spends most of the provider's time
    here, so each field is read once and nothing is called per dict but
    ``defer``. The three shapes nearly every history is made of are told by
    their size, with no key-set test: two keys that include ``role`` and
    ``content`` are exactly those two (a request or an answer); three that
    include them and a string ``tool_call_id`` on a tool message, or a list
    ``tool_calls`` on an assistant, are exactly those three. Any other dict
    takes the general check.
    """
    roles, known, absent, plain_calls = _ROLE_DEFAULTS, _KNOWN_KEYS_HOLD, _ABSENT, _plain_calls
    n = len(items)
    while i < n:
        item = items[i]
        if type(item) is not dict:
            return i
        content = item.get("content", absent)
        role = item.get("role")
        if (content is not None and type(content) is not str) or type(role) is not str:  # absent content is not a str
            return i
        defaults = roles.get(role)
        if defaults is None:
            return i
        role = defaults[3]  # the interned name: a stand-in keeps no pointer into the dict's own strings
        size = len(item)
        name = call_id = None
        calls: tuple[str, ...] | None = ()
        if size == 2:  # role and content, nothing else: the usual request or answer
            if role == "tool":
                return i  # a tool result without its call id
        elif size == 3 and role == "tool" and type(call_id := item.get("tool_call_id")) is str and call_id:
            pass  # role, content, tool_call_id: a tool result
        elif size == 3 and role == "assistant" and type(raw := item.get("tool_calls", absent)) is list and raw:
            calls = plain_calls(raw)  # role, content, tool_calls: an assistant's calls
            if calls is None:
                return i
        else:  # any other dict: the general check
            if not known(item):  # C-level: only the keys a message has (no "type" either)
                return i
            name = item.get("name")
            call_id = item.get("tool_call_id")
            if (name is not None and type(name) is not str) or (call_id is not None and type(call_id) is not str):
                return i
            if role == "tool" and not call_id:
                return i
            raw = item.get("tool_calls", absent)
            if raw is not absent:
                if role != "assistant" or type(raw) is not list or not raw:
                    return i
                calls = plain_calls(raw)
                if calls is None:
                    return i
        if content is not None:
            contents[i] = content
        append(defer((tag, contents, i, role, name, call_id, calls, defaults[0], defaults[1])))
        i += 1
    return i


def _plain_openai(cls: type[Message], data: dict[str, Any], message_id: Any) -> Message | None:
    """The message of a plain chat dict (:func:`_plain_shape`), built without validation; else ``None``.

    That is what nearly every stored message looks like, and for it the checks
    are exactly what validation would check, so the result equals
    :meth:`Message.from_openai`'s (same fields, same fields-set; a hypothesis
    property in tests/test_messages_fast.py checks it). Anything else (content
    parts, unknown keys, a wrong type) returns ``None`` and takes the validating
    path, which gives the error message.
    """
    defaults = _plain_shape(data)
    if defaults is None:
        return None
    if message_id is None:
        message_id = _new_id()
    elif type(message_id) is not str:
        return None
    role, name, call_id = data["role"], data.get("name"), data.get("tool_call_id")
    fields_set = set(defaults[2])
    if "tool_calls" in data:
        calls: tuple[ToolCall, ...] = tuple([_plain_tool_call(c) or _tool_call_from_openai(c) for c in data["tool_calls"]])
        fields_set.add("tool_calls")
    else:
        calls = ()
    if name is not None:
        fields_set.add("name")
    if call_id is not None:
        fields_set.add("tool_call_id")
    m = _new_object(cls)
    _set(m, "__dict__", {"id": message_id, "role": role, "content": data["content"], "name": name, "tool_call_id": call_id,
                         "tool_calls": calls, "metadata": {}, "source": None, "trust": defaults[0],
                         "zone": defaults[1], "priority": 0})
    _set_fields_set(m, fields_set)
    _set_extra(m, None)
    _set_private(m, None)
    return m


def _plain_calls(calls: list[Any]) -> tuple[str, ...] | None:
    """``(id, name, arguments)`` of each call, one flat tuple, when every one is fully plain, else ``None``.

    Fully plain: ``{"id": non-empty str, "type": "function", "function":
    {"name": str, "arguments": str without NaN/Infinity}}`` (other keys are
    ignored, as by :func:`_plain_tool_call`), so the dict ``{"id", "type",
    "function": {"name", "arguments"}}`` rebuilt from the triple converts to
    the same :class:`ToolCall` and reads the same in an id. Flat
    (``(id1, name1, arguments1, id2, ...)``): one object per message however
    many calls it makes (a stand-in keeps it, and the cyclic collector walks
    every such object once), and the ids are the C-level slice ``[0::3]``.
    """
    out: list[str] = []
    add = out.extend
    for call in calls:
        if type(call) is not dict:
            return None
        fn = call.get("function")
        call_id = call.get("id")
        if type(fn) is not dict or type(call_id) is not str or not call_id or call.get("type") != "function":
            return None
        name, arguments = fn.get("name"), fn.get("arguments")
        if type(name) is not str or type(arguments) is not str or "NaN" in arguments or "Infinity" in arguments:
            return None
        add((call_id, name, arguments))
    return tuple(out)


_TOOL_CALL_FIELDS = frozenset({"id", "name", "arguments", "type"})


def _checked_tool_call(call_id: str, name: str, arguments: str) -> ToolCall:
    """The :class:`ToolCall` of a call :func:`_plain_calls` accepted, built without validation."""
    c = _new_object(ToolCall)
    _set(c, "__dict__", {"id": call_id, "name": name, "arguments": arguments, "type": "function"})
    _set_fields_set(c, set(_TOOL_CALL_FIELDS))
    _set_extra(c, None)
    _set_private(c, None)
    return c


def _plain_tool_call(call: Any) -> ToolCall | None:
    """A ``{"id", "type": "function", "function": {"name", "arguments"}}`` call built without validation, else ``None``.

    Only when the arguments are a string without ``NaN``/``Infinity`` (so the
    validator would return them unchanged) and every field has its type.
    """
    if type(call) is not dict:
        return None
    fn = call.get("function")
    call_id = call.get("id") or ""
    kind = call.get("type", "function")
    if type(fn) is not dict or type(call_id) is not str or kind != "function":
        return None
    name, arguments = fn.get("name"), fn.get("arguments", "{}")
    if type(name) is not str or type(arguments) is not str or "NaN" in arguments or "Infinity" in arguments:
        return None
    c = _new_object(ToolCall)
    _set(c, "__dict__", {"id": call_id, "name": name, "arguments": arguments, "type": "function"})
    _set_fields_set(c, set(_TOOL_CALL_FIELDS))
    _set_extra(c, None)
    _set_private(c, None)
    return c


_DERIVED = ("text", "fingerprint")
# Fields the model reads: changing one invalidates the derived values above.
_READ_FIELDS = frozenset({"role", "content", "name", "tool_call_id", "tool_calls"})


def copied_message(m: Message, update: Mapping[str, Any] | None) -> Message:
    """``m.model_copy(update=update)`` made directly: the same copy, without pydantic's copy machinery.

    Exactly what pydantic's ``model_copy`` does for a :class:`Message` (no
    extra fields, no private attributes): a shallow copy of the field values
    with ``update`` applied, no validation, the fields-set grown by the
    updated keys, and the derived values (``text``, ``fingerprint``, cached
    in the instance) kept only when the update touches none of the fields
    they are made of. Made in one function instead of pydantic's
    ``__copy__`` and three ``copy.copy`` calls: the builder's ``source``
    stamp and the history's annotation copy each new message, after a
    garbage collection, when every extra step is a cache miss (a hypothesis
    property in tests/test_messages_fast.py holds it equal to pydantic's
    copy). ``m`` must be a ``Message`` itself, not a subclass
    (:meth:`Message.model_copy` checks that).
    """
    values = m.__dict__.copy()
    fields_set = m.__pydantic_fields_set__.copy()
    if update:
        values.update(update)
        fields_set.update(update.keys())
        if not _READ_FIELDS.isdisjoint(update):
            values.pop("text", None)
            values.pop("fingerprint", None)
    c = _new_object(Message)
    _set(c, "__dict__", values)
    _set_fields_set(c, fields_set)
    _set_extra(c, None)
    _set_private(c, None)
    return c


_Model = TypeVar("_Model", bound=BaseModel)
# The keyword fields a converter gives Message(...) for a message of each role, plus what _role_defaults adds.
_CHECKED_FIELDS = {"tool": frozenset({"trust"}), "system": frozenset({"zone"})}


def unchecked_model(cls: type[_Model], values: dict[str, Any], fields_set: set[str]) -> _Model:
    """The model ``cls(**given)`` would make, built from its final field ``values`` without validation.

    For the converters' plain inputs (:mod:`ctxcore.model.anthropic_io`,
    :mod:`ctxcore.model.responses_io`), which check every field themselves
    first: ``values`` holds every field of ``cls`` (defaults included) as
    validation would leave them, ``fields_set`` the keywords ``given`` held.
    No extra fields, no private attributes (none of ctxcore's models has
    either).
    """
    m = _new_object(cls)
    _set(m, "__dict__", values)
    _set_fields_set(m, fields_set)
    _set_extra(m, None)
    _set_private(m, None)
    return m


def unchecked_text(text: str) -> TextBlock:
    """``TextBlock(text=text)`` for a ``str`` (exactly), without validation."""
    return unchecked_model(TextBlock, {"type": "text", "text": text}, {"text"})


def unchecked_call(call_id: str, name: str, arguments: str) -> ToolCall | None:
    """``ToolCall(id=call_id, name=name, arguments=arguments)`` without validation; ``None`` when it would check more.

    The three must be ``str`` exactly; arguments holding ``NaN`` or
    ``Infinity`` return ``None`` (the validator may repair them: take the
    validating path).
    """
    if "NaN" in arguments or "Infinity" in arguments:
        return None
    return unchecked_model(ToolCall, {"id": call_id, "name": name, "arguments": arguments, "type": "function"},
                           {"id", "name", "arguments"})


def unchecked_message(role: str, given: frozenset[str], content: Any, tool_calls: tuple[ToolCall, ...] = (),
                      tool_call_id: str | None = None, metadata: dict[str, Any] | None = None) -> Message:
    """``Message(**given fields)`` for fields known to validate, built without validation (a fresh random id).

    ``given`` names the keywords the validating call would pass (its
    fields-set; the role's defaults add ``trust`` for a tool result, ``zone``
    for a system message). The caller has checked what validation would:
    ``role`` one of the four roles, ``content`` a ``str``, ``None`` or a tuple
    of blocks, a tool result's ``tool_call_id`` a non-empty ``str``, calls on
    an assistant only.
    """
    defaults = _ROLE_DEFAULTS[role]
    values = {"id": _new_id(), "role": defaults[3], "content": content, "name": None, "tool_call_id": tool_call_id,
              "tool_calls": tool_calls, "metadata": {} if metadata is None else metadata, "source": None,
              "trust": defaults[0], "zone": defaults[1], "priority": 0}
    extra = _CHECKED_FIELDS.get(role)
    return unchecked_model(Message, values, set(given if extra is None else given | extra))


def _compact(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors(include_url=False):
        where = ".".join(str(p) for p in err["loc"])
        message = err["msg"].removeprefix("Value error, ")
        parts.append(f"{where}: {message}" if where else message)
    return "; ".join(parts)


def _content_dump(content: str | tuple[Any, ...] | None) -> Any:
    if content is None or isinstance(content, str):
        return content
    return [b.model_dump() for b in content]


def _content_from_openai(content: Any) -> str | tuple[Any, ...] | None:
    if content is None or isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise ValueError(f"'content' must be a string, a list of parts or null, not {type(content).__name__}")
    blocks: list[Any] = []
    for i, part in enumerate(content):
        kind = part.get("type") if isinstance(part, Mapping) else None
        if kind == "text":
            blocks.append(TextBlock(text=part["text"]))
        elif kind == "image_url":
            image = part["image_url"]
            if isinstance(image, str):
                image = {"url": image}
            blocks.append(ImageBlock(url=image["url"], detail=image.get("detail")))
        elif kind == "file":
            f = part["file"]
            blocks.append(FileBlock(file_id=f.get("file_id"), file_data=f.get("file_data"), filename=f.get("filename")))
        else:
            raise ValueError(
                f"content[{i}]: unsupported content part type {kind!r} "
                "(supported: 'text', 'image_url', 'file')"
            )
    return tuple(blocks)


def content_to_openai(content: str | tuple[Any, ...] | None) -> Any:
    """A message's ``content`` in OpenAI chat form: the string (or ``None``) as is, blocks as content parts.

    Text, image and file blocks become ``{"type": "text" | "image_url" | "file", ...}``
    parts, as :meth:`Message.to_openai` sends them. For plugins that render
    ctxcore content into another library's OpenAI-shaped messages (``ctxcore.kit``).
    """
    if content is None or isinstance(content, str):
        return content
    parts: list[dict[str, Any]] = []
    for b in content:
        if isinstance(b, TextBlock):
            parts.append({"type": "text", "text": b.text})
        elif isinstance(b, ImageBlock):
            image: dict[str, Any] = {"url": b.url}
            if b.detail is not None:
                image["detail"] = b.detail
            parts.append({"type": "image_url", "image_url": image})
        else:
            f = {k: v for k, v in (("file_id", b.file_id), ("file_data", b.file_data), ("filename", b.filename)) if v is not None}
            parts.append({"type": "file", "file": f})
    return parts


def _tool_call_from_openai(call: Any) -> ToolCall:
    fn = call.get("function") if isinstance(call, Mapping) else None
    if not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str):
        raise ValueError("each tool_calls entry needs 'id' and 'function': {'name', 'arguments'}")
    arguments = fn.get("arguments", "{}")
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments, ensure_ascii=False)
    return ToolCall(id=call.get("id") or "", name=fn["name"], arguments=arguments, type=call.get("type", "function"))


# ------------------------------------------------------------------ factories
def _make(role: Role, content: Any, **kw: Any) -> Message:
    if isinstance(content, list):
        content = tuple(content)
    return Message(role=role, content=content, **kw)


def system(content: str | list[Any], **kw: Any) -> Message:
    """A system message (protected zone, trusted)."""
    return _make("system", content, **kw)


def human(content: str | list[Any], **kw: Any) -> Message:
    """A user message."""
    return _make("user", content, **kw)


def ai(content: str | list[Any] | None = None, *, tool_calls: list[ToolCall | Mapping[str, Any]] | None = None, **kw: Any) -> Message:
    """An assistant message, optionally requesting tool calls.

    ``tool_calls`` accepts :class:`ToolCall` objects or ``{"id", "name", "arguments"}``
    dicts whose ``arguments`` may be a dict (encoded as JSON).
    """
    calls = []
    for c in tool_calls or ():
        if isinstance(c, ToolCall):
            calls.append(c)
        else:
            args = c.get("arguments", {})
            calls.append(ToolCall(id=c["id"], name=c["name"], arguments=args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)))
    return _make("assistant", content, tool_calls=tuple(calls), **kw)


def tool(content: str | list[Any], *, tool_call_id: str, **kw: Any) -> Message:
    """A tool result answering the call ``tool_call_id`` (untrusted by default)."""
    return _make("tool", content, tool_call_id=tool_call_id, **kw)
