"""What every long-term memory store shares: input checks, text, ids and rendering.

A memory store (see :class:`ctxcore.engine.protocols.MemoryStore`) keeps short texts
("the user prefers tabs") per *namespace* (one user, one agent) and finds the
relevant ones for a query. The stores live in plugins (``ctxcore-memory``,
``ctxcore-memory-mem0``, the PostgreSQL distribution); what they must agree on
lives here: how inputs become text, which namespaces, metadata, filters and
limits are valid, and how items are rendered for a prompt. The item itself is
:class:`ctxcore.model.memory_item.MemoryItem` (re-exported here);
:class:`ctxcore.runtime.memory_service.MemoryService` binds a store to an agent.
"""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from ctxcore.model.memory_item import DEFAULT_NAMESPACE, MemoryItem, utc_now
from ctxcore.model.messages import Message

__all__ = [
    "DEFAULT_NAMESPACE",
    "MAX_NAMESPACE_LENGTH",
    "MemoryItem",
    "MemoryStoreBase",
    "canonical_json",
    "check_filters",
    "check_limit",
    "check_metadata",
    "check_query",
    "check_record",
    "check_retrieve",
    "format_memories",
    "item_id",
    "memory_text",
    "new_memory_id",
    "resolve_namespace",
    "tokenize",
    "utc_now",
]

MAX_NAMESPACE_LENGTH = 256

_WORD = re.compile(r"\w+", re.UNICODE)


# ---------------------------------------------------------------- input checks
def new_memory_id() -> str:
    """A fresh memory id (uuid4 hex)."""
    return uuid.uuid4().hex


def resolve_namespace(namespace: str | tuple[str, ...] | None) -> str:
    """``namespace`` checked and in its canonical string form; :data:`DEFAULT_NAMESPACE` for ``None``.

    A tuple names a nested namespace the way the reference memory API does
    (``("user", "42")``): it is the namespace ``"user/42"``, so every backend
    stores it in its one namespace column and ``("user", "42")`` and
    ``"user/42"`` are the same namespace. Tuple segments must be non-empty
    strings without ``/`` (else two tuples could name one namespace).

    Raises:
        ValueError: not a string or tuple of strings, empty, longer than 256
            characters, holding NUL, or a tuple segment that is empty or holds ``/``.
    """
    if namespace is None:
        return DEFAULT_NAMESPACE
    if isinstance(namespace, tuple):
        namespace = _join_namespace(namespace)
    if not isinstance(namespace, str):
        raise ValueError(f"namespace must be a string or a tuple of strings (one user or agent), got {type(namespace).__name__}")
    if not namespace or "\x00" in namespace or len(namespace) > MAX_NAMESPACE_LENGTH:
        raise ValueError(f"namespace {namespace[:40]!r} must be 1-{MAX_NAMESPACE_LENGTH} characters without NUL")
    _check_encodable(namespace, "namespace")
    return namespace


def _join_namespace(parts: tuple[object, ...]) -> str:
    if not parts:
        raise ValueError("namespace tuple is empty; give at least one segment, e.g. ('user', '42')")
    for i, part in enumerate(parts):
        if not isinstance(part, str) or not part or "/" in part:
            raise ValueError(f"namespace tuple segment {i} ({part!r}) must be a non-empty string without '/'")
    return "/".join(parts)  # type: ignore[arg-type]  # checked above


