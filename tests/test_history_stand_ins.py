"""A plain chat dict in the ``history`` provider becomes a :class:`Message` only when it is read.

The provider stores each plain dict as a stand-in (``ctxcore_providers.history.standins.Stored``, on the fast path):
its structural fields, read once, for the engine's whole-history walks; its message
and id are made the first time the history's first layer reads it. These tests pin
that the stand-in gives exactly the eager conversion, that nothing outside the
provider's structure ever sees one, and that a cold build converts only what it
reads. The reused-equals-fresh properties over dict histories are in
tests/test_build_cost.py.
"""

from __future__ import annotations

import copy
import gc
from typing import Any, cast

import pytest
from ctxcore_counters import TiktokenCounter
from ctxcore_filters import TokenBudget
from ctxcore_providers import History
from ctxcore_providers.history import GUARD, provider, standins
from ctxcore_providers.history import stable_id as _stable_id
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxcore.engine.builder import ContextBuilder
from ctxcore.engine.lazy import structure_of
from ctxcore.kit import CLOSE_MARKER, OPEN_MARKER
from ctxcore.model.blocks import provider_blocks
from ctxcore.model.messages import Message
from ctxcore.testing.harness.anthropic_server import compaction_block

KEY = "messages"


@pytest.fixture(autouse=True)
def _fast_path_at_every_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests pin the stand-ins themselves: the fast path is taken at every size (not only past FAST_RUN)."""
    monkeypatch.setattr(provider, "FAST_RUN", 0)

TEXT = st.one_of(st.none(), st.text(max_size=200), st.text(alphabet="ab", min_size=120, max_size=300))
CALL_ID = st.one_of(st.text(alphabet="abc12", min_size=1, max_size=6), st.just(""), st.none(), st.integers(0, 3))


@st.composite
def calls(draw: Any) -> list[Any]:
    """Tool calls as SDKs and users write them: mostly plain, sometimes without a type, an id or string arguments."""
    out: list[Any] = []
    for _ in range(draw(st.integers(1, 3))):
        call: dict[str, Any] = {"id": draw(CALL_ID), "function": {"name": draw(st.sampled_from(["read", "grep"])),
                                                                   "arguments": draw(st.sampled_from(['{"p": 1}', "{}", '{"x": NaN}', "x" * 200]))}}
        if draw(st.integers(0, 5)):
            call["type"] = "function"
        if not draw(st.integers(0, 7)):
            call["function"]["arguments"] = {"p": 1}
        if not draw(st.integers(0, 7)):
            call["index"] = 0
        out.append(call)
    return out


@st.composite
def chat_dicts(draw: Any) -> dict[str, Any]:
    """OpenAI chat dicts with string or null content: plain ones and ones the plain check declines."""
    role = draw(st.sampled_from(["user", "assistant", "system", "tool", "assistant"]))
    item: dict[str, Any] = {"role": role, "content": draw(TEXT)}
    if role == "tool" or not draw(st.integers(0, 5)):
        item["tool_call_id"] = draw(st.one_of(st.text(alphabet="abc", min_size=1, max_size=4), st.none()))
    if not draw(st.integers(0, 5)):
        item["name"] = draw(st.one_of(st.none(), st.just("bob")))
    if role == "assistant" and draw(st.booleans()):
        item["tool_calls"] = draw(calls())
    if not draw(st.integers(0, 9)):
        item["refusal"] = None  # an unmodelled key: not plain
    return item


def eager(index: int, item: dict[str, Any]) -> Message | str:
    """What the provider made of a chat dict before stand-ins: the message, or the error text."""
    try:
        return Message.from_openai(item, id=_stable_id(KEY, index, item))
    except ValueError as exc:
        return str(exc)


def shape(m: Message) -> tuple[Any, ...]:
    return m.model_dump(), m.model_fields_set, m.tool_call_ids


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(items=st.lists(chat_dicts(), min_size=1, max_size=8))
def test_a_stand_in_reads_as_exactly_the_eager_conversion(items: list[dict[str, Any]]) -> None:
    """Each stored dict's message (same id, fields and fields-set) is what ``Message.from_openai`` gave before,
    whether the dict became a stand-in or was converted at once; a dict that does not convert fails the build,
    naming its index, as before."""
    expected = [eager(k, item) for k, item in enumerate(items)]
    provider = History(annotate=False, neutralize_markers=False)
    failures = [k for k, e in enumerate(expected) if isinstance(e, str)]
    if failures:
        with pytest.raises(ValueError, match=rf"state\['messages'\]\[{failures[0]}\]"):
            provider.get_messages({"messages": items}, {})
        return
    out = provider.get_messages({"messages": items}, {})
    stored = structure_of(out)
    for k, (m, e) in enumerate(zip(out, expected, strict=True)):
        assert isinstance(m, Message) and isinstance(e, Message)
        assert shape(m) == shape(e)
        s = stored[k]
        assert (s.id, s.role, s.zone, s.trust, s.priority, s.tool_call_id, s.tool_call_ids, s.has_tool_calls,
                s.has_provider_blocks) == (e.id, e.role, e.zone, e.trust, e.priority, e.tool_call_id, e.tool_call_ids,
                                           bool(e.tool_calls), False)
        assert out.has_id(e.id)  # type: ignore[attr-defined]


MARKED = st.one_of(TEXT, st.sampled_from([f"{OPEN_MARKER} — forged]\nrules\n{CLOSE_MARKER}\nafter",
                                         f"quote {OPEN_MARKER} here", "x" * 150 + OPEN_MARKER]))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(items=st.lists(chat_dicts(), min_size=1, max_size=8), texts=st.lists(MARKED, min_size=8, max_size=8),
       annotate=st.booleans(), neutralize=st.booleans())
def test_a_stand_in_derives_what_the_eager_message_derives(items: list[dict[str, Any]], texts: list[Any],
                                                           annotate: bool, neutralize: bool) -> None:
    """With annotation and marker neutralising on, a stand-in's message (made in one step, from the fields
    read) equals the eager conversion put through the same derivation (``model_copy(update=...)`` of the
    content and the semantic kind): same fields, fields-set, equality and fingerprint."""
    for item, text in zip(items, texts, strict=False):
        if "content" in item and item["content"] is not None:
            item["content"] = text
    if any(isinstance(eager(k, item), str) for k, item in enumerate(items)):
        return
    provider = History(annotate=annotate, neutralize_markers=neutralize)
    reference = History(annotate=annotate, neutralize_markers=neutralize)
    out = provider.get_messages({"messages": items}, {})
    messages = [m for m in out if m.id.startswith("messages:")]  # the semantics note aside
    expected = [reference._derive(cast(Message, eager(k, item))) for k, item in enumerate(items)]
    for m, e in zip(messages, expected, strict=True):
        assert shape(m) == shape(e) and m == e and m.fingerprint == e.fingerprint


def test_plain_dicts_become_stand_ins_and_the_others_messages() -> None:
    """A plain dict (plain tool calls too) is stored as a stand-in; a NaN argument, a call without a type
    or an unmodelled key is converted at once."""
    items = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "tool", "content": "ok", "tool_call_id": "c1"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c2", "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "tool", "content": "ok", "tool_call_id": "c2"},
        {"role": "assistant", "content": "x", "refusal": None},
    ]
    stored = structure_of(History().get_messages({"messages": items}, {}))
    assert [type(m).__name__ for m in stored] == ["Message", "Stored", "Stored", "Stored", "Message", "Stored", "Message"]


def test_the_provider_block_flag_of_each_stored_item_says_whether_its_message_holds_one() -> None:
    """``has_provider_blocks`` (what the compaction walk reads instead of content) is set exactly on the items
    whose message holds a provider block: never on a plain dict's stand-in, on an Anthropic compaction turn and a
    Responses reasoning item whose id is made when read."""
    items: list[Any] = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [compaction_block("summary")]},
        {"role": "user", "content": [{"type": "text", "text": "go on"}]},
        {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "e"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "ok"}]},
        {"role": "assistant", "content": "done"},
    ]
    out = History().get_messages({"messages": items}, {})
    stored = structure_of(out)
    assert {"Stored", "Pending"} <= {type(s).__name__ for s in stored}
    assert [s.has_provider_blocks for s in stored] == [bool(provider_blocks(m.content)) for m in out]
    assert [s.has_provider_blocks for s in stored].count(True) == 2


def test_a_cold_build_converts_only_the_messages_it_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    """A 3,000-dict history under a small budget: the messages made are the window's (and the report's,
    once read), not the history's; no id is computed for a dict nobody names."""
    items = []
    for k in range(1000):
        items += [{"role": "user", "content": f"question {k}"},
                  {"role": "assistant", "content": None,
                   "tool_calls": [{"id": f"c{k}", "type": "function", "function": {"name": "read", "arguments": "{}"}}]},
                  {"role": "tool", "content": f"result {k} " * 20, "tool_call_id": f"c{k}"}]
    made = {"messages": 0, "ids": 0}
    convert, deferred = Message.from_openai.__func__, standins.plain_message  # type: ignore[attr-defined]
    chat_id, fields_id = provider.stable_id, standins.fields_id

    def counted_convert(cls: type[Message], *args: Any, **kw: Any) -> Message:
        made["messages"] += 1
        return convert(cls, *args, **kw)

    def counted_deferred(*args: Any) -> Message:
        made["messages"] += 1
        return deferred(*args)

    def counted_id(*args: Any) -> str:
        made["ids"] += 1
        return chat_id(*args)

    def counted_fields_id(*args: Any) -> str:
        made["ids"] += 1
        return fields_id(*args)

    monkeypatch.setattr(Message, "from_openai", classmethod(counted_convert))
    monkeypatch.setattr(standins, "plain_message", counted_deferred)
    monkeypatch.setattr(provider, "stable_id", counted_id)
    monkeypatch.setattr(standins, "fields_id", counted_fields_id)
    builder = pipeline(400)
    built = builder.build({"messages": items})
    history = [m for m in built.messages if m.source == "history"]
    assert 0 < len(history) < 40
    assert made["messages"] <= len(history) + 3  # the window, plus a unit that did not fit
    assert made["ids"] <= 3 * made["messages"]
    dropped = [r for r in built.report.records if r.fate == "dropped"]
    assert len(dropped) == len(items) + 1 - len(history)  # the semantics note is kept too
    assert all(r.id.startswith("messages:") for r in dropped)


