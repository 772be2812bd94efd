"""The reference long-term memory: ``SimpleStore``, ``Mem0LongTermMemory``, the memory tools.

``SimpleStore`` is ctxcore's ``json`` memory store (distribution
``ctxcore-memory``: one JSON file, substring match first, then keyword
overlap) and ``Mem0LongTermMemory`` its ``mem0`` store
(``ctxcore-memory-mem0``), with the reference return shapes:
``record`` gives ``{"results": [{"id", "content", "metadata"}]}``,
``retrieve`` a list of such dicts, ``format_retrieved`` numbered
``id=... content=...`` lines or ``"No results."``. Namespaces are tuples
(``("user", "42")``, default ``("default",)``), stored as ``"user/42"``.

``MemoryAddTool`` / ``MemorySearchTool`` are the reference tool classes (an
async ``run``) over any such store, and ``create_memory_tools(long_term_memory=...)``
returns ``[MemorySearchTool, MemoryAddTool]``.

Where ctxcore deliberately differs: a store that fails (unreadable file,
mem0 error) raises from ``run`` instead of being turned into a result text the
model reads; only bad arguments come back as ``Error: ...`` text. The native
tools are ``ctxcore.create_memory_tools(store, namespace=...)`` (docs/memory.md).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from ctxcore.compat._resolve import create, project_path
from ctxcore.model.memory_item import MemoryItem

__all__ = ["Mem0LongTermMemory", "MemoryAddTool", "MemorySearchTool", "SimpleStore", "create_memory_tools"]

#: where SimpleStore keeps its file when neither the caller nor the project config names one.
DEFAULT_STORE_PATH = ".ctx/memory.json"

Namespace = tuple[str, ...]


def _result(item: MemoryItem) -> dict[str, Any]:
    return {"id": item.id, "content": item.content, "metadata": dict(item.metadata)}


class _LongTermMemory:
    """A native memory store with the reference's dict-shaped results."""

    _native: Any

    def record(self, inputs: Any, *, namespace: Namespace | str | None = None, **kwargs: Any) -> dict[str, Any]:
        """Store ``inputs``; returns ``{"results": [...]}`` (empty for empty text)."""
        if isinstance(inputs, str) and not inputs.strip():
            return {"results": []}
        options: dict[str, Any] = {}
        if kwargs.get("metadata"):
            options["metadata"] = dict(kwargs["metadata"])
        if kwargs.get("key") is not None:
            options["id"] = str(kwargs["key"])
        items = self._native.record(inputs, namespace=namespace, **options)
        return {"results": [_result(i) for i in items]}

    def retrieve(self, query: Any, *, limit: int = 5, namespace: Namespace | str | None = None, **kwargs: Any) -> list[dict[str, Any]]:
        """The best matches for ``query`` in the namespace, best first; an empty query lists the namespace by id."""
        text = query if isinstance(query, str) else str(query)
        if not text.strip():  # the reference lists the namespace for an empty query (by id)
            every = getattr(self._native, "all_items", None)
            items = sorted(every(namespace=namespace), key=lambda i: i.id) if callable(every) else []
            return [_result(i) for i in items[:limit]]
        return [_result(i) for i in self._native.retrieve(text, limit=limit, namespace=namespace)]

    def format_retrieved(self, retrieved: Sequence[Mapping[str, Any]], **kwargs: Any) -> str:
        """``1. id=... content=... [metadata=...]`` lines, or ``"No results."``."""
        if not retrieved:
            return "No results."
        lines = []
        for index, item in enumerate(retrieved, start=1):
            head = f"{index}. id={item.get('id', index)} content={item.get('content', '')}"
            lines.append(f"{head} metadata={item['metadata']}" if item.get("metadata") else head)
        return "\n".join(lines)

    def delete(self, memory: Any, *, namespace: Namespace | str | None = None) -> None:
        """Remove a retrieved item (a dict with ``id``); anything else is ignored, as in the reference."""
        memory_id = memory.get("id") if isinstance(memory, Mapping) else None
        if isinstance(memory_id, str) and memory_id:
            self._native.delete(memory_id, namespace=namespace)


class SimpleStore(_LongTermMemory):
    """One JSON file of memories; ``record`` requires ``key=`` (the memory's id, replaced when reused).

    Without ``db_path`` the file is ``paths.memory_store`` of the project config
    file, else ``.ctx/memory.json``. A damaged file raises ``MemoryCorrupt``
    naming it (the reference starts over with an empty store).
    """

    def __init__(self, db_path: str | None = None) -> None:
        from pathlib import Path

        self.path = Path(db_path if db_path is not None else project_path("memory_store", DEFAULT_STORE_PATH))
        self._native = create("memory", "json", {"path": str(self.path)}, for_="SimpleStore")

    def record(self, inputs: Any, *, namespace: Namespace | str | None = None, **kwargs: Any) -> dict[str, Any]:
        """Store ``inputs`` under ``key``.

        Raises:
            ValueError: no ``key`` (``"SimpleStore.record requires a non-empty 'key'"``).
        """
        if isinstance(inputs, str) and not inputs.strip():
            return {"results": []}
        if not str(kwargs.get("key") or "").strip():
            raise ValueError("SimpleStore.record requires a non-empty 'key'")
        return super().record(inputs, namespace=namespace, **kwargs)


