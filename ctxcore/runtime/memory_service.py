"""``MemoryService``: a long-term memory store bound to one agent's default namespace.

What an agent (or its ``memory_add`` / ``memory_search`` tools, see
:mod:`ctxcore.runtime.memory_tools`) talks to; the stores themselves live in
plugins and build on :mod:`ctxcore.kit.memory`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ctxcore.engine.telemetry import memory_span
from ctxcore.kit.memory import check_limit, resolve_namespace
from ctxcore.model.memory_item import MemoryItem

if TYPE_CHECKING:  # pragma: no cover
    from ctxcore.runtime.memory_tools import MemoryTools

__all__ = ["MemoryService"]


class MemoryService:
    """A store bound to one default namespace: what an agent (or its tools) talks to.

    Args:
        store: any object following the ``MemoryStore`` contract.
        namespace: the namespace calls use unless they name another.
        default_limit: how many items ``search`` returns when not told.
    """

    def __init__(self, store: Any, namespace: str | tuple[str, ...] | None = None, *, default_limit: int = 5) -> None:
        for method in ("record", "retrieve", "format_retrieved", "delete"):
            if not callable(getattr(store, method, None)):
                raise TypeError(f"{type(store).__name__} is not a memory store: it has no {method}() method")
        self.store = store
        self.namespace = resolve_namespace(namespace)
        self.default_limit = check_limit(default_limit)

    def _ns(self, namespace: str | tuple[str, ...] | None) -> str:
        return self.namespace if namespace is None else resolve_namespace(namespace)

    def _limit(self, limit: int | None) -> int:
        return self.default_limit if limit is None else check_limit(limit)

    def add(self, content: Any, *, metadata: Mapping[str, Any] | None = None, id: str | None = None,
            namespace: str | tuple[str, ...] | None = None) -> list[MemoryItem]:
        """Record ``content``; returns the stored items (one for the embedded stores). Traced as ``create_memory``."""
        ns = self._ns(namespace)
        with memory_span("create_memory", self.store, ns) as traced:
            items = list(self.store.record(content, namespace=ns, **_record_kw(metadata, id)))
            traced.result(items)
        return items

    def search(self, query: str, *, limit: int | None = None, namespace: str | tuple[str, ...] | None = None,
               filters: Mapping[str, Any] | None = None) -> list[MemoryItem]:
        """The most relevant items for ``query``, best first; ``filters`` match metadata exactly. Traced as ``search_memory``."""
        kw = {"filters": dict(filters)} if filters else {}
        ns, limit = self._ns(namespace), self._limit(limit)
        with memory_span("search_memory", self.store, ns, query=query) as traced:
            items = list(self.store.retrieve(query, limit=limit, namespace=ns, **kw))
            traced.result(items)
        return items

    def format_retrieved(self, items: Sequence[MemoryItem]) -> str:
        """Render items with the store's own formatting."""
        return str(self.store.format_retrieved(items))

    def delete(self, item: Any, *, namespace: str | tuple[str, ...] | None = None) -> None:
        """Remove ``item`` (a MemoryItem or its id) from the namespace; unknown ids are ignored."""
        self.store.delete(item, namespace=self._ns(namespace))

    async def aadd(self, content: Any, *, metadata: Mapping[str, Any] | None = None, id: str | None = None,
                   namespace: str | tuple[str, ...] | None = None) -> list[MemoryItem]:
        """Async :meth:`add`: the store's ``arecord`` if it has one, else ``record`` in a thread."""
        kw = _record_kw(metadata, id)
        ns = self._ns(namespace)
        with memory_span("create_memory", self.store, ns) as traced:
            if hasattr(self.store, "arecord"):
                items = list(await self.store.arecord(content, namespace=ns, **kw))
            else:
                items = list(await asyncio.to_thread(self.store.record, content, namespace=ns, **kw))
            traced.result(items)
        return items

    async def asearch(self, query: str, *, limit: int | None = None, namespace: str | tuple[str, ...] | None = None,
                      filters: Mapping[str, Any] | None = None) -> list[MemoryItem]:
        """Async :meth:`search`."""
        kw: dict[str, Any] = {"limit": self._limit(limit), "namespace": self._ns(namespace)}
        if filters:
            kw["filters"] = dict(filters)
        with memory_span("search_memory", self.store, kw["namespace"], query=query) as traced:
            if hasattr(self.store, "aretrieve"):
                items = list(await self.store.aretrieve(query, **kw))
            else:
                items = list(await asyncio.to_thread(self.store.retrieve, query, **kw))
            traced.result(items)
        return items

    async def adelete(self, item: Any, *, namespace: str | tuple[str, ...] | None = None) -> None:
        """Async :meth:`delete`."""
        ns = self._ns(namespace)
        if hasattr(self.store, "adelete"):
            await self.store.adelete(item, namespace=ns)
        else:
            await asyncio.to_thread(self.store.delete, item, namespace=ns)

    def as_tools(self, *, max_limit: int = 20) -> MemoryTools:
        """The ``memory_add`` / ``memory_search`` tools bound to this service's namespace."""
        from ctxcore.runtime.memory_tools import MemoryTools

        return MemoryTools(self, max_limit=max_limit)


def _record_kw(metadata: Mapping[str, Any] | None, id: str | None) -> dict[str, Any]:
    kw: dict[str, Any] = {}
    if metadata:
        kw["metadata"] = dict(metadata)
    if id is not None:
        kw["id"] = id
    return kw