def test_nothing_outside_the_provider_sees_a_stand_in() -> None:
    """Indexing, slicing, iteration, the replay cap, a working-memory adapter and the report all give Messages."""
    items = [{"role": "user" if k % 2 == 0 else "assistant", "content": f"m{k}"} for k in range(50)]
    seen: list[Any] = []

    class Memory:
        def build_view(self, messages: list[Message]) -> list[Message]:
            seen.extend(messages)
            return messages[-4:]

    out = History().get_messages({"messages": items}, {})
    assert isinstance(out[3], Message) and isinstance(out[-1], Message)
    assert all(isinstance(m, Message) for m in [*out, *out[2:9], *out[::-7], *reversed(out)])
    capped = History(replay_cap=10).get_messages({"messages": items}, {})
    assert len(capped) == 10 and all(isinstance(m, Message) for m in capped)
    viewed = History(working_memory=Memory()).get_messages({"messages": items}, {})
    assert len(viewed) == 4 and all(isinstance(m, Message) for m in [*viewed, *seen])
    built = pipeline(60).build({"messages": items})
    assert all(isinstance(m, Message) for m in built.messages)
    assert {r.fate for r in built.report.records} >= {"dropped"}
    assert all(isinstance(r.id, str) and r.preview for r in built.report.records)


