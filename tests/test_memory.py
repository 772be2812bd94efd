"""Tests for ctxcore.kit.memory and ctxcore.runtime.memory_tools: items, input checks, MemoryService, the tools."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from ctxcore.engine.protocols import AsyncMemoryStore, MemoryStore
from ctxcore.kit.memory import (
    DEFAULT_NAMESPACE,
    MemoryItem,
    check_filters,
    check_metadata,
    format_memories,
    item_id,
    memory_text,
    resolve_namespace,
)
from ctxcore.model.messages import ai, human
from ctxcore.pipeline.spec import Pipeline
from ctxcore.runtime.memory_service import MemoryService
from ctxcore.runtime.memory_tools import create_memory_tools
from ctxcore.testing import fresh_host


@pytest.fixture
def store(tmp_path: Path) -> Any:
    """A real sqlite memory store in a temporary directory."""
    from ctxcore_memory import SqliteMemoryStore

    return SqliteMemoryStore(tmp_path / "memory.db")


class TestInputs:
    def test_memory_text_of_messages(self) -> None:
        """Strings stay as they are; messages and lists of them become role-prefixed lines."""
        assert memory_text("plain") == "plain"
        assert memory_text(human("hi there")) == "hi there"
        assert memory_text({"role": "user", "content": [{"type": "text", "text": "part"}]}) == "part"
        assert memory_text([human("I moved"), ai("noted"), {"role": "user", "content": "to Porto"}]) == \
            "user: I moved\nassistant: noted\nuser: to Porto"

    def test_memory_text_refuses_what_it_cannot_store(self) -> None:
        """Other types raise TypeError; blank text and lone surrogates raise ValueError."""
        with pytest.raises(TypeError):
            memory_text(42)
        for bad in ("", [], [{"role": "user", "content": " "}], "x\udc80"):
            with pytest.raises(ValueError):
                memory_text(bad)

    def test_namespace_rules(self) -> None:
        """None is 'default'; a tuple is its '/'-joined path; empty, NUL, over-long and non-string namespaces are refused."""
        assert resolve_namespace(None) == DEFAULT_NAMESPACE
        assert resolve_namespace("user/42") == "user/42"
        assert resolve_namespace(("user", "42")) == "user/42" and resolve_namespace(("a",)) == "a"
        for bad in ("", "a\x00b", "n" * 257, (), ("a", ""), ("a/b",), ("a", 1), ["a"]):
            with pytest.raises(ValueError):
                resolve_namespace(bad)  # type: ignore[arg-type]

    def test_metadata_and_filters(self) -> None:
        """Metadata is normalised to JSON values; filters become canonical JSON per key."""
        assert check_metadata({"t": (1, 2)}) == {"t": [1, 2]}
        assert check_filters({"b": {"y": 1, "x": True}}) == {"b": '{"x":true,"y":1}'}
        with pytest.raises(ValueError, match=r"metadata\['when'\]"):
            check_metadata({"when": object()})

    def test_item_id_forms(self) -> None:
        """A MemoryItem, an id string and a dict with 'id' all name a memory."""
        item = MemoryItem(id="abc", content="x")
        assert item_id(item) == item_id("abc") == item_id({"id": "abc"}) == "abc"
        with pytest.raises(ValueError):
            item_id({"content": "no id"})

    def test_item_is_frozen_and_serialisable(self) -> None:
        """MemoryItem cannot be changed and dumps to JSON with an ISO time."""
        item = MemoryItem(id="a", content="c", metadata={"k": 1})
        with pytest.raises(ValidationError):
            item.content = "other"  # type: ignore[misc]
        assert json.loads(json.dumps(item.to_dict()))["created_at"].endswith(("Z", "+00:00"))

    def test_format_memories(self) -> None:
        """Numbered lines with id, content and metadata; a clear line for no results."""
        items = [MemoryItem(id="a", content="likes tea", metadata={"t": 1}), MemoryItem(id="b", content="has a cat")]
        assert format_memories(items) == '1. [a] likes tea (metadata: {"t":1})\n2. [b] has a cat'
        assert format_memories([]) == "No relevant memories."


class TestProtocols:
    def test_stores_follow_the_protocols(self, store: Any) -> None:
        """The shipped stores are MemoryStore and AsyncMemoryStore by structure."""
        assert isinstance(store, MemoryStore) and isinstance(store, AsyncMemoryStore)


class TestService:
    def test_default_namespace_and_override(self, store: Any) -> None:
        """Calls use the service's namespace unless they name another."""
        alice = MemoryService(store, "alice")
        item = alice.add("alice likes climbing", metadata={"topic": "sport"})[0]
        assert item.namespace == "alice"
        assert [i.id for i in alice.search("climbing")] == [item.id]
        assert MemoryService(store, "bob").search("climbing") == []
        assert [i.id for i in MemoryService(store, "bob").search("climbing", namespace="alice")] == [item.id]
        alice.delete(item)
        assert alice.search("climbing") == []

    def test_limit_filters_and_format(self, store: Any) -> None:
        """default_limit applies when no limit is given; filters pass through; formatting is the store's."""
        service = MemoryService(store, default_limit=2)
        for i in range(4):
            service.add(f"bike ride number {i}", metadata={"i": i})
        assert len(service.search("bike ride")) == 2
        with pytest.raises(ValueError, match="limit"):
            service.search("bike ride", limit=0)
        assert [i.metadata for i in service.search("bike ride", filters={"i": 3})] == [{"i": 3}]
        assert service.format_retrieved(service.search("bike", limit=1)).startswith("1. [")

    def test_async_variants(self, store: Any) -> None:
        """aadd / asearch / adelete do what the sync calls do."""
        service = MemoryService(store, "u")

        async def scenario() -> None:
            item = (await service.aadd("async note about ferries"))[0]
            assert [i.id for i in await service.asearch("ferries")] == [item.id]
            await service.adelete(item.id)
            assert await service.asearch("ferries") == []

        asyncio.run(scenario())

    def test_async_falls_back_to_threads(self, store: Any) -> None:
        """A store with only sync methods still serves the async calls."""
        class SyncOnly:
            def __init__(self, inner: Any) -> None:
                self.record, self.retrieve, self.delete = inner.record, inner.retrieve, inner.delete
                self.format_retrieved = inner.format_retrieved

        service = MemoryService(SyncOnly(store))
        assert asyncio.run(service.aadd("thread fallback works"))[0].content == "thread fallback works"
        assert len(asyncio.run(service.asearch("thread fallback"))) == 1

    def test_not_a_store(self) -> None:
        """An object without the store methods is refused, naming the missing one."""
        with pytest.raises(TypeError, match="record"):
            MemoryService(object())


