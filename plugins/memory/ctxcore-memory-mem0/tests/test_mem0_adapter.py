"""The mem0 adapter against a recorded mem0 client (mem0ai 2.x signatures and answer shapes).

The real ``mem0ai`` package is optional (see test_real_mem0.py and docs/memory.md);
this client replays what ``mem0.Memory`` 2.2 does for the calls the adapter makes:
``add(messages, *, user_id=, metadata=, infer=)``, ``search(query, *, top_k=,
filters=, threshold=)`` (top-level ``user_id`` refused, as mem0 does),
``get(memory_id)`` (``None`` when missing) and ``delete(memory_id)``
(``ValueError`` when missing), with the same result dicts.
"""

from __future__ import annotations

import copy
import hashlib
import math
import re
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from ctxcore_memory_mem0 import Mem0Config, Mem0MemoryStore
from ctxcore_memory_mem0 import plugin as mem0_plugin

from ctxcore import MemoryService
from ctxcore.testing import fresh_host
from ctxcore.testing.contracts.memory_store import MemoryStoreContract

_ENTITY = ("user_id", "agent_id", "run_id")


def _bag(text: str) -> dict[str, int]:
    bag: dict[str, int] = {}
    for word in re.findall(r"\w+", text.lower()):
        bag[word] = bag.get(word, 0) + 1
    return bag


def _cosine(a: dict[str, int], b: dict[str, int]) -> float:
    dot = sum(v * b.get(k, 0) for k, v in a.items())
    norm = math.sqrt(sum(v * v for v in a.values())) * math.sqrt(sum(v * v for v in b.values()))
    return dot / norm if norm else 0.0


_MISSING = object()


def _same(stored: Any, wanted: Any) -> bool:
    """Qdrant's exact match: equal value of the same JSON type (1 is not true)."""
    return type(stored) is type(wanted) and stored == wanted


class RecordedMem0:
    """A stand-in for ``mem0.Memory`` with its 2.x call signatures and answers; data kept per path."""

    _stores: dict[str, dict[str, dict[str, Any]]] = {}

    def __init__(self, path: str = ":memory:") -> None:
        self.rows = self._stores.setdefault(path, {})
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def add(self, messages: Any, *, user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None,
            metadata: dict[str, Any] | None = None, infer: bool = True, **kwargs: Any) -> dict[str, Any]:
        self.calls.append(("add", {"messages": messages, "user_id": user_id, "metadata": metadata, "infer": infer}))
        if not any((user_id, agent_id, run_id)):
            raise ValueError("At least one of 'user_id', 'agent_id', or 'run_id' must be provided.")
        if isinstance(messages, str):
            messages = [{"role": "user", "content": messages}]
        results = []
        for message in messages:
            if message["role"] == "system":
                continue
            # infer=True: mem0's LLM would extract facts; the recording extracted each user sentence.
            facts = [message["content"]] if not infer else [s for s in re.split(r"(?<=[.!?])\s+", message["content"]) if s]
            for fact in facts:
                memory_id = str(uuid.uuid4())
                now = datetime.now(timezone.utc).isoformat()
                self.rows[memory_id] = {
                    "id": memory_id, "memory": fact, "hash": hashlib.md5(fact.encode()).hexdigest(),
                    "metadata": copy.deepcopy(metadata) if metadata else None, "created_at": now, "updated_at": now,
                    "user_id": user_id, "role": message["role"],
                }
                results.append({"id": memory_id, "memory": fact, "event": "ADD", "actor_id": None, "role": message["role"]})
        return {"results": results}

    def search(self, query: str, *, top_k: int = 20, filters: dict[str, Any] | None = None, threshold: float = 0.1,
               rerank: bool = False, **kwargs: Any) -> dict[str, Any]:
        self.calls.append(("search", {"query": query, "top_k": top_k, "filters": filters}))
        if any(k in kwargs for k in _ENTITY):
            raise ValueError("Top-level entity parameters frozenset({'user_id'}) are not supported in search(). "
                             "Use filters={'user_id': '...'} instead.")
        filters = dict(filters or {})
        if not any(k in filters for k in _ENTITY):
            raise ValueError("At least one of 'user_id', 'agent_id', or 'run_id' must be provided in filters.")
        wanted = _bag(query)
        hits = []
        for row in self.rows.values():
            if not all(_same(row.get(k) if k in _ENTITY else (row["metadata"] or {}).get(k, _MISSING), v) for k, v in filters.items()):
                continue
            score = _cosine(wanted, _bag(row["memory"]))
            if score >= threshold:
                hits.append({**row, "score": score})
        hits.sort(key=lambda r: -r["score"])
        return {"results": hits[:top_k]}

    def get(self, memory_id: str) -> dict[str, Any] | None:
        row = self.rows.get(memory_id)
        return None if row is None else {**row, "score": None}

    def delete(self, memory_id: str) -> dict[str, str]:
        if memory_id not in self.rows:
            raise ValueError(f"Memory with id {memory_id} not found")
        del self.rows[memory_id]
        return {"message": "Memory deleted successfully!"}