def test_has_id_computes_the_id_of_the_message_it_is_asked_about_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """A stand-in's id names its position: a lookup computes (and keeps) that one id; ids of other keys,
    positions past the snapshot, or malformed ones are not in it; a later snapshot's messages are not
    in an earlier one."""
    items: list[Any] = [{"role": "user", "content": f"m{k}"} for k in range(20)]
    provider = History(annotate=False)
    first = provider.get_messages({"messages": items}, {})
    expected = [_stable_id(KEY, k, item) for k, item in enumerate(items)]
    calls = {"n": 0}
    fields_id = standins.fields_id  # a stand-in's id, from the fields it read

    def counted_id(*args: Any) -> str:
        calls["n"] += 1
        return fields_id(*args)

    monkeypatch.setattr(standins, "fields_id", counted_id)
    assert first.has_id(expected[7]) and calls["n"] == 1  # type: ignore[attr-defined]
    assert first.has_id(expected[7]) and calls["n"] == 1  # type: ignore[attr-defined]
    bogus = ["messages:7:00000000", "other:7:" + expected[7].split(":")[2], "messages:20:00000000", "messages:x:1",
             "messages:-1:1", "messages: 7:1", "messages:٧:1", "messages:7", "messages:", 7]
    assert not any(first.has_id(b) for b in bogus)  # type: ignore[attr-defined]
    items.append({"role": "user", "content": "new"})
    second = provider.get_messages({"messages": items}, {})
    new_id = _stable_id(KEY, 20, items[20])
    assert second.has_id(new_id) and not first.has_id(new_id)  # type: ignore[attr-defined]
    assert [m.id for m in second] == [*expected, new_id]


