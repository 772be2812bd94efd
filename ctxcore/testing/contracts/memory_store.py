"""``MemoryStoreContract``: the checks every long-term memory store must pass.

Subclass it in a test module, name the subclass ``Test...`` and implement
:meth:`MemoryStoreContract.make_store`; pytest collects every check::

    from ctxcore.testing.contracts.memory_store import MemoryStoreContract

    class TestMyStore(MemoryStoreContract):
        def make_store(self, path):
            return MyStore(path / "memory.db")

``make_store(path)`` gets a fresh empty directory per test and must return a
store keeping its data under it; calling it again with the same directory
must open the same data (set ``persistent = False`` for a store that cannot).
Class attributes declare what a backend does not offer: ``supports_ids``
(``record(..., id=)`` replaces that memory) and ``typed_filters`` (a filter on
``1`` does not match ``"1"`` or ``True``). The suite is plain pytest.
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from ctxcore.kit.memory import DEFAULT_NAMESPACE, MemoryItem
from ctxcore.model.messages import human
from ctxcore.testing.contracts.base import Contract

__all__ = ["MemoryStoreContract"]

_FACTS = [
    "The user's favourite editor is Helix with the gruvbox theme.",
    "Deployments to production happen on Tuesdays after the standup.",
    "The staging database is PostgreSQL 16 on host db-staging.",
    "Alice prefers answers in German when the topic is legal.",
    "The CI pipeline caches wheels under /var/cache/pip.",
]


def _refused_or(call: Any) -> Any:
    """``call()``, or ``None`` when it raised ValueError (a backend may refuse odd filter keys)."""
    try:
        return call()
    except ValueError:
        return None


class MemoryStoreContract(Contract):
    """Checks every memory store must pass. Subclasses implement :meth:`make_store`."""

    __contract__ = True

    persistent: bool = True
    supports_ids: bool = True
    typed_filters: bool = True

    def make_store(self, path: Path) -> Any:  # pragma: no cover - subclasses implement
        raise NotImplementedError

    # ---------------------------------------------------------------- helpers
    def _store(self, tmp_path: Path) -> Any:
        return self.make_store(tmp_path)

    def _fill(self, store: Any, namespace: str | None = None) -> list[MemoryItem]:
        return [item for fact in _FACTS for item in store.record(fact, namespace=namespace)]

    # ------------------------------------------------------------------ record
    def test_record_returns_items(self, tmp_path: Path) -> None:
        """record returns the stored MemoryItem: its text, namespace, an id and an aware created_at."""
        items = self._store(tmp_path).record("Bob's birthday is on 3 March.", namespace="u1")
        assert len(items) == 1
        item = items[0]
        assert isinstance(item, MemoryItem)
        assert item.content == "Bob's birthday is on 3 March."
        assert item.namespace == "u1" and item.id
        assert isinstance(item.created_at, datetime) and item.created_at.tzinfo is not None

    def test_record_messages(self, tmp_path: Path) -> None:
        """A list of chat messages (dicts or Messages) is kept as one memory holding every text."""
        store = self._store(tmp_path)
        items = store.record([{"role": "user", "content": "I moved to Lisbon"}, human("and I work remotely now")])
        assert len(items) == 1
        assert "Lisbon" in items[0].content and "remotely" in items[0].content

    def test_record_rejects_blank_and_unstorable_text(self, tmp_path: Path) -> None:
        """Blank text and lone surrogates are refused with ValueError, and nothing is stored."""
        store = self._store(tmp_path)
        for bad in ("", "   \n", "half a pair \ud800 here"):
            with pytest.raises(ValueError):
                store.record(bad)
        assert store.retrieve("half pair here", limit=5) == []

    def test_record_rejects_bad_metadata(self, tmp_path: Path) -> None:
        """Metadata that is not a mapping of JSON values under string keys is refused."""
        store = self._store(tmp_path)
        for bad in ({"when": object()}, {1: "x"}, {"x": float("nan")}, ["not", "a", "mapping"]):
            with pytest.raises(ValueError):
                store.record("metadata test", metadata=bad)

    def test_too_deep_metadata_is_refused_with_value_error(self, tmp_path: Path) -> None:
        """Metadata nested past Python's recursion limit raises ValueError (not RecursionError); nothing stored."""
        store = self._store(tmp_path)
        deep: Any = []
        for _ in range(100_000):
            deep = [deep]
        with pytest.raises(ValueError, match="deep"):
            store.record("deep metadata memory", metadata={"deep": deep})
        with pytest.raises(ValueError, match="deep"):
            store.retrieve("deep metadata memory", filters={"deep": deep})
        assert store.retrieve("deep metadata memory", limit=5) == []

    def test_unicode_round_trips(self, tmp_path: Path) -> None:
        """Non-ASCII and non-BMP text and metadata come back exactly."""
        store = self._store(tmp_path)
        text = "Grüße aus Zürich 🦀 — 東京 café"
        store.record(text, metadata={"emoji": "🦀", "ort": "Zürich"})
        found = store.retrieve("Zürich", limit=5)
        assert [i.content for i in found] == [text]
        assert found[0].metadata == {"emoji": "🦀", "ort": "Zürich"}

    def test_metadata_round_trips(self, tmp_path: Path) -> None:
        """Nested metadata with numbers, booleans and null comes back equal."""
        store = self._store(tmp_path)
        metadata = {"topic": "travel", "stars": 4, "ratio": 0.5, "ok": True, "none": None, "tags": ["a", "b"], "n": {"k": 1}}
        store.record("We booked a hotel in Porto", metadata=metadata)
        assert store.retrieve("hotel Porto", limit=1)[0].metadata == metadata

    def test_returned_items_are_copies(self, tmp_path: Path) -> None:
        """Changing nested metadata of a returned item does not change what the store holds."""
        store = self._store(tmp_path)
        store.record("tagged memory", metadata={"tags": ["a"]})[0].metadata["tags"].append("recorded")
        store.retrieve("tagged", limit=1)[0].metadata["tags"].append("retrieved")
        assert store.retrieve("tagged", limit=1)[0].metadata == {"tags": ["a"]}

    # ---------------------------------------------------------------- retrieve
    def test_retrieve_finds_the_relevant_memory_first(self, tmp_path: Path) -> None:
        """A query naming one memory's distinctive words ranks that memory first."""
        store = self._store(tmp_path)
        self._fill(store)
        found = store.retrieve("which database runs on staging?", limit=3)
        assert found and "db-staging" in found[0].content

    def test_retrieve_returns_scored_items_best_first(self, tmp_path: Path) -> None:
        """Retrieved items carry a score and come in non-increasing score order."""
        store = self._store(tmp_path)
        self._fill(store)
        found = store.retrieve("production deployments on Tuesdays database", limit=5)
        assert found and all(isinstance(i, MemoryItem) and i.score is not None for i in found)
        scores = [i.score for i in found]
        assert scores == sorted(scores, reverse=True)

    def test_limit_is_respected(self, tmp_path: Path) -> None:
        """Never more than ``limit`` items, and exactly ``limit`` when more match."""
        store = self._store(tmp_path)
        for i in range(7):
            store.record(f"note number {i} about kubernetes upgrades")
        assert len(store.retrieve("kubernetes upgrades", limit=3)) == 3
        assert len(store.retrieve("kubernetes upgrades", limit=1)) == 1
        assert len(store.retrieve("kubernetes upgrades")) == 5

    def test_bad_limit_and_query_are_refused(self, tmp_path: Path) -> None:
        """A limit that is not a positive integer, or a blank query, raises ValueError."""
        store = self._store(tmp_path)
        store.record("something to find")
        for limit in (0, -1, True):
            with pytest.raises(ValueError):
                store.retrieve("something", limit=limit)
        for query in ("", "   "):
            with pytest.raises(ValueError):
                store.retrieve(query)

    def test_no_match_is_empty(self, tmp_path: Path) -> None:
        """A query sharing no word with any memory returns an empty list."""
        store = self._store(tmp_path)
        self._fill(store)
        assert store.retrieve("xylophone zebra quokka", limit=5) == []

    def test_query_syntax_is_plain_text(self, tmp_path: Path) -> None:
        """Operators and quotes of full-text query languages in a query are words, never errors."""
        store = self._store(tmp_path)
        self._fill(store)
        for query in ('"unbalanced', "NOT OR AND", "helix*", "(gruvbox", "a:b NEAR(x y)", "-- ; DROP TABLE", "'quoted' & | !"):
            assert isinstance(store.retrieve(query, limit=3), list)
        assert "Helix" in store.retrieve('"Helix', limit=1)[0].content

    # -------------------------------------------------------------- namespaces
    def test_namespaces_isolate(self, tmp_path: Path) -> None:
        """What one namespace records, another never retrieves."""
        store = self._store(tmp_path)
        store.record("alice keeps her passport in the blue drawer", namespace="alice")
        store.record("bob keeps his passport at the office", namespace="bob")
        alice = store.retrieve("where is the passport", limit=5, namespace="alice")
        assert [i.namespace for i in alice] == ["alice"] and "blue drawer" in alice[0].content
        assert store.retrieve("blue drawer", limit=5, namespace="carol") == []
        assert all("blue" not in i.content for i in store.retrieve("blue drawer", limit=5, namespace="bob"))

    def test_none_namespace_is_default(self, tmp_path: Path) -> None:
        """namespace=None reads and writes the 'default' namespace."""
        store = self._store(tmp_path)
        item = store.record("the default namespace holds this")[0]
        assert item.namespace == DEFAULT_NAMESPACE
        assert store.retrieve("default namespace", namespace=DEFAULT_NAMESPACE)[0].id == item.id

    def test_bad_namespace_is_refused(self, tmp_path: Path) -> None:
        """An empty or non-string namespace raises ValueError."""
        store = self._store(tmp_path)
        for bad in ("", 42, "x" * 300):
            with pytest.raises(ValueError):
                store.record("x", namespace=bad)

    def test_tuple_namespace_is_its_joined_path(self, tmp_path: Path) -> None:
        """A tuple namespace ('user', '42') is the namespace 'user/42', isolated from ('user', '43'), on every call."""
        store = self._store(tmp_path)
        item = store.record("the user in tuple namespace 42 likes green tea", namespace=("user", "42"))[0]
        assert item.namespace == "user/42"
        assert [i.id for i in store.retrieve("green tea", limit=5, namespace=("user", "42"))] == [item.id]
        assert [i.id for i in store.retrieve("green tea", limit=5, namespace="user/42")] == [item.id]
        assert store.retrieve("green tea", limit=5, namespace=("user", "43")) == []
        store.delete(item, namespace=("user", "42"))
        assert store.retrieve("green tea", limit=5, namespace="user/42") == []

    def test_bad_tuple_namespace_is_refused(self, tmp_path: Path) -> None:
        """An empty tuple, or a segment that is empty, not a string or holds '/', raises ValueError."""
        store = self._store(tmp_path)
        for bad in ((), ("user", ""), ("user", 42), ("a/b", "c")):
            with pytest.raises(ValueError):
                store.record("x", namespace=bad)

    # ------------------------------------------------------------------ delete
    def test_delete_by_item_and_by_id(self, tmp_path: Path) -> None:
        """delete accepts the MemoryItem or its id; the memory is then never retrieved."""
        store = self._store(tmp_path)
        first = store.record("the wifi password is on the fridge")[0]
        second = store.record("the spare key is under the wifi router")[0]
        store.delete(first)
        store.delete(second.id)
        assert store.retrieve("wifi", limit=5) == []

    def test_delete_respects_namespace(self, tmp_path: Path) -> None:
        """Deleting in another namespace leaves the memory in place."""
        store = self._store(tmp_path)
        item = store.record("carol's train leaves at nine", namespace="carol")[0]
        store.delete(item.id, namespace="mallory")
        assert [i.id for i in store.retrieve("train", namespace="carol")] == [item.id]

    def test_delete_unknown_is_a_no_op(self, tmp_path: Path) -> None:
        """Deleting an id that does not exist raises nothing and changes nothing."""
        store = self._store(tmp_path)
        item = store.record("keep me around")[0]
        store.delete("no-such-id")
        store.delete(item.id)
        store.delete(item.id)
        assert store.retrieve("keep me", limit=5) == []

    def test_lone_surrogate_id_is_refused_and_deleting_it_is_a_no_op(self, tmp_path: Path) -> None:
        """An id with a lone surrogate cannot be stored: record refuses it naming the id, nothing is
        written, and delete treats it like any unknown id (every backend alike)."""
        store = self._store(tmp_path)
        store.record("keep me around")
        with pytest.raises(ValueError, match="id"):
            store.record("surrogate id memory", id="a\ud800")
        store.delete("a\ud800")
        store.delete({"id": "\udfff"})
        assert [i.content for i in store.retrieve("keep around surrogate memory", limit=5)] == ["keep me around"]

    # ----------------------------------------------------------------- filters
    def test_filters_match_metadata(self, tmp_path: Path) -> None:
        """filters keep only memories whose metadata has every given key with the given value."""
        store = self._store(tmp_path)
        store.record("lunch with the design team", metadata={"kind": "event", "team": "design"})
        store.record("lunch order: falafel wrap", metadata={"kind": "preference"})
        store.record("lunch budget is 15 euro", metadata={"kind": "event", "team": "finance"})
        assert {i.content for i in store.retrieve("lunch", filters={"kind": "event"})} == {
            "lunch with the design team", "lunch budget is 15 euro"}
        assert [i.content for i in store.retrieve("lunch", filters={"kind": "event", "team": "design"})] == [
            "lunch with the design team"]
        assert store.retrieve("lunch", filters={"kind": "nothing"}) == []
        assert store.retrieve("lunch", filters={"missing-key": "event"}) == []

    def test_filters_are_typed(self, tmp_path: Path) -> None:
        """A filter on 1 matches the number 1, not the string '1' nor true."""
        if not self.typed_filters:
            pytest.skip("backend compares filter values loosely")
        store = self._store(tmp_path)
        store.record("priority number", metadata={"p": 1})
        store.record("priority string", metadata={"p": "1"})
        store.record("priority bool", metadata={"p": True})
        assert [i.content for i in store.retrieve("priority", filters={"p": 1})] == ["priority number"]
        assert [i.content for i in store.retrieve("priority", filters={"p": "1"})] == ["priority string"]
        assert [i.content for i in store.retrieve("priority", filters={"p": True})] == ["priority bool"]

    def test_injection_in_filters_is_data(self, tmp_path: Path) -> None:
        """Quotes and SQL in filter values match literally; in keys they match literally or raise ValueError."""
        store = self._store(tmp_path)
        key, value = "k' OR '1'='1", "v\"); DROP TABLE memories; --"
        target = store.record("injection target memory", metadata={key: value, "plain": value})[0]
        store.record("innocent memory about injection", metadata={"k": "v", "plain": "v"})
        assert [i.id for i in store.retrieve("injection memory", filters={"plain": value})] == [target.id]
        for v in ("x", "v' OR 1=1 --", "' OR ''='", "v\x00"):
            assert store.retrieve("injection memory", filters={"plain": v}) == []
        exact = _refused_or(lambda: store.retrieve("injection memory", filters={key: value}))
        assert exact is None or [i.id for i in exact] == [target.id]
        for k in ("k' OR 1=1 --", "plain' OR '1'='1", "k\x00", "$.k", "plain\"", "k; DROP TABLE memories"):
            assert _refused_or(lambda k=k: store.retrieve("injection memory", filters={k: "v"})) in (None, [])
        assert len(store.retrieve("injection memory", limit=5)) == 2

    # --------------------------------------------------------------- ids, reopen
    def test_record_with_id_replaces(self, tmp_path: Path) -> None:
        """Recording an existing id in a namespace replaces that memory (one copy, new text)."""
        store = self._store(tmp_path)
        if not self.supports_ids:
            with pytest.raises(ValueError):
                store.record("explicit id", id="fav-color")
            return
        store.record("favourite colour is blue", id="fav-color", namespace="u")
        store.record("favourite colour is green", id="fav-color", namespace="u")
        store.record("favourite colour is red", id="fav-color", namespace="v")
        found = store.retrieve("favourite colour", limit=5, namespace="u")
        assert [(i.id, i.content) for i in found] == [("fav-color", "favourite colour is green")]

    def test_reopen_sees_the_data(self, tmp_path: Path) -> None:
        """A store opened again on the same path finds what the first one recorded and deleted."""
        if not self.persistent:
            pytest.skip("backend does not persist")
        first = self._store(tmp_path)
        kept = first.record("the boiler service is due in October", namespace="house")[0]
        gone = first.record("the boiler warranty ended", namespace="house")[0]
        first.delete(gone, namespace="house")
        second = self.make_store(tmp_path)
        assert [i.id for i in second.retrieve("boiler", limit=5, namespace="house")] == [kept.id]

    # ------------------------------------------------------------ format, async
    def test_format_retrieved(self, tmp_path: Path) -> None:
        """format_retrieved renders every item's text; no items still gives a string."""
        store = self._store(tmp_path)
        self._fill(store)
        found = store.retrieve("Helix gruvbox", limit=2)
        text = store.format_retrieved(found)
        assert isinstance(text, str) and all(i.content in text for i in found)
        assert isinstance(store.format_retrieved([]), str)

    def test_async_matches_sync(self, tmp_path: Path) -> None:
        """arecord / aretrieve / adelete, when present, behave like the sync calls."""
        store = self._store(tmp_path)
        if not all(hasattr(store, m) for m in ("arecord", "aretrieve", "adelete")):
            pytest.skip("store has no async variants")

        async def scenario() -> None:
            item = (await store.arecord("async memories work too", namespace="a"))[0]
            found = await store.aretrieve("async memories", limit=2, namespace="a")
            assert [i.id for i in found] == [i.id for i in store.retrieve("async memories", limit=2, namespace="a")] == [item.id]
            await store.adelete(item, namespace="a")
            assert await store.aretrieve("async memories", namespace="a") == []

        asyncio.run(scenario())
