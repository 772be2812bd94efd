"""Tests for memory_file, memory_recall (with a real in-test MemoryStore), recent_memory and archived_summary."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import ctxcore_counters.plugin as counters_plugin
import ctxcore_providers.plugin as providers_plugin
import pytest
from ctxcore_providers import ArchivedSummary, MemoryFile, MemoryRecall, RecentMemory
from ctxcore_providers.memory import (
    MEMORY_TEMPLATE,
    ArchivedSummaryConfig,
    MemoryFileConfig,
    MemoryRecallConfig,
    RecentMemoryConfig,
)

from ctxcore import ConfigError, MemoryStore, Pipeline, hookimpl
from ctxcore.testing import fresh_host
from ctxcore.testing.contracts import ProviderContract


class WordStore:
    """A small real memory store: items ranked by shared words with the query."""

    def __init__(self) -> None:
        self.items: dict[str, list[str]] = {}
        self.queries: list[tuple[str, int, str | None]] = []

    def record(self, inputs: Any, namespace: str | None = None, **kw: Any) -> Any:
        self.items.setdefault(namespace or "default", []).append(str(inputs))

    def retrieve(self, query: str, limit: int = 5, namespace: str | None = None, **kw: Any) -> list[Any]:
        self.queries.append((query, limit, namespace))
        words = set(query.lower().split())
        scored = [(len(words & set(i.lower().split())), i) for i in self.items.get(namespace or "default", [])]
        return [i for score, i in sorted(scored, key=lambda s: -s[0]) if score][:limit]

    def format_retrieved(self, items: Sequence[Any]) -> str:
        return "\n".join(f"- {i}" for i in items)

    def delete(self, item: Any, namespace: str | None = None) -> None:
        self.items.get(namespace or "default", []).remove(item)


STORE = WordStore()


class MemoryPlugin:
    @hookimpl
    def register_memory_stores(self, register):
        register("words", lambda cfg: STORE)


class TestMemoryFile:
    def test_template_is_skipped_custom_is_shown(self, tmp_path: Path) -> None:
        """MEMORY.md equal to the template gives nothing; customised, it is rendered under its headings."""
        (tmp_path / "memory").mkdir()
        f = tmp_path / "memory" / "MEMORY.md"
        f.write_text(MEMORY_TEMPLATE)
        p = MemoryFile(MemoryFileConfig(workspace=str(tmp_path), trust="trusted"))
        assert p.get_messages({}, {}) == ()
        f.write_text("- prefers tabs\n")
        [m] = p.get_messages({}, {})
        assert m.text == "# Memory\n\n## Long-term Memory\n- prefers tabs" and m.role == "system"

    def test_untrusted_default_and_missing_file(self, tmp_path: Path) -> None:
        """Default trust is untrusted (user-role block); no file, no message."""
        p = MemoryFile(MemoryFileConfig(workspace=str(tmp_path)))
        assert p.get_messages({}, {}) == ()
        (tmp_path / "memory").mkdir()
        (tmp_path / "memory" / "MEMORY.md").write_text("fact")
        [m] = p.get_messages({}, {})
        assert (m.role, m.trust) == ("user", "untrusted")


class TestMemoryRecall:
    def test_store_protocol(self) -> None:
        """The in-test store satisfies the MemoryStore protocol."""
        assert isinstance(WordStore(), MemoryStore)

    def test_uses_the_pipelines_store(self) -> None:
        """memory_recall queries the pipeline's memory store with the current message; the block is untrusted."""
        STORE.items.clear()
        STORE.record("the user likes green tea")
        STORE.record("deploys happen on fridays")
        host = fresh_host(("providers", providers_plugin), ("counters", counters_plugin), ("mem", MemoryPlugin()))
        p = Pipeline.from_string("version: 1\nmemory: words\nproviders:\n  - {type: memory_recall, limit: 1}\n  - history\n", host=host)
        built = p.build({"messages": [{"role": "user", "content": "what tea do I like?"}]})
        recalled = built.messages[0]
        assert recalled.role == "user" and recalled.trust == "untrusted"
        assert recalled.text.endswith("# Recalled Memory\n\n- the user likes green tea")
        assert STORE.queries[-1] == ("what tea do I like?", 1, None)

    def test_input_key_and_namespace_from_runtime(self) -> None:
        """state['input'] is the query when present; runtime['memory_namespace'] selects the namespace."""
        store = WordStore()
        store.record("alice speaks french", namespace="alice")
        p = MemoryRecall(MemoryRecallConfig(store=store))
        [m] = p.get_messages({"input": "what does alice speak", "messages": []}, {"memory_namespace": "alice"})
        assert "alice speaks french" in m.text

    def test_no_store_is_a_clear_error(self) -> None:
        """A pipeline without memory: fails when it compiles (before any build), naming the fix."""
        host = fresh_host(("providers", providers_plugin), ("counters", counters_plugin))
        p = Pipeline.from_string("version: 1\nproviders: [memory_recall]\n", host=host)
        with pytest.raises(ConfigError, match="add a 'memory:' step"):
            p.build({"input": "hello"})
        with pytest.raises(ValueError, match="add a 'memory:' step"):  # outside a pipeline: at the build
            MemoryRecall(MemoryRecallConfig()).get_messages({"input": "hello"}, {})

    def test_nothing_without_query_or_hits(self) -> None:
        """No current message or no relevant item: no message."""
        p = MemoryRecall(MemoryRecallConfig(store=WordStore()))
        assert p.get_messages({}, {}) == () and p.get_messages({"input": "anything"}, {}) == ()

    def test_ttl_reuses_the_block_per_query_and_namespace(self) -> None:
        """With ttl_seconds the block for a (namespace, query) is reused until the TTL passes; without, every build asks."""
        store = WordStore()
        store.record("the user likes green tea")
        p = MemoryRecall(MemoryRecallConfig(store=store, ttl_seconds=120))
        now = [1000.0]
        p._clock = lambda: now[0]
        first = p.get_messages({"input": "which tea"}, {})
        store.record("the user also likes tea from Taiwan")
        now[0] += 119
        assert p.get_messages({"input": "which tea"}, {}) is first and len(store.queries) == 1
        assert p.get_messages({"input": "which tea"}, {"memory_namespace": "other"}) == () and len(store.queries) == 2
        now[0] += 1
        again = p.get_messages({"input": "which tea"}, {})
        assert again != first and "Taiwan" in again[0].text and len(store.queries) == 3
        plain = MemoryRecall(MemoryRecallConfig(store=store))
        plain.get_messages({"input": "which tea"}, {})
        plain.get_messages({"input": "which tea"}, {})
        assert len(store.queries) == 5

    def test_async_uses_aretrieve(self) -> None:
        """aget_messages awaits the store's aretrieve when it has one."""
        class AsyncStore(WordStore):
            async def aretrieve(self, query: str, limit: int = 5, namespace: str | None = None, **kw: Any) -> list[Any]:
                return ["async item"]

        [m] = asyncio.run(MemoryRecall(MemoryRecallConfig(store=AsyncStore())).aget_messages({"input": "q"}, {}))
        assert "- async item" in m.text