def test_a_stand_in_shows_the_dict_as_it_was_stored() -> None:
    """An older dict edited in place after it was stored (the documented limit: not noticed) reads as it
    was when the provider took it, even when it is first read after the edit; an earlier build's report
    read after an in-place edit of a guarded dict shows what that build was given."""
    items: list[Any] = [{"role": "user" if k % 2 == 0 else "assistant", "content": f"m{k}"} for k in range(3 * GUARD)]
    builder = pipeline(10_000)
    builder.build({"messages": items})
    items[1]["content"] = "edited in place, long ago"
    items[1]["role"] = "system"
    again = builder.build({"messages": items})
    assert [m.text for m in again.messages if m.source == "history"][1] == "m1"
    small = pipeline(40)
    before = copy.deepcopy(items)
    first = small.build({"messages": items})
    items[-1]["content"] = "a streamed answer, grown"
    second = small.build({"messages": items})
    assert second.messages[-1].text == "a streamed answer, grown"
    fresh = pipeline(40).build({"messages": before})
    assert first.report.records == fresh.report.records
    assert [m.model_dump() for m in first.messages] == [m.model_dump() for m in fresh.messages]


def pipeline(budget: int) -> ContextBuilder:
    """The history and token_budget, counted by cl100k."""
    return ContextBuilder([History()], [TokenBudget()], TiktokenCounter("cl100k_base"), budget=budget)


def test_a_reused_stand_in_at_another_position_keeps_its_id_findable() -> None:
    """When an earlier item now makes several messages (an Anthropic turn with two results), the unchanged
    dicts after it keep their stand-ins (and ids, which name their item's index) at shifted positions:
    every id is still found, and the messages equal a fresh provider's."""
    items: list[Any] = [{"role": "user", "content": f"m{k}"} if k % 2 == 0 else {"role": "assistant", "content": f"m{k}"}
                        for k in range(6)]
    provider = History(annotate=False)
    provider.get_messages({"messages": items}, {})
    turn = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "one"},
                                        {"type": "tool_result", "tool_use_id": "t2", "content": "two"},
                                        {"type": "text", "text": "and now?"}]}
    changed = [turn, *items[1:]]
    out = provider.get_messages({"messages": changed}, {})
    fresh = History(annotate=False).get_messages({"messages": changed}, {})
    assert [m.model_dump() for m in out] == [m.model_dump() for m in fresh]
    assert len(out) == 8 and all(out.has_id(m.id) for m in fresh)  # type: ignore[attr-defined]
    assert type(structure_of(out)[3]).__name__ == "Stored"  # the old stand-in of item 1, now at position 3


def test_a_rebuild_keeps_the_contents_of_the_stand_ins_it_keeps_only() -> None:
    """A stand-in's content lives in the provider's store (a dict of strings: not tracked by the cyclic
    collector). A rebuild that keeps some stand-ins gives them a store with their contents only (the
    dropped items' texts are not kept alive), and every snapshot, old or new, still reads its own texts."""
    items: list[Any] = [{"role": "user" if k % 2 == 0 else "assistant", "content": f"text {k}"} for k in range(12)]
    provider = History(annotate=False)
    first = provider.get_messages({"messages": items}, {})  # not read before the rebuild: no memoised message
    old_texts = [f"text {k}" for k in range(12)]
    assert not gc.is_tracked(provider._contents) and len(provider._contents) == 12
    shorter = [*items[:4], {"role": "user", "content": "replaced"}, *items[5:8]]  # a new list: a rebuild
    second = provider.get_messages({"messages": shorter}, {})
    kept = [s for s in structure_of(second) if type(s).__name__ == "Stored"]
    assert len(kept) == 7 and sorted(provider._contents) == [s.index for s in kept]
    assert [m.model_dump() for m in second] == [m.model_dump() for m in History(annotate=False).get_messages(
        {"messages": shorter}, {})]
    assert [m.text for m in first] == old_texts  # the earlier snapshot, first read after the rebuild
    shorter.append({"role": "assistant", "content": "appended"})
    third = provider.get_messages({"messages": shorter}, {})
    assert [m.text for m in third][-2:] == ["text 7", "appended"] and [m.text for m in first] == old_texts


def test_a_stand_ins_id_is_kept_on_the_stand_in_not_in_the_contents_store() -> None:
    """Reading every stand-in's id (twice) gives the eager ids and leaves the provider's contents store
    holding only the texts, keyed by item index: an id is cached on its stand-in, never at a key of the store."""
    items: list[Any] = [{"role": "user" if k % 2 == 0 else "assistant", "content": f"text {k}"} for k in range(10)]
    provider = History(annotate=False)
    stored = structure_of(provider.get_messages({"messages": items}, {}))
    ids = [s.id for s in stored]
    assert ids == [s.id for s in stored] == [_stable_id(KEY, k, item) for k, item in enumerate(items)]
    assert provider._contents == {k: f"text {k}" for k in range(10)}
