"""The converters against pydantic-ai's real message classes: lossless round trips (hypothesis).

The quick profile runs 60 examples per property, ``CTXCORE_THOROUGH=1`` 2,000.
"""

from __future__ import annotations

import dataclasses
import os
import warnings
from datetime import datetime, timezone
from typing import Any

import pytest
from ctxcore_pydantic_ai import METADATA_KEY, from_pydantic_ai, to_pydantic_ai
from ctxcore_pydantic_ai.cache import ConversionCache
from ctxcore_pydantic_ai.convert import thinking_text
from ctxcore_pydantic_ai.window import WindowCache
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic_ai.messages import (
    BinaryContent,
    CachePoint,
    CompactionPart,
    DocumentUrl,
    ImageUrl,
    InstructionDeltaPart,
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    RetryFeedbackPart,
    RetryInfo,
    RetryPromptPart,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    ToolAvailabilityDeltaPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
    _translate_legacy_retry_part,
)

from ctxcore import Message, TextBlock, ToolCall, check_tool_pairing

EXAMPLES = 2000 if os.environ.get("CTXCORE_THOROUGH") == "1" else 60
PROFILE = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])

texts = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=30)
ids = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=12)
names = st.from_regex(r"[a-z][a-z0-9_]{0,11}", fullmatch=True)
stamps = st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(timezone.utc))
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6) | texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(names, inner, max_size=3), max_leaves=6)
user_items = st.one_of(
    texts,
    st.builds(lambda u: ImageUrl(url=u), st.from_regex(r"https://example\.org/[a-z]{1,8}\.png", fullmatch=True)),
    st.builds(lambda d, m: BinaryContent(data=d, media_type=m), st.binary(min_size=1, max_size=16),
              st.sampled_from(["image/png", "application/pdf"])),
    st.builds(lambda u: DocumentUrl(url=u), st.from_regex(r"https://example\.org/[a-z]{1,8}\.pdf", fullmatch=True)),
    st.just(CachePoint()),
)
system_parts = st.builds(lambda c, t, r: SystemPromptPart(c, timestamp=t, dynamic_ref=r), texts, stamps, st.none() | names)
user_parts = st.builds(lambda c, t: UserPromptPart(c, timestamp=t), texts | st.lists(user_items, min_size=1, max_size=4), stamps)
feedback_parts = st.builds(lambda c, cause, t: RetryFeedbackPart(c, retry=RetryInfo(cause), timestamp=t),
                           texts, st.sampled_from(["model_retry", "validation_error", "no_output"]), stamps)


def rider_parts(call_ids: list[str]) -> st.SearchStrategy[Any]:
    """Request parts the model does not read as messages (deltas, compaction): they ride along with a readable part."""
    return st.one_of(
        st.builds(lambda added, cid: ToolAvailabilityDeltaPart(tools_added=added, tool_call_id=cid),
                  st.lists(names, max_size=2), st.sampled_from([None, *call_ids])),
        st.builds(lambda i, c: InstructionDeltaPart(id=i, content=c), ids, st.none() | texts),
        st.builds(lambda c: CompactionPart(c), st.none() | texts),
    )


RIDERS = (ToolAvailabilityDeltaPart, InstructionDeltaPart, CompactionPart)


def _readable_count(request: ModelRequest) -> int:
    """The messages a request gives: its parts that are not riders (or, with none, one placeholder per part)."""
    return sum(not isinstance(p, RIDERS) for p in request.parts) or len(request.parts)


def _interleave(draw: Any, parts: list[Any], call_ids: list[str]) -> list[Any]:
    """``parts`` with 0..2 rider parts inserted at random places (before, between or after them)."""
    out = list(parts)
    for rider in draw(st.lists(rider_parts(call_ids), max_size=2)):
        out.insert(draw(st.integers(0, len(out))), rider)
    return out


@st.composite
def tool_exchange(draw: Any) -> tuple[ModelResponse, list[Any]]:
    """A response with 0..3 tool calls (text and thinking around them) and the parts answering every call."""
    calls = [
        ToolCallPart(tool_name=draw(names), tool_call_id=f"call_{i}_{draw(ids)}",
                     args=draw(st.none() | st.dictionaries(names, json_values, max_size=3) | st.just('{"q": "é"}')))
        for i in range(draw(st.integers(0, 3)))
    ]
    extra = draw(st.lists(st.one_of(
        st.builds(lambda c: TextPart(c), texts),
        st.builds(lambda c, s: ThinkingPart(c, signature=s), texts, st.none() | ids)), max_size=3))
    parts = draw(st.permutations([*calls, *extra]))
    response = ModelResponse(parts=parts, timestamp=draw(stamps), model_name=draw(st.none() | names),
                             provider_response_id=draw(st.none() | ids))
    answers: list[Any] = []
    for call in calls:
        if draw(st.booleans()):
            answers.append(ToolReturnPart(tool_name=call.tool_name, content=draw(json_values), tool_call_id=call.tool_call_id,
                                          timestamp=draw(stamps)))
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the legacy part still exists in histories users built
                answers.append(RetryPromptPart(content=draw(texts), tool_name=call.tool_name, tool_call_id=call.tool_call_id,
                                               timestamp=draw(stamps)))
    return response, answers