def write_log(path: Path, n: int, size: int = 10) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(json.dumps({"cursor": i, "timestamp": f"t{i}", "content": f"entry {i} " + "x" * size}) for i in range(1, n + 1)))


class TestRecentMemory:
    def test_entries_after_cursor(self, tmp_path: Path) -> None:
        """Only entries with a cursor above state['memory_cursor'] are shown."""
        write_log(tmp_path / "memory" / "history.jsonl", 5, size=0)
        [m] = RecentMemory(RecentMemoryConfig(workspace=str(tmp_path), trust="trusted")).get_messages({"memory_cursor": 3}, {})
        assert m.text == "# Recent History\n\n- [t4] entry 4\n- [t5] entry 5"

    def test_at_most_50_entries(self, tmp_path: Path) -> None:
        """At most the newest 50 entries."""
        write_log(tmp_path / "memory" / "history.jsonl", 80, size=0)
        [m] = RecentMemory(RecentMemoryConfig(workspace=str(tmp_path))).get_messages({}, {})
        assert m.text.count("- [t") == 50
        assert "entry 31" in m.text and "entry 30 " not in m.text

    def test_token_cap_cut_marker(self, tmp_path: Path) -> None:
        """Past 8000 estimated tokens the text is cut with '\\n... (truncated)'."""
        write_log(tmp_path / "memory" / "history.jsonl", 40, size=4000)
        [m] = RecentMemory(RecentMemoryConfig(workspace=str(tmp_path))).get_messages({}, {})
        assert m.text.endswith("\n... (truncated)")
        body = m.text.split("# Recent History\n\n", 1)[1].removesuffix("\n... (truncated)")
        assert (len(body) + 3) // 4 <= 8000

    def test_from_state_and_nothing_new(self, tmp_path: Path) -> None:
        """Entries may come from the state; nothing after the cursor means no message."""
        p = RecentMemory(RecentMemoryConfig(state_key="log", path=None))
        assert p.get_messages({"log": [{"cursor": 1, "content": "a"}], "memory_cursor": 1}, {}) == ()
        [m] = p.get_messages({"log": [{"cursor": 2, "content": "b"}], "memory_cursor": 1}, {})
        assert "- b" in m.text

    def test_bad_log_line_located(self, tmp_path: Path) -> None:
        """A malformed log line is reported with its file and line."""
        f = tmp_path / "memory" / "history.jsonl"
        f.parent.mkdir()
        f.write_text('{"cursor": 1, "content": "ok"}\nnot json\n')
        with pytest.raises(ValueError, match=r"history.jsonl:2: not a JSON object"):
            RecentMemory(RecentMemoryConfig(workspace=str(tmp_path))).get_messages({}, {})