class TestTools:
    def test_definitions_are_openai_tools(self, store: Any) -> None:
        """Both tools come as OpenAI function definitions with strict JSON schemas; no namespace parameter."""
        tools = create_memory_tools(store, namespace="u1")
        assert tools.names == ["memory_add", "memory_search"]
        for definition in tools.definitions:
            assert definition["type"] == "function"
            fn = definition["function"]
            assert set(fn) == {"name", "description", "parameters"}
            assert fn["parameters"]["type"] == "object" and fn["parameters"]["additionalProperties"] is False
            assert "namespace" not in fn["parameters"]["properties"]
        json.dumps(tools.definitions)

    def test_add_then_search_with_model_arguments(self, store: Any) -> None:
        """Arguments as the model sends them (a JSON string) add and find a memory in the bound namespace."""
        tools = create_memory_tools(store, namespace="u1")
        added = asyncio.run(tools.run("memory_add", json.dumps({"content": "the gate code is 4711", "metadata": {"place": "home"}})))
        assert added.startswith("Stored memory ")
        found = asyncio.run(tools.run("memory_search", '{"query": "what is the gate code?", "limit": 3}'))
        assert found.startswith("1. [") and "4711" in found and '"place":"home"' in found
        assert asyncio.run(create_memory_tools(store, namespace="u2").run("memory_search", {"query": "gate code"})) == \
            "No relevant memories."

    @pytest.mark.parametrize(("name", "arguments", "expected"), [
        ("memory_add", "{not json", "not valid JSON"),
        ("memory_add", "[1, 2]", "must be a JSON object"),
        ("memory_add", {}, "content"),
        ("memory_add", {"content": "   "}, "blank"),
        ("memory_add", {"content": "x", "namespace": "other-user"}, "namespace"),
        ("memory_add", {"content": "x", "metadata": {"k": {"nested": 1}}}, "metadata"),
        ("memory_search", {"query": ""}, "query"),
        ("memory_search", {"query": "x", "limit": 0}, "limit"),
        ("memory_search", None, "query"),
    ])
    def test_bad_arguments_come_back_as_error_text(self, store: Any, name: str, arguments: Any, expected: str) -> None:
        """Arguments the model got wrong give an 'error: ...' result naming the problem, and store nothing."""
        tools = create_memory_tools(store)
        out = asyncio.run(tools.run(name, arguments))
        assert out.startswith(f"error: {name}") and expected in out
        assert store.count() == 0

    def test_limit_is_capped(self, store: Any) -> None:
        """A model asking for more than max_limit gets max_limit results."""
        tools = create_memory_tools(store, max_limit=2)
        for i in range(4):
            asyncio.run(tools.run("memory_add", {"content": f"tram line {i}"}))
        out = asyncio.run(tools.run("memory_search", {"query": "tram line", "limit": 50}))
        assert out.count("\n") == 1

    def test_unknown_tool_raises(self, store: Any) -> None:
        """Running a name that is not a memory tool is a programming error: KeyError naming the tools."""
        with pytest.raises(KeyError, match="memory_add, memory_search"):
            asyncio.run(create_memory_tools(store).run("memory_delete", {}))

    def test_service_keeps_its_namespace(self, store: Any) -> None:
        """create_memory_tools over a service refuses a different namespace instead of ignoring it."""
        service = MemoryService(store, "alice")
        assert create_memory_tools(service).service is service
        assert service.as_tools().names == ["memory_add", "memory_search"]
        with pytest.raises(ValueError, match="alice"):
            create_memory_tools(service, namespace="bob")


