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
from collections.abc import Mapping
from functools import cached_property
from operator import attrgetter
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ctxcore.model.blocks import ProviderBlock, foreign_block_error

__all__ = [
    "Role",
    "Trust",
    "Zone",
    "TextBlock",
    "ImageBlock",
    "FileBlock",
    "ProviderBlock",
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


ContentBlock = Annotated[TextBlock | ImageBlock | FileBlock | ProviderBlock, Field(discriminator="type")]


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


def new_id() -> str:
    """A fresh random message id."""
    return uuid.uuid4().hex


class Message(BaseModel):
    """An immutable chat message with provenance.

    ``trust`` and ``zone`` default from the role: tool results are untrusted,
    everything else trusted; system messages are protected, everything else dynamic.
    A system message can never be untrusted: untrusted text (files, tool output,
    memory) must not gain the authority of the system role.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(default_factory=new_id)
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
            from ctxcore.model._unchecked import copied_message  # builds Message objects: imported once Message exists

            return copied_message(self, update)
        copied = super().model_copy(update=update, deep=deep)
        if update and not _READ_FIELDS.isdisjoint(update):
            for derived in _DERIVED:
                copied.__dict__.pop(derived, None)
        return copied

    @property
    def has_tool_calls(self) -> bool:
        """Whether this message requests tool calls (the :class:`~ctxcore.model.structure.StructureItem` field)."""
        return bool(self.tool_calls)

    @property
    def has_provider_blocks(self) -> bool:
        """Whether ``content`` holds a :class:`ProviderBlock` (the :class:`~ctxcore.model.structure.StructureItem` field)."""
        content = self.content
        return type(content) is tuple and any(type(b) is ProviderBlock for b in content)

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
            from ctxcore.model.plain import plain_openai  # builds Message objects: imported once Message exists

            made = plain_openai(data, provenance.get("id"))  # a plain dict: validation would change nothing
            if made is not None:
                return made
        fields, extra = _fields_from_openai(data)
        metadata = dict(provenance.pop("metadata", None) or {})
        if extra:
            metadata[OPENAI_EXTRA_KEY] = extra
        try:
            return cls(**fields, metadata=metadata, **provenance)
        except ValidationError as exc:
            raise ValueError(_compact(exc)) from None

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
_DERIVED = ("text", "fingerprint")
# Fields the model reads: changing one invalidates the derived values above.
_READ_FIELDS = frozenset({"role", "content", "name", "tool_call_id", "tool_calls"})


def _fields_from_openai(data: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """The ``Message`` keywords of an OpenAI chat dict, and the keys it does not model (kept for the round trip).

    Raises:
        ValueError: not a dict, no role, ``developer``, or a part or call of a wrong shape.
    """
    if not isinstance(data, Mapping):
        raise ValueError(f"expected a message object, got {type(data).__name__}")
    if "role" not in data:
        raise ValueError("message has no 'role'")
    if data["role"] == "developer":  # OpenAI's newer name for system instructions
        raise ValueError("role 'developer' is not supported; use 'system'")
    fields: dict[str, Any] = {"role": data["role"]}
    if "content" in data:
        fields["content"] = _content_from_openai(data["content"])
    for key in ("name", "tool_call_id"):
        if data.get(key) is not None:
            fields[key] = data[key]
    calls = data.get("tool_calls")
    if calls is not None and not isinstance(calls, list):
        raise ValueError(f"'tool_calls' must be a list, not {type(calls).__name__}")
    if calls:
        fields["tool_calls"] = tuple(_tool_call_from_openai(c) for c in calls)
    extra = {k: v for k, v in data.items() if k not in _KNOWN_OPENAI_KEYS}
    if "content" not in data:
        extra["__content_absent__"] = True
    if "tool_calls" in data and not calls:
        extra["tool_calls"] = calls  # "tool_calls": [] (or null) comes back as it was
    return fields, extra


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

    Raises:
        ValueError: a provider block (an Anthropic server tool result, a
            Responses reasoning item...), which chat completions cannot take.
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
        elif isinstance(b, ProviderBlock):
            raise ValueError(foreign_block_error(b, "OpenAI chat completions"))
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



def copied_message(m: Message, update: Mapping[str, Any] | None) -> Message:
    """``m.model_copy(update=update)`` made directly, without pydantic's copy machinery (``m`` a ``Message`` itself).

    See :func:`ctxcore.model._unchecked.copied_message`, which makes it.
    """
    # builds Message objects: imported once Message exists
    from ctxcore.model._unchecked import copied_message as copied

    return copied(m, update)