class TestArchivedSummary:
    def test_format_and_absence(self) -> None:
        """'[Archived Context Summary]\\n\\n{summary}' from the state; nothing without one."""
        p = ArchivedSummary(ArchivedSummaryConfig(trust="trusted"))
        assert p.get_messages({}, {}) == ()
        [m] = p.get_messages({"archived_summary": "We fixed the parser."}, {})
        assert m.text == "[Archived Context Summary]\n\nWe fixed the parser."

    def test_untrusted_by_default(self) -> None:
        """A summary of history is untrusted unless configured otherwise."""
        [m] = ArchivedSummary(ArchivedSummaryConfig()).get_messages({"archived_summary": "s"}, {})
        assert m.trust == "untrusted" and m.role == "user"


class TestMemoryRecallContract(ProviderContract):
    """memory_recall passes the provider contract (async variant included)."""

    def make_provider(self) -> MemoryRecall:
        store = WordStore()
        store.record("hello world fact")
        return MemoryRecall(MemoryRecallConfig(store=store))


class TestArchivedSummaryContract(ProviderContract):
    """archived_summary passes the provider contract."""

    def make_provider(self) -> ArchivedSummary:
        return ArchivedSummary(ArchivedSummaryConfig())

    def sample_state(self) -> dict:
        return {"archived_summary": "Earlier: set up CI."}


class TestRecentMemoryContract(ProviderContract):
    """recent_memory passes the provider contract."""

    def make_provider(self) -> RecentMemory:
        return RecentMemory(RecentMemoryConfig(state_key="log", path=None))

    def sample_state(self) -> dict:
        return {"log": [{"cursor": 1, "content": "a"}]}


class TestMemoryFileContract(ProviderContract):
    """memory_file passes the provider contract."""

    def make_provider(self) -> MemoryFile:
        return MemoryFile(MemoryFileConfig(workspace=str(Path(__file__).parent)))


def test_yaml_namespace_as_segments() -> None:
    """memory_recall's namespace may be a list of segments in YAML; it reaches the store as a tuple."""
    store = WordStore()
    store.record("team notes on green tea", namespace=("team", "7"))
    config = MemoryRecallConfig.model_validate({"namespace": ["team", "7"], "store": store})
    assert config.namespace == ("team", "7")
    p = MemoryRecall(config)
    p.get_messages({"input": "green tea"}, {})
    assert store.queries[-1][2] == ("team", "7")
