"""The count cache: each message is tokenized once per counter, across builds."""

from __future__ import annotations

import collections
from typing import Any

from ctxcore_counters import ApproximateCounter, TiktokenCounter
from ctxcore_filters import TokenBudget
from ctxcore_providers import History
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxcore.engine.budget import CachedCounter, CountCache, counter_identity
from ctxcore.engine.builder import ContextBuilder, Step
from ctxcore.model.messages import ai, human


def _conversation(n: int) -> list[dict[str, Any]]:
    """``n`` distinct OpenAI-style messages, alternating user and assistant."""
    return [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i}: the build must not count me twice ({i * 7919})"}
        for i in range(n)
    ]


class RecordingTiktoken(TiktokenCounter):
    """A real tiktoken counter whose encoder records every text it tokenizes."""

    def __init__(self, encoding: str) -> None:
        super().__init__(encoding)
        self.encoded: collections.Counter[str] = collections.Counter()
        real = self._encode

        def encode(text: str) -> list[int]:
            self.encoded[text] += 1
            return real(text)

        self._encode = encode


class TestCountedOnce:
    def test_2000_messages_built_twice_are_tokenized_once(self) -> None:
        """Building the same 2,000-message conversation twice tokenizes each message's content exactly once."""
        counter = RecordingTiktoken("o200k_base")
        builder = ContextBuilder([Step("chat", History())], [Step("budget", TokenBudget(max_tokens=10_000_000))], counter)
        state = {"messages": _conversation(2000)}
        first = builder.build(state)
        calls_after_first = sum(counter.encoded.values())
        second = builder.build(state)
        assert sum(counter.encoded.values()) == calls_after_first  # the second build encoded nothing
        assert all(counter.encoded[m["content"]] == 1 for m in state["messages"])
        assert (first.report.cache_misses, second.report.cache_misses) == (2000, 0)
        assert second.report.cache_hits >= 2000
        assert first.report.total_tokens == second.report.total_tokens == counter.count_messages(
            [human(m["content"]) if m["role"] == "user" else ai(m["content"]) for m in state["messages"]]
        )

    def test_report_shows_hits_and_misses(self) -> None:
        """A build report carries this build's cache hits and misses in its dict form."""
        builder = ContextBuilder([History()], [], ApproximateCounter())
        state = {"messages": _conversation(10)}
        builder.build(state)
        report = builder.build({"messages": _conversation(12)}).report.to_dict()
        assert report["cache"] == {"hits": 10, "misses": 2}

    def test_shared_cache_serves_two_builders_and_keeps_counters_apart(self) -> None:
        """One CountCache shared by builders reuses counts of the same counter and never mixes tokenizers."""
        shared = CountCache()
        state = {"messages": _conversation(50)}
        a = ContextBuilder([History()], [], CachedCounter(RecordingTiktoken("cl100k_base"), cache=shared))
        b_counter = RecordingTiktoken("cl100k_base")
        b = ContextBuilder([History()], [], CachedCounter(b_counter, cache=shared))
        a.build(state)
        assert b.build(state).report.cache_misses == 0 and not b_counter.encoded
        o200k = CachedCounter(TiktokenCounter("o200k_base"), cache=shared)
        assert o200k.count_message(human("预算取决于计数")) == TiktokenCounter("o200k_base").count_message(human("预算取决于计数"))
        assert counter_identity(TiktokenCounter("o200k_base")) != counter_identity(TiktokenCounter("cl100k_base"))

    def test_tool_schema_counts_are_cached(self) -> None:
        """The same tool list is counted once per wrapper."""
        calls = []

        class Tools(ApproximateCounter):
            def count_tools(self, tools):  # type: ignore[no-untyped-def]
                calls.append(1)
                return super().count_tools(tools)

        cached = CachedCounter(Tools())
        tools = [{"type": "function", "function": {"name": "f", "description": "d", "parameters": {"properties": {}}}}]
        assert cached.count_tools(tools) == cached.count_tools(tools) > 0
        assert len(calls) == 1


@settings(max_examples=50, deadline=None)
@given(
    texts=st.lists(st.text(max_size=30), min_size=1, max_size=60),
    bound=st.integers(min_value=1, max_value=20),
)
def test_lru_is_bounded_and_exact(texts: list[str], bound: int) -> None:
    """Whatever the traffic, the cache holds at most its bound and returns the counter's own counts."""
    direct = ApproximateCounter("o200k")
    cached = CachedCounter(ApproximateCounter("o200k"), max_entries=bound)
    for text in texts + texts[::-1]:
        message = human(text)
        assert cached.count_message(message) == direct.count_message(message)
        assert len(cached.cache) <= bound
    assert cached.hits + cached.misses == 2 * len(texts)


def _tool_message(draw_calls: list[tuple[str, str, str]], content: str | None) -> Any:
    from ctxcore.model.messages import Message, ToolCall

    return Message(role="assistant", content=content, tool_calls=tuple(ToolCall(id=i, name=n, arguments=a) for i, n, a in draw_calls))


@settings(max_examples=200, deadline=None)
@given(
    a=st.tuples(st.sampled_from(["user", "assistant"]), st.one_of(st.none(), st.text(max_size=12)),
                st.lists(st.tuples(st.text(min_size=1, max_size=3), st.text(min_size=1, max_size=3), st.text(max_size=4)), max_size=2)),
    b=st.tuples(st.sampled_from(["user", "assistant"]), st.one_of(st.none(), st.text(max_size=12)),
                st.lists(st.tuples(st.text(min_size=1, max_size=3), st.text(min_size=1, max_size=3), st.text(max_size=4)), max_size=2)),
)
def test_count_key_equal_exactly_when_the_model_reads_the_same(a: tuple[str, str | None, list[Any]], b: tuple[str, str | None, list[Any]]) -> None:
    """Two messages share a cached count exactly when they share a fingerprint (what the model reads)."""
    from ctxcore.engine.budget import count_key
    from ctxcore.model.messages import Message

    def make(spec: tuple[str, str | None, list[Any]]) -> Message:
        role, content, calls = spec
        if role == "assistant" and calls:
            return _tool_message(calls, content)
        return Message(role=role, content=content if content is not None else ("" if role == "user" else None))

    x, y = make(a), make(b)
    assert (count_key(x) == count_key(y)) == (x.fingerprint == y.fingerprint)


def test_counting_text_messages_never_digests_them() -> None:
    """The cache key of a text message is its strings (hash cached by Python), not a digest of the text:
    a full count of fresh messages costs the tokenizer, not the tokenizer plus a hash pass."""
    from ctxcore.engine.budget import count_key

    messages = [human(f"question {i} " * 50) for i in range(50)] + [ai("answer")]
    cached = CachedCounter(TiktokenCounter("cl100k_base"))
    cached.count_messages(messages)
    assert all("fingerprint" not in m.__dict__ for m in messages)
    again = [human(f"question {i} " * 50) for i in range(50)]  # new objects, same content: served from the cache
    before = cached.misses
    cached.count_messages(again)
    assert cached.misses == before
    changed = messages[0].model_copy(update={"content": "something else"})
    assert count_key(changed) != count_key(messages[0])


def test_count_each_is_count_message_per_message() -> None:
    """count_each gives each message's count_message, in order, and counts the memo answers as hits."""
    counter = CachedCounter(ApproximateCounter())
    seen, new = human("hello there"), ai("a longer answer, with more words in it")
    first = counter.count_message(seen)
    assert (counter.hits, counter.misses) == (0, 1)
    assert counter.count_each([seen, new, seen]) == [first, counter.count_message(new), first]
    assert (counter.hits, counter.misses) == (3, 2)