@st.composite
def histories(draw: Any) -> list[ModelMessage]:
    """A legal pydantic-ai history: requests of system/user/feedback parts, responses whose calls are answered next."""
    first = _interleave(draw, draw(st.lists(st.one_of(system_parts, user_parts), min_size=1, max_size=3)), [])
    out: list[ModelMessage] = [ModelRequest(parts=first, instructions=draw(st.none() | texts), timestamp=draw(stamps))]
    for _ in range(draw(st.integers(0, 4))):
        response, answers = draw(tool_exchange())
        out.append(response)
        tail = draw(st.lists(st.one_of(user_parts, feedback_parts), max_size=2))
        if answers or tail:
            riders = _interleave(draw, [*answers, *tail], [a.tool_call_id for a in answers])
            out.append(ModelRequest(parts=riders, run_id=draw(st.none() | ids)))
        else:
            out.append(ModelRequest(parts=[draw(user_parts)]))
    return out


def _view(messages: list[Message]) -> list[tuple[Any, ...]]:
    """What the model reads; arguments as parsed JSON (pydantic-ai sends them re-serialized, without spaces)."""
    return [(m.role, m.content, m.tool_call_id, [(c.id, c.name, c.parsed_arguments()) for c in m.tool_calls]) for m in messages]


class TestRoundTrip:
    @PROFILE
    @given(histories())
    def test_pydantic_ai_to_ctxcore_and_back_is_exact(self, history: list[ModelMessage]) -> None:
        """Every generated history comes back equal, message for message, as the very objects given."""
        back = to_pydantic_ai(from_pydantic_ai(history))
        assert back == history
        assert all(a is b for a, b in zip(back, history, strict=True))

    @PROFILE
    @given(histories())
    def test_ctxcore_view_is_what_the_model_reads(self, history: list[ModelMessage]) -> None:
        """One message per readable request part and per response; calls and their answers keep their ids; legal.

        A delta or compaction part never becomes a message (one between two tool
        returns would split the call's results): it rides along with a readable part.
        """
        converted = from_pydantic_ai(history)
        expected = sum(_readable_count(m) if isinstance(m, ModelRequest) else 1 for m in history)
        assert len(converted) == expected
        check_tool_pairing(converted)  # raises on a dangling call or result
        for message, origin in ((m, m.metadata[METADATA_KEY]) for m in converted):
            part = origin.part
            if isinstance(part, SystemPromptPart):
                assert (message.role, message.content) == ("system", part.content)
            elif isinstance(part, ToolReturnPart):
                assert (message.role, message.tool_call_id, message.text) == ("tool", part.tool_call_id, part.model_response_str())
            elif isinstance(part, RetryPromptPart):  # counted as the retried return pydantic-ai sends in its place
                sent = _translate_legacy_retry_part(part)
                assert (message.role, message.tool_call_id, message.text) == ("tool", part.tool_call_id, sent.model_response_str())
            elif part is None:
                response = origin.message
                assert message.role == "assistant"
                calls = [p for p in response.parts if isinstance(p, ToolCallPart)]
                assert [(c.id, c.name, c.arguments) for c in message.tool_calls] == [
                    (p.tool_call_id, p.tool_name, p.args_as_json_str()) for p in calls]
                # the text and the thinking sent back (inline form), in order: both counted
                assert message.text == "\n".join(
                    thinking_text(p) if isinstance(p, ThinkingPart) else p.content for p in response.parts
                    if isinstance(p, TextPart) or (isinstance(p, ThinkingPart) and p.content))

    @PROFILE
    @given(histories(), st.data())
    def test_an_edited_message_comes_back_edited_and_nothing_else_changes(self, history: list[ModelMessage], data: Any) -> None:
        """A filter's new text reaches pydantic-ai in that part alone; its other fields and every other part stay."""
        converted = from_pydantic_ai(history)
        i = data.draw(st.integers(0, len(converted) - 1))
        target = converted[i]
        edited = target.model_copy(update={"content": "[compressed] ü"})
        back = to_pydantic_ai([*converted[:i], edited, *converted[i + 1:]])
        again = from_pydantic_ai(back)
        assert [m.text for m in again[:i] + again[i + 1:]] == [m.text for m in converted[:i] + converted[i + 1:]]
        if target.role == "tool":  # a failed or retried return is shown to the model wrapped, as pydantic-ai sends it
            assert "[compressed] ü" in again[i].text
        else:
            assert again[i].text == "[compressed] ü"
        assert [m.tool_calls for m in again] == [m.tool_calls for m in converted]
        changed = [j for j, (a, b) in enumerate(zip(back, history, strict=True)) if a is not b]
        assert len(changed) == 1
        origin = target.metadata[METADATA_KEY]
        if origin.part is not None:
            assert len(back[changed[0]].parts) == len(origin.message.parts)  # the riders came back with it
            new_part = back[changed[0]].parts[origin.index]
            old_part = origin.part
            if isinstance(old_part, SystemPromptPart | UserPromptPart | ToolReturnPart):
                assert type(new_part) is type(old_part)
            elif isinstance(old_part, RetryPromptPart):  # its pydantic-ai 2.x replacement
                assert isinstance(new_part, ToolReturnPart) and new_part.outcome == "retried"
            else:  # retry feedback: the new text is what the user-role message reads
                assert isinstance(new_part, UserPromptPart)
            assert getattr(new_part, "timestamp", None) == getattr(old_part, "timestamp", None)
            others = [p for j, p in enumerate(back[changed[0]].parts) if j != origin.index]
            assert all(a is b for a, b in zip(others, [p for j, p in enumerate(origin.message.parts) if j != origin.index], strict=True))

    def test_a_thought_the_filter_replaced_goes_and_one_it_kept_stays(self) -> None:
        """Replacing an answer's content drops the counted thought with it; keeping the thought's block keeps the part."""
        thought = ThinkingPart("plan the answer", signature="sig")
        response = ModelResponse(parts=[thought, TextPart("the long answer")])
        converted = from_pydantic_ai([ModelRequest(parts=[UserPromptPart("q")]), response])
        replaced = to_pydantic_ai([converted[0], converted[1].model_copy(update={"content": "[compressed]"})])
        assert [type(p) for p in replaced[1].parts] == [TextPart]
        assert from_pydantic_ai(replaced)[1].text == "[compressed]"
        kept_thought = converted[1].model_copy(update={"content": (converted[1].content[0], TextBlock(text="[compressed]"))})
        kept = to_pydantic_ai([converted[0], kept_thought])
        assert kept[1].parts[0] is thought and kept[1].parts[1].content == "[compressed]"

    def test_an_uncounted_thought_rides_along_whatever_the_filter_wrote(self) -> None:
        """With thinking not counted (``thinking=False``) a thought was never in the content, so an edit keeps it."""
        thought = ThinkingPart("plan the answer")
        response = ModelResponse(parts=[thought, TextPart("the long answer")])
        converted = from_pydantic_ai([ModelRequest(parts=[UserPromptPart("q")]), response], thinking=False)
        back = to_pydantic_ai([converted[0], converted[1].model_copy(update={"content": "[compressed]"})])
        assert back[1].parts[0] is thought and back[1].parts[1].content == "[compressed]"