class TestPipelineSlot:
    @pytest.fixture
    def memory_host(self) -> Any:
        import ctxcore_counters.plugin
        import ctxcore_memory.plugin

        return fresh_host(("ctxcore-memory", ctxcore_memory.plugin), ("ctxcore-counters", ctxcore_counters.plugin))

    def test_yaml_memory_slot_creates_the_store(self, memory_host: Any, tmp_path: Path) -> None:
        """memory: {type: sqlite, path: ...} in a pipeline gives Pipeline.memory, a working store."""
        db = tmp_path / "m.db"
        p = Pipeline.from_string(f"version: 1\nmemory: {{type: sqlite, path: '{db}'}}\n", host=memory_host)
        p.memory.record("configured from YAML")
        assert db.exists() and p.memory.retrieve("YAML")[0].content == "configured from YAML"

    def test_yaml_json_store_options(self, memory_host: Any, tmp_path: Path) -> None:
        """The json store takes path and lock_timeout; unknown keys are reported with the allowed ones."""
        p = Pipeline.from_string(f"version: 1\nmemory: {{type: json, path: '{tmp_path / 'm.json'}', lock_timeout: 2}}\n",
                                 host=memory_host)
        assert p.memory.lock_timeout == 2
        with pytest.raises(Exception, match="did you mean 'path'"):
            Pipeline.from_string("version: 1\nmemory: {type: json, pth: x.json}\n", host=memory_host)