class TestMem0ContractRecorded(MemoryStoreContract):
    """The contract over the recorded client, storing text as given (infer: false)."""

    supports_ids = False

    def make_store(self, path: Path) -> Mem0MemoryStore:
        return Mem0MemoryStore(RecordedMem0(str(path)), infer=False)


class TestMapping:
    def test_namespace_is_user_id(self) -> None:
        """record passes the namespace as user_id; retrieve scopes with filters={'user_id': ns}."""
        client = RecordedMem0()
        store = Mem0MemoryStore(client, infer=False)
        store.record("likes jazz", namespace="u-7", metadata={"topic": "music"})
        store.retrieve("jazz", limit=3, namespace="u-7", filters={"topic": "music"})
        assert client.calls[0] == ("add", {"messages": "likes jazz", "user_id": "u-7", "metadata": {"topic": "music"}, "infer": False})
        assert client.calls[1] == ("search", {"query": "jazz", "top_k": 3, "filters": {"topic": "music", "user_id": "u-7"}})

    def test_infer_is_configurable(self) -> None:
        """infer: true hands mem0 the conversation as messages for fact extraction."""
        client = RecordedMem0()
        items = Mem0MemoryStore(client, infer=True).record(
            [{"role": "user", "content": "I moved to Porto. I work remotely."}, {"role": "assistant", "content": "Noted!"}])
        assert client.calls[0][1]["infer"] is True
        assert client.calls[0][1]["messages"][0] == {"role": "user", "content": "I moved to Porto. I work remotely."}
        assert [i.content for i in items][:2] == ["I moved to Porto.", "I work remotely."]

    def test_filters_cannot_escape_the_namespace(self) -> None:
        """Reserved keys and operator-shaped values in filters are refused before mem0 sees them."""
        store = Mem0MemoryStore(RecordedMem0(), infer=False)
        store.record("secret of bob", namespace="bob")
        for bad in ({"user_id": "bob"}, {"OR": "x"}, {"k": {"ne": "x"}}, {"k": ["a"]}):
            with pytest.raises(ValueError):
                store.retrieve("secret", namespace="alice", filters=bad)
        with pytest.raises(ValueError, match="reserved"):
            store.record("x", metadata={"user_id": "bob"})

    def test_whitespace_namespace_is_refused(self) -> None:
        """mem0 trims user ids and refuses inner spaces, so such namespaces are refused up front."""
        with pytest.raises(ValueError, match="whitespace"):
            Mem0MemoryStore(RecordedMem0(), infer=False).record("x", namespace="two words")

    def test_other_namespace_results_are_dropped(self) -> None:
        """A backend answer holding another user's memory is never returned."""
        class Leaky(RecordedMem0):
            def search(self, query: str, **kw: Any) -> dict[str, Any]:
                return {"results": [{"id": "x", "memory": "bob's secret", "user_id": "bob", "score": 0.9}]}

        assert Mem0MemoryStore(Leaky(), infer=False).retrieve("secret", namespace="alice") == []

    def test_not_a_client_is_refused(self) -> None:
        """An object without mem0's methods is refused with a clear TypeError."""
        with pytest.raises(TypeError, match="not a mem0"):
            Mem0MemoryStore(object())

    def test_service_and_tools_work_over_mem0(self) -> None:
        """MemoryService and its tools run over the adapter like over any store."""
        import asyncio

        tools = MemoryService(Mem0MemoryStore(RecordedMem0(), infer=False), "u1").as_tools()
        out = asyncio.run(tools.run("memory_add", '{"content": "the gate code is 4711"}'))
        assert out.startswith("Stored memory ")
        assert "4711" in asyncio.run(tools.run("memory_search", {"query": "gate code"}))


class TestPlugin:
    def test_registered_with_config(self) -> None:
        """The plugin registers 'mem0' with its config model (modes, infer, threshold)."""
        host = fresh_host(("ctxcore-memory-mem0", mem0_plugin))
        component = host.registry.get("memory", "mem0")
        assert component.config.model_validate({"infer": False}).infer is False
        with pytest.raises(Exception, match="mode"):
            component.validate({"mode": "cloud"})

    def test_missing_mem0ai_is_a_clear_error(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Without the mem0ai package the store says which package to install."""
        import builtins

        real_import = builtins.__import__

        def no_mem0(name: str, *args: Any, **kwargs: Any) -> Any:
            if name == "mem0" or name.startswith("mem0."):
                raise ImportError("No module named 'mem0'")
            return real_import(name, *args, **kwargs)

        monkeypatch.setattr(builtins, "__import__", no_mem0)
        with pytest.raises(RuntimeError, match=r"ctxcore-memory-mem0\[mem0\]"):
            mem0_plugin.create_client(Mem0Config())

    def test_hosted_needs_an_api_key(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """mode: hosted without the key in the environment names the variable."""
        monkeypatch.delenv("MEM0_API_KEY", raising=False)
        with pytest.raises(ValueError, match="MEM0_API_KEY"):
            mem0_plugin.create_client(Mem0Config(mode="hosted"))