plain_messages = st.lists(st.one_of(
    st.builds(lambda t: Message(role="system", content=t), texts),
    st.builds(lambda t: Message(role="user", content=t), texts),
), min_size=1, max_size=3)


@st.composite
def ctxcore_histories(draw: Any) -> list[Message]:
    """ctxcore messages that never came from pydantic-ai (what a pipeline adds), with tool calls answered."""
    out = list(draw(plain_messages))
    for n in range(draw(st.integers(0, 3))):
        calls = [ToolCall(id=f"c{n}_{k}", name=draw(names), arguments='{"a": 1}') for k in range(draw(st.integers(0, 2)))]
        out.append(Message(role="assistant", content=draw(st.none() | texts.filter(bool)), tool_calls=tuple(calls)))
        out += [Message(role="tool", content=draw(texts), tool_call_id=c.id, name=c.name) for c in calls]
        out += draw(plain_messages)
    return out


class TestFromCtxcore:
    @PROFILE
    @given(ctxcore_histories())
    def test_ctxcore_messages_survive_pydantic_ai(self, messages: list[Message]) -> None:
        """Messages ctxcore added become pydantic-ai parts that read back as the same role, text, calls and ids."""
        assert all(isinstance(m, ModelRequest | ModelResponse) for m in to_pydantic_ai(messages))
        back = from_pydantic_ai(to_pydantic_ai(messages))
        assert _view(back) == _view(messages)

    def test_a_file_block_without_data_is_refused_by_name(self) -> None:
        """A file block with only a provider file id has no pydantic-ai user content: a clear error, not a silent drop."""
        from ctxcore import FileBlock

        with pytest.raises(ValueError, match="file_id 'file-1'"):
            to_pydantic_ai([Message(role="user", content=(FileBlock(file_id="file-1"),))])

    def test_a_non_message_is_named_by_index(self) -> None:
        """Passing something else than a pydantic-ai message names its position."""
        with pytest.raises(ValueError, match="message 1: expected a pydantic-ai ModelRequest"):
            from_pydantic_ai([ModelRequest(parts=[UserPromptPart("hi")]), {"role": "user"}])  # type: ignore[list-item]