class Mem0LongTermMemory(_LongTermMemory):
    """mem0 as long-term memory (``mode="local"``: ``mem0.Memory`` in-process; ``"hosted"``: the platform).

    Needs ``pip install 'ctxcore-memory-mem0[mem0]'``; without mem0ai the
    constructor raises naming that command. mem0's default local configuration
    calls a hosted model (OpenAI) to extract and embed facts.
    """

    def __init__(self, config: Mapping[str, Any] | None = None, *, mode: str = "local", infer: bool = True) -> None:
        options: dict[str, Any] = {"mode": mode, "infer": infer}
        if config is not None:
            options["config"] = dict(config)
        self._native = create("memory", "mem0", options, for_="Mem0LongTermMemory")


class _NativeStore(_LongTermMemory):
    """A ctxcore memory store (or a ``MemoryService``'s store) with the reference result shapes."""

    def __init__(self, store: Any) -> None:
        self._native = store


def _service(long_term_memory: Any, memory: Any, for_: str) -> Any:
    """The backend the tools talk to: a reference-shaped store, or a native store/service adapted to one."""
    from ctxcore.runtime.memory_service import MemoryService

    backend = memory if memory is not None else long_term_memory
    if backend is None:
        raise ValueError(f"{for_} requires one of 'memory' or 'long_term_memory'")
    if isinstance(backend, MemoryService):
        return _NativeStore(backend.store)
    if isinstance(backend, _LongTermMemory) or not callable(getattr(backend, "delete", None)):
        return backend  # a compat store, or a reference-style object of the caller's own
    return _NativeStore(backend)  # a ctxcore MemoryStore (returns MemoryItem lists)


class MemoryAddTool:
    """Record one piece of information into long-term memory (tool ``memory_add``)."""

    name = "memory_add"
    description = "Store a fact in long-term memory so it can be recalled in later conversations."
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {"content": {"type": "string", "description": "The text to remember."},
                       "metadata": {"type": "object"}, "key": {"type": "string"}},
        "required": ["content"],
    }

    def __init__(self, namespace: Namespace = ("default",), *, long_term_memory: Any | None = None,
                 memory: Any | None = None) -> None:
        self.memory = _service(long_term_memory, memory, "MemoryAddTool")
        self.namespace = tuple(namespace)

    async def run(self, content: str | None = None, metadata: dict[str, Any] | None = None, key: str | None = None,
                  namespace: list[str] | None = None, **kwargs: Any) -> str:
        """Store ``content``; returns ``"Stored (id: ..., key: ...)"`` or an ``Error: ...`` text for bad arguments."""
        content = content or kwargs.get("input", "")
        if not content:
            return "Error: no content provided"
        ns = tuple(namespace) if namespace else self.namespace
        store_key = key or str(uuid.uuid4())
        try:
            result = self.memory.record(content, namespace=ns, key=store_key, metadata=metadata)
        except (ValueError, TypeError) as exc:  # bad arguments the model can correct; store failures propagate
            return f"Error storing memory: {exc}"
        results = result.get("results") if isinstance(result, Mapping) else None
        if isinstance(results, list) and results and isinstance(results[0], Mapping) and results[0].get("id"):
            return f"Stored (id: {results[0]['id']}, key: {store_key})"
        return f"Stored (key: {store_key})"

    @property
    def definition(self) -> dict[str, Any]:
        """The OpenAI tool definition."""
        return {"type": "function", "function": {"name": self.name, "description": self.description, "parameters": self.parameters}}


class MemorySearchTool:
    """Search long-term memory (tool ``memory_search``); a lightweight lookup, not a RAG pipeline."""

    name = "memory_search"
    description = "Search long-term memory for facts stored in earlier conversations."
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {"query": {"type": "string", "description": "What to look for."}, "k": {"type": "integer", "minimum": 1}},
        "required": ["query"],
    }

    def __init__(self, namespace: Namespace = ("default",), top_k: int = 5, *, long_term_memory: Any | None = None,
                 memory: Any | None = None) -> None:
        self.memory = _service(long_term_memory, memory, "MemorySearchTool")
        self.namespace = tuple(namespace)
        self.top_k = top_k

    async def run(self, query: str | None = None, k: int | None = None, namespace: list[str] | None = None,
                  **kwargs: Any) -> str:
        """The numbered matches, ``"No results."``, or ``"Error: no query provided"``."""
        query = query or kwargs.get("input", "")
        if not query:
            return "Error: no query provided"
        ns = tuple(namespace) if namespace else self.namespace
        retrieved = self.memory.retrieve(query, limit=k or self.top_k, namespace=ns)
        rendered = self.memory.format_retrieved(retrieved)
        if rendered and rendered != "No results.":
            return str(rendered)
        if not retrieved:
            return "No results."
        return "\n".join(f"{i}. {json.dumps(item, ensure_ascii=False) if isinstance(item, dict) else item}"
                         for i, item in enumerate(retrieved, 1))

    @property
    def definition(self) -> dict[str, Any]:
        """The OpenAI tool definition."""
        return {"type": "function", "function": {"name": self.name, "description": self.description, "parameters": self.parameters}}


def create_memory_tools(namespace: Namespace = ("default",), *, long_term_memory: Any | None = None,
                        memory: Any | None = None) -> list[Any]:
    """``[MemorySearchTool, MemoryAddTool]`` over one store and namespace.

    Raises:
        ValueError: neither ``long_term_memory`` nor ``memory`` is given.
    """
    backend = _service(long_term_memory, memory, "create_memory_tools")
    return [MemorySearchTool(namespace, memory=backend), MemoryAddTool(namespace, memory=backend)]
