"""``mem0``: the ctxcore memory contract over mem0's ``Memory`` or ``MemoryClient``.

mem0 is a memory *capability*: with ``infer: true`` (mem0's default) an LLM
turns what is recorded into facts and may update or delete older ones, so
``record`` returns the memories mem0 added or changed (possibly none); with
``infer: false`` the text is stored as it is, one memory per call.

The mapping (mem0ai 2.x, where ``Memory`` and ``MemoryClient`` accept the same
calls):

- namespace -> ``user_id``: ``add(..., user_id=ns)`` and
  ``search(..., filters={"user_id": ns, **filters})``. mem0 trims ids and
  refuses inner whitespace, so a namespace with whitespace is refused here.
- ``retrieve(limit=)`` -> ``search(top_k=)``; mem0's similarity score is the score.
- ``filters`` are exact matches on metadata. Keys are plain names (letters,
  digits, ``_``, ``-``: vector stores read them as paths). Only scalar values are accepted
  (a dict value would be read by mem0 as an operator such as ``{"ne": ...}``),
  and keys mem0 reserves (``user_id``, ``AND``, ...) are refused, so a filter
  can never widen the search to another namespace.
- ``delete`` looks the memory up first and deletes it only if it belongs to
  the namespace. mem0 memory ids are UUIDs; any other id cannot exist and is
  a no-op.
- mem0 assigns ids: ``record(..., id=)`` is refused.
"""

from __future__ import annotations

import copy
import re
import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from ctxcore import MemoryItem, Message
from ctxcore.kit import (
    MemoryStoreBase,
    check_limit,
    check_metadata,
    check_query,
    item_id,
    memory_text,
    resolve_namespace,
    utc_now,
)

__all__ = ["Mem0MemoryStore", "RESERVED_KEYS"]

#: keys mem0 treats as scope, payload or logical operators; not usable as metadata or filter keys.
RESERVED_KEYS = frozenset({
    "user_id", "agent_id", "run_id", "actor_id", "app_id", "AND", "OR", "NOT",
    "id", "memory", "data", "hash", "role", "created_at", "updated_at",
})


class Mem0MemoryStore(MemoryStoreBase):
    """Adapts a mem0 ``Memory`` or ``MemoryClient`` (anything with their ``add``/``search``/``get``/``delete``).

    Args:
        client: the mem0 object.
        infer: let mem0's LLM extract facts when recording (mem0's default) or store text as given.
        threshold: minimum similarity for ``search`` results (``None``: mem0's default).
    """

    def __init__(self, client: Any, *, infer: bool = True, threshold: float | None = None) -> None:
        for method in ("add", "search", "get", "delete"):
            if not callable(getattr(client, method, None)):
                raise TypeError(f"{type(client).__name__} is not a mem0 Memory or MemoryClient: no {method}()")
        self.client = client
        self.infer = bool(infer)
        self.threshold = threshold

    # ------------------------------------------------------------- contract
    def record(self, inputs: Any, namespace: str | tuple[str, ...] | None = None, **kw: Any) -> list[MemoryItem]:
        """Hand ``inputs`` to mem0 for ``user_id=namespace``; returns the memories it added or updated."""
        ns = _user_id(namespace)
        text = memory_text(inputs)
        metadata = _check_keys(check_metadata(kw.pop("metadata", None)), "metadata")
        if "id" in kw:
            raise ValueError("mem0 assigns memory ids itself; record without id= (delete the old memory to replace it)")
        if kw:
            raise TypeError(f"mem0 memory store: unknown record option(s) {', '.join(sorted(kw))}")
        payload: Any = text
        if self.infer and isinstance(inputs, Sequence) and not isinstance(inputs, str):
            payload = _messages(inputs)  # fact extraction reads the conversation turn by turn
        result = self.client.add(payload, user_id=ns, metadata=metadata or None, infer=self.infer)
        items = []
        for raw in _results(result):
            if raw.get("event", "ADD") not in ("ADD", "UPDATE") or not isinstance(raw.get("memory"), str):
                continue  # DELETE / NONE events, or a hosted add still being processed
            meta = raw.get("metadata") if isinstance(raw.get("metadata"), dict) else metadata
            items.append(MemoryItem(id=str(raw["id"]), content=raw["memory"], metadata=copy.deepcopy(meta or {}),
                                    namespace=ns, created_at=_time(raw.get("created_at"))))
        return items

    def retrieve(self, query: str, limit: int = 5, namespace: str | tuple[str, ...] | None = None, **kw: Any) -> list[MemoryItem]:
        """mem0's semantic search in ``user_id=namespace``; ``filters=`` match metadata exactly."""
        text = check_query(query)
        limit = check_limit(limit)
        ns = _user_id(namespace)
        filters = _check_filters(kw.pop("filters", None))
        if kw:
            raise TypeError(f"mem0 memory store: unknown retrieve option(s) {', '.join(sorted(kw))}")
        options: dict[str, Any] = {"top_k": limit, "filters": {**filters, "user_id": ns}}
        if self.threshold is not None:
            options["threshold"] = self.threshold
        items = []
        for raw in _results(self.client.search(text, **options)):
            if raw.get("user_id", ns) != ns:
                continue  # never hand out another namespace's memory, whatever the backend did
            score = raw.get("score")
            items.append(MemoryItem(id=str(raw["id"]), content=str(raw.get("memory", "")),
                                    metadata=copy.deepcopy(raw.get("metadata") or {}), namespace=ns,
                                    created_at=_time(raw.get("created_at")),
                                    score=float(score) if isinstance(score, (int, float)) else 0.0))
        items.sort(key=lambda i: -(i.score or 0.0))
        return items[:limit]

    def delete(self, item: Any, namespace: str | tuple[str, ...] | None = None) -> None:
        """Delete the memory if it exists in ``namespace``; otherwise do nothing."""
        memory_id = item_id(item)
        ns = _user_id(namespace)
        try:
            uuid.UUID(memory_id)
        except ValueError:
            return  # mem0 ids are UUIDs: this one cannot exist
        found = self.client.get(memory_id)
        if not found or found.get("user_id") != ns:
            return
        self.client.delete(memory_id)