def _check_encodable(text: str, what: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(f"{what} holds a character that cannot be stored (lone surrogate at {exc.start})") from None


def _message_text(value: Any) -> tuple[str, str]:
    """(role, text) of a Message or an OpenAI-style message dict."""
    if isinstance(value, Message):
        return value.role, value.text
    if isinstance(value, Mapping) and "content" in value:
        content = value["content"]
        if isinstance(content, list):  # OpenAI content parts: keep the text ones
            content = "\n".join(p.get("text", "") for p in content if isinstance(p, Mapping) and p.get("type") == "text")
        if content is not None and not isinstance(content, str):
            raise TypeError(f"message content must be text, got {type(content).__name__}")
        return str(value.get("role", "")), content or ""
    raise TypeError(f"cannot record {type(value).__name__}: give text, a Message, a message dict or a list of them")


def memory_text(inputs: Any) -> str:
    """The text a store keeps for ``inputs``.

    ``inputs`` is a string, a :class:`Message`, an OpenAI-style message dict, or a
    list of messages (kept as one memory of ``role: text`` lines).

    Raises:
        TypeError: an input of another type.
        ValueError: the text is blank or cannot be stored (lone surrogates).
    """
    if isinstance(inputs, str):
        text = inputs
    elif isinstance(inputs, (Message, Mapping)):
        text = _message_text(inputs)[1]
    elif isinstance(inputs, Sequence):
        lines = []
        for part in inputs:
            role, body = _message_text(part) if not isinstance(part, str) else ("", part)
            if body.strip():
                lines.append(f"{role}: {body}" if role else body)
        text = "\n".join(lines)
    else:
        raise TypeError(f"cannot record {type(inputs).__name__}: give text, a Message, a message dict or a list of them")
    if not text.strip():
        raise ValueError("nothing to record: the memory text is empty")
    _check_encodable(text, "memory text")
    return text


def canonical_json(value: Any) -> str:
    """Compact, key-sorted JSON; how metadata values are compared and stored.

    Raises:
        ValueError: not JSON (NaN, infinities, non-string keys, other types) or
            holding lone surrogates.
    """
    try:
        text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"not a JSON value: {exc}") from None
    except RecursionError:
        raise ValueError("nested too deep to store as JSON; flatten it") from None
    _check_encodable(text, "metadata")
    return text


def check_metadata(metadata: Mapping[str, Any] | None) -> dict[str, Any]:
    """Metadata as a plain dict of JSON values with string keys (``{}`` for ``None``).

    Raises:
        ValueError: not a mapping, a non-string or empty key, or a value that is not JSON.
    """
    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping):
        raise ValueError(f"metadata must be a mapping, got {type(metadata).__name__}")
    out: dict[str, Any] = {}
    for key, value in metadata.items():
        if not isinstance(key, str) or not key:
            raise ValueError(f"metadata keys must be non-empty strings, got {key!r}")
        try:
            out[key] = json.loads(canonical_json(value))
        except ValueError as exc:
            raise ValueError(f"metadata[{key!r}]: {exc}") from None
    canonical_json(out)  # keys must be encodable too
    return out


def check_filters(filters: Mapping[str, Any] | None) -> dict[str, str]:
    """Metadata filters as {key: canonical JSON of the wanted value}; all must match.

    Raises:
        ValueError: the same problems :func:`check_metadata` reports.
    """
    return {key: canonical_json(value) for key, value in check_metadata(filters).items()}


def check_limit(limit: int) -> int:
    """``limit`` if it is a positive integer.

    Raises:
        ValueError: otherwise (``True`` is not a limit).
    """
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValueError(f"limit must be a positive integer, got {limit!r}")
    return limit


def check_query(query: Any) -> str:
    """The query text (a string, or a message's text).

    Raises:
        ValueError: blank query.
        TypeError: not text or a message.
    """
    text = query if isinstance(query, str) else memory_text(query) if isinstance(query, (Message, Mapping)) else None
    if text is None:
        raise TypeError(f"query must be text, got {type(query).__name__}")
    if not text.strip():
        raise ValueError("query is empty: say what to look for")
    _check_encodable(text, "query")
    return text


def check_retrieve(
    store: str, query: Any, limit: int, namespace: str | tuple[str, ...] | None, options: dict[str, Any]
) -> tuple[str, int, str, dict[str, str]]:
    """The checked arguments of a ``retrieve`` call: (query text, limit, namespace, filters).

    ``options`` are the call's extra keywords; ``filters`` is the only one the
    shared contract knows, so anything else is refused naming ``store``.

    Raises:
        ValueError, TypeError: what :func:`check_query`, :func:`check_limit` and
            :func:`check_filters` report, or an unknown option.
    """
    text = check_query(query)
    checked_limit = check_limit(limit)
    ns = resolve_namespace(namespace)
    filters = check_filters(options.pop("filters", None))
    if options:
        raise TypeError(f"{store} memory store: unknown retrieve option(s) {', '.join(sorted(options))}")
    return text, checked_limit, ns, filters