# ---------------------------------------------------------------- the window cache (the way back, reused)
made = st.sampled_from([
    Message(role="system", content="pipeline prompt", id="sys"),
    Message(role="user", content="a memory", id="mem"),
    Message(role="assistant", content="a summary", id="sum"),
])


@st.composite
def window_sequences(draw: Any) -> list[list[Message]]:
    """Successive windows over one converted history: growing, dropping at the front, made messages before, edits."""
    pool = from_pydantic_ai(draw(histories()) + draw(histories()))
    windows = []
    end = draw(st.integers(1, len(pool)))
    for _ in range(draw(st.integers(1, 6))):
        end = min(len(pool), end + draw(st.integers(0, 3)))
        start = draw(st.integers(0, end - 1))
        window = draw(st.lists(made, max_size=2, unique_by=lambda m: m.id)) + pool[start:end]
        if draw(st.booleans()) and len(window) > 2:  # a filter changed one message
            i = draw(st.integers(0, len(window) - 1))
            window[i] = window[i].model_copy(update={"content": "changed"})
        windows.append(window)
    return windows


def _stamped(messages: list[Any]) -> list[Any]:
    """The messages with every response's timestamp set to one value: a response ctxcore made gets a new one per conversion."""
    epoch = datetime(2000, 1, 1, tzinfo=timezone.utc)
    return [dataclasses.replace(m, timestamp=epoch) if isinstance(m, ModelResponse) else m for m in messages]


class TestWindowCache:
    @PROFILE
    @given(window_sequences())
    def test_each_window_equals_a_full_conversion(self, windows: list[list[Message]]) -> None:
        """Whatever the last window was, the result is to_pydantic_ai(window, merge=True) (with the parts it made)."""
        cache = WindowCache()
        for window in windows:
            out = cache.convert(window)
            assert _stamped(out) == _stamped(to_pydantic_ai(window, fresh=dict(cache.fresh), merge=True))

    def test_a_grown_window_reuses_the_last_messages_by_identity(self) -> None:
        """The next turn's window (one more exchange) gives back the same pydantic-ai objects for what did not move."""
        history = [ModelRequest(parts=[UserPromptPart("hi")]), ModelResponse(parts=[TextPart("hello")]),
                   ModelRequest(parts=[UserPromptPart("more")])]
        converted = from_pydantic_ai(history)
        cache = WindowCache()
        first = cache.convert(converted)
        assert all(a is b for a, b in zip(first, history, strict=True))
        grown = [*converted, *from_pydantic_ai([ModelResponse(parts=[TextPart("ok")]),
                                               ModelRequest(parts=[UserPromptPart("last")])])]
        second = cache.convert(grown)
        assert cache.reused == 2  # the first request and response; the last request could merge, so converted again
        assert second[0] is first[0] and second[1] is first[1]
        assert second == to_pydantic_ai(grown, merge=True)

    def test_memory_follows_the_window(self) -> None:
        """After a short window, only that window's messages are held."""
        cache = WindowCache()
        long = from_pydantic_ai([ModelRequest(parts=[UserPromptPart(f"u{i}")]) if i % 2 == 0
                                 else ModelResponse(parts=[TextPart(f"a{i}")]) for i in range(40)])
        cache.convert(long)
        cache.convert(long[-3:])
        assert len(cache._window) == 3 and len(cache._ids) == 3


# ---------------------------------------------------------------- the conversion cache (content-keyed)
def _reloaded(history: list[ModelMessage]) -> list[ModelMessage]:
    """The history stored and loaded again, as a user persisting it does: new objects, equal by value."""
    return list(ModelMessagesTypeAdapter.validate_json(ModelMessagesTypeAdapter.dump_json(history)))


