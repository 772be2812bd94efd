"""from_langchain / to_langchain: a lossless round trip, and ctxcore slots filled with what the model reads."""

from __future__ import annotations

import os

import pytest
from ctxcore_langchain import ConversionCache, from_langchain, to_langchain
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, AIMessageChunk, ChatMessage, HumanMessage, SystemMessage, ToolMessage

from ctxcore import ImageBlock, Message, TextBlock

settings.register_profile("quick", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("thorough", max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
PROFILE = "thorough" if os.environ.get("CTXCORE_THOROUGH") == "1" else "quick"

text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=30)
ids = st.none() | st.text("abcdef0123456789-", min_size=1, max_size=12)
json_value = st.recursive(st.none() | st.booleans() | st.integers(-10**6, 10**6) | text,
                          lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
                          max_leaves=6)
meta = st.dictionaries(st.text("abcxyz_", min_size=1, max_size=6), json_value, max_size=3)
blocks = st.lists(st.one_of(
    st.builds(lambda t: {"type": "text", "text": t}, text),
    st.builds(lambda t, i: {"type": "text", "text": t, "id": i}, text, text),
    st.builds(lambda u: {"type": "image_url", "image_url": {"url": f"https://x.test/{u}.png"}}, st.text("abc", max_size=4)),
    st.builds(lambda u, d: {"type": "image_url", "image_url": {"url": f"https://x.test/{u}.png", "detail": d}},
              st.text("abc", max_size=4), st.sampled_from(["low", "high", "auto"])),
    st.builds(lambda u: {"type": "image", "url": f"https://x.test/{u}.png"}, st.text("abc", max_size=4)),
    st.builds(lambda d: {"type": "image", "base64": d, "mime_type": "image/png"}, st.text("QUJD", min_size=1, max_size=8)),
    st.builds(lambda r: {"type": "reasoning", "reasoning": r}, text),
    st.builds(lambda r, s: {"type": "thinking", "thinking": r, "signature": s}, text, text),
    text,
), max_size=4)
content = text | blocks
calls = st.lists(st.builds(lambda n, a, i: {"name": n, "args": a, "id": i, "type": "tool_call"},
                           st.text("abcdefgh_", min_size=1, max_size=8),
                           st.dictionaries(text, json_value, max_size=3), ids), max_size=3)
invalid = st.lists(st.builds(lambda n, a, i: {"name": n, "args": a, "id": i, "error": "bad", "type": "invalid_tool_call"},
                             st.text("abc", min_size=1, max_size=4), text, ids), max_size=1)
name = st.none() | st.text("abcdefgh_", min_size=1, max_size=8)

system_m = st.builds(lambda c, i, n: SystemMessage(content=c, id=i, name=n), content, ids, name)
human_m = st.builds(lambda c, i, n, k: HumanMessage(content=c, id=i, name=n, additional_kwargs=k), content, ids, name, meta)
ai_m = st.builds(lambda c, i, tc, bad, k, r, cls: cls(content=c, id=i, tool_calls=tc, invalid_tool_calls=bad,
                                                        additional_kwargs=k, response_metadata=r),
                 content, ids, calls, invalid, meta, meta, st.sampled_from([AIMessage, AIMessageChunk]))
ai_usage = st.builds(lambda c, n: AIMessage(content=c, usage_metadata={"input_tokens": n, "output_tokens": 1, "total_tokens": n + 1}),
                     text, st.integers(0, 1000))
tool_m = st.builds(lambda c, i, t, s, a, n: ToolMessage(content=c, id=i, tool_call_id=t, status=s, artifact=a, name=n),
                   content, ids, st.text("abc123", min_size=1, max_size=8), st.sampled_from(["success", "error"]),
                   json_value, name)
any_message = st.one_of(system_m, human_m, ai_m, ai_usage, tool_m)


class TestRoundTrip:
    @settings(settings.get_profile(PROFILE))
    @given(st.lists(any_message, max_size=8))
    def test_langchain_to_ctxcore_and_back_is_equal(self, messages) -> None:
        """Generated messages (tool calls, content blocks, reasoning, unicode, metadata) come back equal, class included."""
        back = to_langchain(from_langchain(messages))
        assert back == messages
        assert [type(m) for m in back] == [type(m) for m in messages]

    @settings(settings.get_profile(PROFILE))
    @given(st.lists(any_message, max_size=8))
    def test_the_cache_gives_the_same_conversion(self, messages) -> None:
        """The cached path converts to what from_langchain gives, and back to the original objects."""
        cache = ConversionCache()
        converted = cache.convert(messages)
        assert [m.model_dump(exclude={"id"}) for m in converted] == [m.model_dump(exclude={"id"}) for m in from_langchain(messages)]
        assert cache.to_langchain(converted) == messages


class TestSlots:
    def test_model_readable_parts_go_to_ctxcore_slots(self) -> None:
        """Text and images become ctxcore blocks, tool calls ToolCalls, ToolMessage a tool result; reasoning is counted text."""
        ai, result = from_langchain([
            AIMessage([{"type": "reasoning", "reasoning": "think"}, {"type": "text", "text": "ok"}],
                      tool_calls=[{"name": "f", "args": {"x": "é"}, "id": "c1"}]),
            ToolMessage("42", tool_call_id="c1", name="f"),
        ])
        assert ai.role == "assistant" and ai.content == (TextBlock(text="think"), TextBlock(text="ok"))
        assert ai.tool_calls[0].name == "f" and ai.tool_calls[0].parsed_arguments() == {"x": "é"}
        assert result.role == "tool" and result.tool_call_id == "c1" and result.trust == "untrusted"
        assert result.name is None  # chat APIs send no name on tool messages; carried instead
        (image,) = from_langchain([HumanMessage([{"type": "image", "base64": "QUJD", "mime_type": "image/png"}])])
        assert image.content == (ImageBlock(url="data:image/png;base64,QUJD"),)

    def test_a_filtered_message_renders_from_ctxcore_fields(self) -> None:
        """When a filter changed the content, the carried original is not used; the other fields are kept."""
        (m,) = from_langchain([ToolMessage([{"type": "text", "text": "long output", "id": "b1"}], tool_call_id="c1",
                                           status="error", id="t1")])
        (back,) = to_langchain([m.model_copy(update={"content": "short"})])
        assert back == ToolMessage("short", tool_call_id="c1", status="error", id="t1")

    def test_ctxcore_made_messages_map_by_role(self) -> None:
        """A message ctxcore made (system prompt, summary) becomes the LangChain class of its role."""
        from ctxcore import ai, human, system, tool

        back = to_langchain([system("s"), human("h"), ai(None, tool_calls=[{"id": "c", "name": "f", "arguments": {}}]),
                             tool("r", tool_call_id="c")])
        assert back == [SystemMessage("s"), HumanMessage("h"),
                        AIMessage("", tool_calls=[{"name": "f", "args": {}, "id": "c", "type": "tool_call"}]),
                        ToolMessage("r", tool_call_id="c")]

    def test_unsupported_message_names_its_index(self) -> None:
        """A ChatMessage with a custom role is refused with its index and the supported classes."""
        with pytest.raises(ValueError, match=r"message 1: cannot convert ChatMessage .*SystemMessage, HumanMessage"):
            from_langchain([HumanMessage("a"), ChatMessage(content="x", role="critic")])


class TestCache:
    def test_growth_converts_only_the_tail(self) -> None:
        """A history that only grew costs the new messages; the returned list is the same object, grown."""
        cache = ConversionCache()
        history = [HumanMessage(f"m{i}", id=f"m{i}") for i in range(50)]
        first = cache.convert(history)
        second = cache.convert([*history, AIMessage("new")])
        assert second is first and len(second) == 51 and cache.conversions == 51

    def test_in_place_edit_of_a_recent_message_is_noticed(self) -> None:
        """Replacing the content of one of the last eight messages in place re-converts it."""
        cache = ConversionCache()
        history = [HumanMessage(f"m{i}", id=f"m{i}") for i in range(20)]
        cache.convert(history)
        history[-2].content = "edited"
        assert cache.convert(history)[-2].content == "edited"

    def test_reloaded_objects_hit_by_id_and_memory_is_bounded(self) -> None:
        """Equal new objects (a checkpoint load) are not converted again; entries of removed messages are dropped."""
        cache = ConversionCache()
        history = [HumanMessage(f"m{i}", id=f"m{i}") for i in range(30)]
        cache.convert(history)
        reloaded = [m.model_copy(deep=True) for m in history[10:]]
        assert [m.content for m in cache.convert(reloaded)] == [f"m{i}" for i in range(10, 30)]
        assert cache.conversions == 30 and len(cache) == 20


class TestWayBack:
    """ConversionCache.to_langchain: unchanged messages map back to the framework's own objects, the rest is converted."""

    def test_kept_messages_are_the_original_objects_and_changed_ones_are_converted(self) -> None:
        history = [HumanMessage("hi", id="h1"), AIMessage("hello", id="a1"), HumanMessage("more", id="h2")]
        cache = ConversionCache()
        converted = cache.convert(history)
        copy = converted[1].model_copy(update={"metadata": {**converted[1].metadata, "semantic_kind": "x"}})
        changed = converted[2].model_copy(update={"content": "shortened"})
        made = Message(role="system", content="made by the pipeline")
        back = cache.to_langchain([made, converted[0], copy, changed])
        assert back[1] is history[0] and back[2] is history[1]  # by identity, and a derived copy reading the same
        assert back[3] is not history[2] and back[3].content == "shortened"
        assert isinstance(back[0], SystemMessage) and back[0].content == "made by the pipeline"
        again = cache.to_langchain([made, converted[0], copy, changed])
        assert all(a is b for a, b in zip(again, back, strict=True))  # what it converted is remembered by identity

    def test_the_memo_follows_the_window(self) -> None:
        """Messages the pipeline made anew each call are not kept beyond about two windows."""
        cache = ConversionCache()
        converted = cache.convert([HumanMessage("hi", id="h1")])
        for i in range(200):
            cache.to_langchain([Message(role="system", content=f"summary {i}"), *converted])
        assert len(cache._memo) <= 2 * 2 + 16