def check_record(store: str, inputs: Any, namespace: str | tuple[str, ...] | None, options: dict[str, Any]) -> MemoryItem:
    """The memory a ``record`` call describes, checked: namespace, text, metadata and id.

    ``options`` are the call's extra keywords; ``metadata`` and ``id`` are the
    ones the shared contract knows (``id`` replaces that memory; a new id is
    made when absent), anything else is refused naming ``store``. The item's
    ``created_at`` is now.

    Raises:
        ValueError, TypeError: what :func:`memory_text` and :func:`check_metadata`
            report, an id that is not a string, or an unknown option.
    """
    ns = resolve_namespace(namespace)
    text = memory_text(inputs)
    metadata = check_metadata(options.pop("metadata", None))
    memory_id = options.pop("id", None) or new_memory_id()
    if not isinstance(memory_id, str):
        raise ValueError(f"id must be a string, got {type(memory_id).__name__}")
    if options:
        raise TypeError(f"{store} memory store: unknown record option(s) {', '.join(sorted(options))}")
    return MemoryItem(id=memory_id, content=text, metadata=metadata, namespace=ns, created_at=utc_now())


def item_id(item: Any) -> str:
    """The id of a :class:`MemoryItem`, an id string or a dict with ``id``.

    Raises:
        ValueError: no usable id.
    """
    value = item.id if isinstance(item, MemoryItem) else item.get("id") if isinstance(item, Mapping) else item
    if not isinstance(value, str) or not value:
        raise ValueError(f"cannot delete {item!r}: give a MemoryItem, its id, or a dict with 'id'")
    return value


def tokenize(text: str) -> list[str]:
    """Lower-cased word tokens (Unicode letters, digits, underscore)."""
    return _WORD.findall(text.lower())


def format_memories(items: Sequence[MemoryItem]) -> str:
    """Render retrieved items for a prompt or a tool result, one numbered line each."""
    if not items:
        return "No relevant memories."
    lines = []
    for i, item in enumerate(items, start=1):
        line = f"{i}. [{item.id}] {item.content}"
        if item.metadata:
            line += f" (metadata: {canonical_json(item.metadata)})"
        lines.append(line)
    return "\n".join(lines)


# ------------------------------------------------------------------ base class
class MemoryStoreBase:
    """Optional base for stores: async variants in a worker thread and the shared rendering.

    Subclasses implement ``record``, ``retrieve`` and ``delete``.
    """

    def record(self, inputs: Any, namespace: str | tuple[str, ...] | None = None, **kw: Any) -> list[MemoryItem]:  # pragma: no cover
        raise NotImplementedError

    def retrieve(self, query: str, limit: int = 5, namespace: str | tuple[str, ...] | None = None, **kw: Any) -> list[MemoryItem]:  # pragma: no cover
        raise NotImplementedError

    def delete(self, item: Any, namespace: str | tuple[str, ...] | None = None) -> None:  # pragma: no cover
        raise NotImplementedError

    def format_retrieved(self, items: Sequence[MemoryItem]) -> str:
        """Numbered lines ``1. [id] content (metadata: {...})``; see :func:`format_memories`."""
        return format_memories(items)

    async def arecord(self, inputs: Any, namespace: str | tuple[str, ...] | None = None, **kw: Any) -> list[MemoryItem]:
        """:meth:`record` in a worker thread, so an event loop never blocks on file I/O."""
        return await asyncio.to_thread(self.record, inputs, namespace, **kw)

    async def aretrieve(self, query: str, limit: int = 5, namespace: str | tuple[str, ...] | None = None, **kw: Any) -> list[MemoryItem]:
        """:meth:`retrieve` in a worker thread."""
        return await asyncio.to_thread(self.retrieve, query, limit, namespace, **kw)

    async def adelete(self, item: Any, namespace: str | tuple[str, ...] | None = None) -> None:
        """:meth:`delete` in a worker thread."""
        await asyncio.to_thread(self.delete, item, namespace)