def _edited_part(part: Any) -> Any:
    if isinstance(part, ToolCallPart):
        return dataclasses.replace(part, args={"edited": True})
    if isinstance(getattr(part, "content", None), str):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the legacy RetryPromptPart warns when made
            return dataclasses.replace(part, content=part.content + " (edited)")
    return None


def _edited(history: list[ModelMessage], seed: int) -> list[ModelMessage]:
    """One message edited (a part's text or arguments changed, or a part added): a new message object or, on a
    freshly loaded copy, in place (both are new objects to the cache)."""
    out = _reloaded(history) if seed % 2 else list(history)
    i = seed % len(out)
    message = out[i]
    parts = list(message.parts)
    j = next((k for k, p in enumerate(parts) if _edited_part(p) is not None), None)
    if j is None:
        parts.append(TextPart("added") if isinstance(message, ModelResponse) else UserPromptPart("added"))
    else:
        parts[j] = _edited_part(parts[j])
    if seed % 2:
        message.parts[:] = parts  # in place: the cache never saw this object
    else:
        out[i] = dataclasses.replace(message, parts=parts)
    return out


def _cache_view(messages: list[Message]) -> list[tuple[Any, ...]]:
    """What the model reads of each message and where it came from (the part, its index and span, the message's parts)."""
    out = []
    for m in messages:
        origin = m.metadata[METADATA_KEY]
        out.append((m.role, m.content, m.tool_call_id, m.tool_calls, m.name, type(origin.message), origin.message.parts,
                    origin.index, origin.part, origin.span))
    return out


steps = st.lists(st.tuples(st.sampled_from(["append", "edit", "reload", "drop", "same"]), st.integers(0, 10**6)),
                 min_size=1, max_size=6)


class TestConversionCacheByContent:
    @PROFILE
    @given(histories(), steps, st.data())
    def test_the_cache_equals_a_fresh_conversion(self, history: list[ModelMessage], plan: list[Any], data: Any) -> None:
        """Whatever sequence of histories (grown, edited, loaded again from JSON, cut), the cache converts as from scratch."""
        cache = ConversionCache()
        current = list(history)
        for op, seed in [("same", 0), *plan]:
            if op == "append":
                current = [*current, *data.draw(histories())]
            elif op == "edit":
                current = _edited(current, seed)
            elif op == "reload":
                current = _reloaded(current)
            elif op == "drop":
                current = current[seed % len(current):]
            assert _cache_view(cache.convert(current)) == _cache_view(from_pydantic_ai(current)), op

    def test_a_history_loaded_again_converts_only_its_new_messages(self) -> None:
        """Loaded from JSON every turn (new objects), the history costs one conversion per new message, not all of them."""
        history: list[ModelMessage] = [ModelRequest(parts=[SystemPromptPart("be brief"), UserPromptPart("q0")])]
        for i in range(30):
            history += [ModelResponse(parts=[ToolCallPart("f", '{"x": ' + str(i), tool_call_id=f"c{i}")]),
                        ModelRequest(parts=[ToolReturnPart("f", "bad arguments", tool_call_id=f"c{i}", outcome="retried")])]
        cache = ConversionCache()
        first = cache.convert(history)
        loaded = [*_reloaded(history), ModelResponse(parts=[TextPart("done")]), ModelRequest(parts=[UserPromptPart("more")])]
        second = cache.convert(loaded)
        assert (cache.way, cache.hits, cache.misses) == ("reloaded", len(history), 2)
        assert all(a is b for a, b in zip(first, second[:len(first)], strict=True))  # the very conversions, so the build's caches hold too
        edited = _reloaded(loaded)
        edited[3].parts[0].content = "an edited early return"  # type: ignore[union-attr]  # stored, edited, loaded
        third = cache.convert(edited)
        assert (cache.way, cache.misses) == ("per message", 1)
        assert [m.text for m in third] == [m.text for m in from_pydantic_ai(edited)]

    def test_equal_messages_twice_get_two_conversions(self) -> None:
        """Two equal messages in one history each get their own ctxcore message (ids stay unique)."""
        stamp = datetime(2026, 1, 1, tzinfo=timezone.utc)
        twice: list[ModelMessage] = [ModelRequest(parts=[UserPromptPart("ok", timestamp=stamp)], timestamp=stamp)] * 2
        cache = ConversionCache()
        assert len({m.id for m in cache.convert(twice)}) == 2
        out = cache.convert([ModelRequest(parts=[UserPromptPart("first")]), *_reloaded(twice)])
        assert (cache.way, cache.misses) == ("per message", 1)  # both loaded copies found their own entry
        assert len({m.id for m in out}) == 3
