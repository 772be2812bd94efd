"""StateMessageStore: coercion, retention, thread-safe appends, subscribers."""

from __future__ import annotations

import threading

import pytest

from ctxcore.model.messages import Message, ai, human, tool
from ctxcore.runtime.message_store import (
    LenientMessageCoercer,
    MaxCountRetention,
    MessageEvent,
    StateMessageStore,
    StrictMessageCoercer,
)


class TestCoercers:
    def test_strict_accepts_messages_and_valid_dicts(self) -> None:
        """Strict coercion passes Messages through and converts OpenAI dicts."""
        m = human("hi")
        assert StrictMessageCoercer()(m) is m
        assert StrictMessageCoercer()({"role": "assistant", "content": "yo"}).role == "assistant"

    @pytest.mark.parametrize("item, match", [
        ("just text", "cannot store a str"),
        ({"content": "no role"}, "invalid message dict: message has no 'role'"),
        ({"role": "tool", "content": "x"}, "tool_call_id"),
    ])
    def test_strict_refuses_with_reason(self, item, match) -> None:
        """Anything else raises a ValueError that says what is wrong."""
        with pytest.raises(ValueError, match=match):
            StrictMessageCoercer()(item)

    def test_lenient_makes_do(self) -> None:
        """Lenient coercion turns strings, loose dicts, pairs and objects into messages."""
        c = LenientMessageCoercer()
        assert (c("hi").role, c("hi").content) == ("user", "hi")
        assert c({"text": "loose"}).content == "loose"
        assert (c(("assistant", 42)).role, c(("assistant", 42)).content) == ("assistant", "42")
        assert c(3.5).content == "3.5"


class TestStore:
    def test_writes_messages_into_state(self) -> None:
        """Appends land in state[key] as Messages (what the history provider reads)."""
        state: dict = {}
        store = StateMessageStore(state)
        stored = store.append({"role": "user", "content": "hi"})
        assert state["messages"] == [stored] and isinstance(stored, Message) and len(store) == 1

    def test_existing_items_coerced_and_refusal_names_index(self) -> None:
        """Items already in the state are coerced; a bad one is reported with its index."""
        state = {"messages": [{"role": "user", "content": "a"}]}
        StateMessageStore(state)
        assert isinstance(state["messages"][0], Message)
        with pytest.raises(ValueError, match=r"state\['messages'\]\[1\]"):
            StateMessageStore({"messages": [human("ok"), 42]})

    def test_refused_append_stores_nothing(self) -> None:
        """A refused item leaves the store unchanged and notifies nobody."""
        store = StateMessageStore()
        seen: list[MessageEvent] = []
        store.subscribe(seen.append)
        with pytest.raises(ValueError):
            store.extend([human("ok"), object()])
        assert len(store) == 0 and seen == []

    def test_max_count_retention_keeps_newest_and_legal_start(self) -> None:
        """Retention keeps the newest N and never starts with a tool result whose call was cut."""
        store = StateMessageStore(retention=MaxCountRetention(3))
        store.extend([human("q"), ai(tool_calls=[{"id": "c", "name": "f", "arguments": {}}]), tool("r", tool_call_id="c"),
                      ai("a"), human("next")])
        assert [m.text for m in store.messages] == ["a", "next"]
        with pytest.raises(ValueError):
            MaxCountRetention(0)

    def test_subscribers_get_events_after_append(self) -> None:
        """Each append notifies subscribers with the stored message and its index; unsubscribe stops it."""
        store = StateMessageStore()
        seen: list[tuple[str, str, int, int]] = []
        unsubscribe = store.subscribe(lambda e: seen.append((e.kind, e.message.text, e.index, len(store))))
        store.append({"role": "user", "content": "one"})
        store.append(human("two"))
        unsubscribe()
        store.append(human("three"))
        assert seen == [("append", "one", 0, 1), ("append", "two", 1, 2)]

    def test_thread_safe_appends(self) -> None:
        """Concurrent appends lose nothing and every event is delivered."""
        store = StateMessageStore()
        events: list[MessageEvent] = []
        lock = threading.Lock()

        def record(e: MessageEvent) -> None:
            with lock:
                events.append(e)

        store.subscribe(record)

        def worker(n: int) -> None:
            for i in range(200):
                store.append(human(f"{n}-{i}"))

        threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(store) == 800 and len(events) == 800
        assert len({m.text for m in store.messages}) == 800

    def test_not_a_list_is_an_error(self) -> None:
        """A state key holding something else is refused at construction."""
        with pytest.raises(ValueError, match="must be a list"):
            StateMessageStore({"messages": "nope"})