def _user_id(namespace: str | tuple[str, ...] | None) -> str:
    ns = resolve_namespace(namespace)
    if any(ch.isspace() for ch in ns):
        raise ValueError(f"namespace {ns!r}: mem0 user ids cannot contain whitespace")
    return ns


def _check_keys(values: dict[str, Any], what: str) -> dict[str, Any]:
    reserved = sorted(set(values) & RESERVED_KEYS)
    if reserved:
        raise ValueError(f"{what} key(s) {', '.join(reserved)} are reserved by mem0 (scope and payload fields); rename them")
    return values


_FILTER_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


def _check_filters(filters: Mapping[str, Any] | None) -> dict[str, Any]:
    checked = _check_keys(check_metadata(filters), "filter")
    for key, value in checked.items():
        if not _FILTER_KEY.fullmatch(key):
            raise ValueError(f"filter key {key!r}: mem0's vector stores read filter keys as paths; "
                             "use letters, digits, '_' and '-' only")
        if not isinstance(value, (str, int, float, bool)):
            raise ValueError(f"filter {key!r}: mem0 matches only string, number or boolean values "
                             f"(a {type(value).__name__} would be read as a mem0 filter operator)")
    return checked


def _messages(inputs: Sequence[Any]) -> list[dict[str, str]]:
    out = []
    for part in inputs:
        if isinstance(part, Message):
            out.append({"role": part.role, "content": part.text})
        elif isinstance(part, Mapping):
            out.append({"role": str(part.get("role", "user")), "content": memory_text(part)})
        else:
            out.append({"role": "user", "content": memory_text(part)})
    return out


def _results(payload: Any) -> list[dict[str, Any]]:
    """The result dicts of a mem0 answer (``{"results": [...]}``, or a bare list from older servers)."""
    results = payload.get("results", []) if isinstance(payload, Mapping) else payload
    if not isinstance(results, list):
        raise TypeError(f"unexpected mem0 answer {type(payload).__name__}: expected {{'results': [...]}}")
    return [dict(r) for r in results if isinstance(r, Mapping) and r.get("id") is not None]


def _time(value: Any) -> datetime:
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
            return parsed if parsed.tzinfo else parsed.replace(tzinfo=utc_now().tzinfo)
        except ValueError:
            pass
    return utc_now()
