"""A build's cost follows what is kept: tail-first counting, incremental caches, no history copies.

Counts are of real work (encoder calls of a real cl100k tiktoken encoding,
bytes allocated), never of wall-clock time. The hypothesis properties pin the
main risk of the caches: an incremental build must give exactly the output and
the report of a build from scratch, whatever happened to the history in between.
"""

from __future__ import annotations

import copy
import sys
import tracemalloc
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from unittest.mock import patch

import pytest
from ctxcore_counters import TiktokenCounter
from ctxcore_filters import RecallIndex, TokenBudget
from ctxcore_memory import SqliteMemoryStore
from ctxcore_providers import History, MemoryRecall, MemoryRecallConfig, RuntimeContext, StaticPrompt
from ctxcore_providers._render import context_message
from ctxcore_providers.history import GUARD
from ctxcore_providers.history import provider as history_provider
from ctxcore_providers.history import standins as history_standins
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxcore.engine.budget import CachedCounter, FilterContext
from ctxcore.engine.builder import BuiltContext, ContextBuilder
from ctxcore.engine.lazy import (
    Joined,
    LazyMessages,
    MessageChain,
    PrefixMemo,
    Snapshot,
    structure_of,
)
from ctxcore.engine.report import BuildReport
from ctxcore.errors import BudgetExceeded, CtxError
from ctxcore.model.messages import Message, ai, human, system, tool
from ctxcore.pipeline import Pipeline
from ctxcore.render import to_openai_responses
from ctxcore.render.target import TargetSpec

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from workload import as_messages, coding_agent_transcript  # noqa: E402

BUDGET = 8_000
PROMPT = StaticPrompt("You are a coding agent.")  # one instance: its message id is random per instance


class CountingTiktoken(TiktokenCounter):
    """The real cl100k counter, with its encoder wrapped to count calls."""

    def __init__(self) -> None:
        super().__init__("cl100k_base")
        self.calls = 0
        encode = self._encode

        def counted(text: str) -> list[int]:
            self.calls += 1
            return encode(text)

        self._encode = counted


def _fixed_clock() -> datetime:
    return datetime(2026, 3, 1, 9, 30, tzinfo=timezone.utc)


class Recalled:
    """A provider between the prompt and the history whose output follows ``state["recall"]``, as the agent
    preset's system part follows the memory recalled for each new user message: ``(kind, text)`` pairs, each a
    plain system message, a trusted (protected) system block or an untrusted (protected) user block."""

    def __init__(self) -> None:
        self._made: dict[tuple[tuple[str, str], ...], tuple[Message, ...]] = {}

    def get_messages(self, state: Any, runtime: Any) -> tuple[Message, ...]:
        spec = tuple(state.get("recall") or ())
        made = self._made.get(spec)
        if made is None:
            made = self._made[spec] = tuple(_recalled(kind, text) for kind, text in spec)
        return made if len(made) < 2 else tuple(made)  # a new tuple of the same messages, or the very same tuple


def _recalled(kind: str, text: str) -> Message:
    if kind == "system":
        return system(text, id=f"recall:{text}")
    return context_message(text, source_label="recalled memory", trust="trusted" if kind == "trusted" else "untrusted")


def agent_builder(
    counter: Any, budget: int = BUDGET, after: bool = False, before: bool = False, **budget_options: Any
) -> ContextBuilder:
    """The prompt, the history and token_budget; with ``after``, the agent preset's runtime_context after the history
    (a new current-turn message every build, read from ``state["input"]``; a fixed clock); with ``before``, a
    part between the prompt and the history whose output changes between builds (:class:`Recalled`)."""
    providers: list[Any] = [PROMPT, History()]
    if before:
        providers.insert(1, Recalled())
    if after:
        providers.append(RuntimeContext(clock=_fixed_clock))
    return ContextBuilder(
        providers,
        [TokenBudget(**budget_options)],
        counter,
        budget=budget,
    )


@pytest.fixture(scope="module")
def dict_transcript() -> list[dict[str, Any]]:
    return coding_agent_transcript(20_001)


@pytest.fixture(scope="module")
def transcript(dict_transcript: list[dict[str, Any]]) -> list[Message]:
    return as_messages(dict_transcript)


class TestTailFirst:
    def test_a_20000_message_build_tokenizes_only_what_it_inspects(self, transcript: list[Message]) -> None:
        """A cold 8,000-token build of 20,000 messages calls the encoder for a few dozen messages, not 20,000."""
        counter = CountingTiktoken()
        builder = agent_builder(counter)
        built = builder.build({"messages": transcript[:20_000]})
        report = built.report
        assert 0 < len(built.messages) < 100 and report.total_tokens <= BUDGET
        # Each message costs a few encoder calls (role, content, call ids and arguments).
        assert report.cache_misses < 100 and counter.calls < 400
        assert report.cache_misses >= len(built.messages) - 1  # everything kept was counted once (the prompt too)

    def test_a_next_turn_build_tokenizes_only_the_new_message(self, transcript: list[Message]) -> None:
        """After one more message, the next build tokenizes that message and nothing else."""
        counter = CountingTiktoken()
        builder = agent_builder(counter)
        history = transcript[:20_000]
        state = {"messages": history}
        builder.build(state)
        before = counter.calls
        history.append(transcript[20_000])
        built = builder.build(state)
        assert built.report.cache_misses == 1
        assert counter.calls - before <= 2 + 3 * len(transcript[20_000].tool_calls)
        assert built.messages[-1].id == transcript[20_000].id

    def test_a_next_turn_build_does_not_copy_the_history(self, transcript: list[Message]) -> None:
        """A next-turn build at 20,000 messages allocates well under 5 MB: pointers, not message copies."""
        builder = agent_builder(TiktokenCounter("cl100k_base"))
        history = transcript[:20_000]
        state = {"messages": history}
        builder.build(state)
        history.append(transcript[20_000])
        tracemalloc.start()
        try:
            builder.build(state)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert peak < 5_000_000

    def test_the_report_still_lists_every_dropped_message(self, transcript: list[Message]) -> None:
        """Drops are recorded as a range and listed on first read, with the same data a full walk gives."""
        builder = agent_builder(TiktokenCounter("cl100k_base"))
        built = builder.build({"messages": transcript[:2_000]})
        dropped = built.report.dropped
        kept = {m.id for m in built.messages}
        assert len(dropped) + len(kept) == 2_000 + 2  # the static prompt and the history explanation
        assert all(r.by == "token_budget" and r.source == "history" and r.tokens for r in dropped)
        assert [r.id for r in dropped] == [m.id for m in transcript[:2_000] if m.id not in kept]


class TestFixedCosts:
    """What a build costs per kept message beyond the request itself: nothing until somebody reads the report."""

    def test_output_records_are_made_when_the_report_is_read(self) -> None:
        """A build stores its output as recorded; the per-message records (with previews) appear on first read."""
        builder = agent_builder(TiktokenCounter("cl100k_base"))
        built = builder.build({"messages": [human("hello there"), ai("hi")]})
        report = built.report
        assert report._records == [] and report._output is not None
        records = report.records
        assert [r.fate for r in records] == ["kept"] * 3 and records[1].preview == "hello there"
        assert [r.position for r in report.kept] == [0, 1, 2] and report._output is None

    def test_the_same_message_object_is_keyed_once(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """A second count of the same object needs no cache key (the identity memo) and still counts as a hit."""
        from ctxcore.engine import budget as budget_module
        from ctxcore.engine.budget import CachedCounter

        counter = CachedCounter(TiktokenCounter("cl100k_base"))
        message = human("count me once")
        keys: list[Message] = []
        real = budget_module.count_key
        monkeypatch.setattr(budget_module, "count_key", lambda m: keys.append(m) or real(m))
        first = counter.count_message(message)
        assert counter.count_message(message) == first and len(keys) == 1
        assert (counter.hits, counter.misses) == (1, 1)
        assert counter.count_message(human("count me once")) == first and len(keys) == 2  # an equal object: the cache


class TestDictHistory:
    """OpenAI dicts cost what is new: no copy, comparison or conversion of the old ones per build."""

    def test_a_next_turn_over_dicts_converts_and_copies_only_the_new_dict(
        self, dict_transcript: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """After one appended dict the history provider takes one dict, converts it once (read), deep-copies one."""
        builder = agent_builder(TiktokenCounter("cl100k_base"))
        history = [dict(d) for d in dict_transcript[:20_000]]
        state = {"messages": history}
        builder.build(state)
        calls = {"taken": 0, "convert": 0, "copy": 0}
        convert, private_copy = Message.from_openai.__func__, history_provider.private_copy  # type: ignore[attr-defined]
        step, run, deferred = history_provider.History._step, history_provider.stand_in_run, history_standins.plain_message

        def counted_convert(cls: type[Message], data: Any, **kw: Any) -> Message:
            calls["convert"] += 1
            return convert(cls, data, **kw)

        def counted_deferred(*args: Any) -> Message:
            calls["convert"] += 1
            return deferred(*args)

        def counted_run(items: Any, start: int, *args: Any) -> int:
            stop: int = run(items, start, *args)
            calls["taken"] += stop - start  # stand-ins (the fast path): each message made when it is read
            return stop

        def counted_step(self: Any, items: Any, start: int, *args: Any) -> int:
            stop: int = step(self, items, start, *args)
            calls["taken"] += stop - start  # the reference path: converted now
            return stop

        def counted_copy(value: Any) -> Any:
            calls["copy"] += 1
            return private_copy(value)

        monkeypatch.setattr(Message, "from_openai", classmethod(counted_convert))
        monkeypatch.setattr(history_standins, "plain_message", counted_deferred)
        monkeypatch.setattr(history_provider, "stand_in_run", counted_run)
        monkeypatch.setattr(history_provider.History, "_step", counted_step)
        monkeypatch.setattr(history_provider, "private_copy", counted_copy)
        history.append(dict(dict_transcript[20_000]))
        tracemalloc.start()
        try:
            built = builder.build(state)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert calls == {"taken": 1, "convert": 1, "copy": 1}
        assert peak < 1_000_000  # pointers only: the goal of issue 16 (target 7 of make bench)
        assert built.messages[-1].text == Message.from_openai(dict_transcript[20_000]).text

    def test_an_in_place_edit_of_a_recent_dict_is_noticed(self) -> None:
        """A dict among the last GUARD items edited in place (a streamed answer) is converted again."""
        builder = agent_builder(TiktokenCounter("cl100k_base"))
        history: list[Any] = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "partial"}]
        builder.build({"messages": history})
        history[1]["content"] = "the whole answer"
        assert builder.build({"messages": history}).messages[-1].text == "the whole answer"

    def test_an_old_edit_is_noticed_through_a_new_list_and_a_new_dict(self) -> None:
        """The documented way to edit a message older than the guard: a new dict in a new list."""
        builder = agent_builder(TiktokenCounter("cl100k_base"), budget=100_000)
        history: list[Any] = [{"role": "user" if k % 2 == 0 else "assistant", "content": f"m{k}"} for k in range(3 * GUARD)]
        builder.build({"messages": history})
        history[1] = {**history[1], "content": "edited"}
        built = builder.build({"messages": list(history)})
        assert [m.text for m in built.messages if m.source == "history"][1] == "edited"

    def test_an_old_dict_edited_in_place_in_the_same_list_is_not_noticed(self) -> None:
        """The documented limit of the growth proof: older than GUARD, same list, same dict object."""
        builder = agent_builder(TiktokenCounter("cl100k_base"), budget=100_000)
        history: list[Any] = [{"role": "user" if k % 2 == 0 else "assistant", "content": f"m{k}"} for k in range(3 * GUARD)]
        builder.build({"messages": history})
        history[1]["content"] = "edited"
        built = builder.build({"messages": history})
        assert [m.text for m in built.messages if m.source == "history"][1] == "m1"
        assert agent_builder(TiktokenCounter("cl100k_base"), budget=100_000).build({"messages": history}).messages[2].text == "edited"


# ------------------------------------------------------------- equivalence
ROLES = st.sampled_from(["user", "assistant", "tool_unit", "system", "orphan"])
TEXT = st.text(alphabet="abc xyz[]<>", min_size=0, max_size=60)


@st.composite
def histories(draw: Any, max_units: int = 12) -> list[Message]:
    """Histories of users, assistants, tool units (1-3 parallel calls), and the odd system message,
    protected or prioritised message, orphan result or unanswered call."""
    out: list[Message] = []
    for u in range(draw(st.integers(0, max_units))):
        kind = draw(ROLES)
        extra: dict[str, Any] = {}
        if draw(st.integers(0, 9)) == 0:
            extra = draw(st.sampled_from([{"zone": "protected"}, {"priority": 5}, {"metadata": {"semantic_kind": ""}}]))
        text = draw(TEXT)
        if kind == "user":
            out.append(human(text or "hi", **extra))
        elif kind == "assistant":
            out.append(ai(text or "ok", **extra))
        elif kind == "system":
            out.append(system(text or "note", **{k: v for k, v in extra.items() if k != "zone"}))
        elif kind == "orphan":
            out.append(tool(text, tool_call_id=f"orphan{u}"))
        else:
            calls = draw(st.integers(1, 3))
            ids = [f"c{u}_{k}" for k in range(calls)]
            out.append(ai(tool_calls=[{"id": i, "name": "read", "arguments": {"p": text}} for i in ids], **extra))
            answered = ids if draw(st.integers(0, 7)) else ids[:-1]
            out.extend(tool(text * 3, tool_call_id=i) for i in answered)
    return out


def as_form(messages: list[Any], form: str) -> list[Any]:
    """Messages as a caller of another API holds them: ``openai`` chat dicts, ``anthropic`` dicts
    (tool results grouped into user turns, system messages left as chat dicts) or ``responses`` input items
    (one ``function_call`` item per call, one ``function_call_output`` per result)."""
    plain = list(History(annotate=False, neutralize_markers=False).get_messages({"messages": messages}, {}))
    if form == "openai":
        return [m.to_openai() for m in plain]
    if form == "responses":
        return to_openai_responses(plain)["input"]
    out: list[Any] = []
    for m in plain:
        if m.role == "tool":
            block = {"type": "tool_result", "tool_use_id": m.tool_call_id, "content": m.text}
            if out and isinstance(out[-1].get("content"), list) and out[-1]["content"][-1:] and out[-1]["content"][-1]["type"] == "tool_result":
                out[-1]["content"].append(block)
            else:
                out.append({"role": "user", "content": [block]})
        elif m.role == "assistant" and m.tool_calls:
            uses = [{"type": "tool_use", "id": c.id, "name": c.name, "input": c.parsed_arguments()} for c in m.tool_calls]
            out.append({"role": "assistant", "content": ([{"type": "text", "text": m.text}] if m.text else []) + uses})
        else:
            out.append(m.to_openai())
    return out


def mutate(history: list[Any], data: Any, form: str = "openai") -> list[Any]:
    """One random change: append, edit (in place among the last GUARD items), truncate, or a new list.

    An edit older than the history provider's guard goes with a new list and a new
    object: the documented way to edit an old message (see docs/providers.md).
    """
    op = data.draw(st.sampled_from(["append", "append", "append_dicts", "edit", "edit", "truncate", "replace", "dicts", "form", "same"]))
    if op == "append":
        history.extend(data.draw(histories(max_units=3)))
    elif op == "append_dicts":
        history.extend(as_form(data.draw(histories(max_units=3)), form))
    elif op == "edit" and history:
        k = data.draw(st.integers(max(0, len(history) - 2 * GUARD), len(history) - 1))
        old = history[k]
        recent = k >= len(history) - GUARD
        if isinstance(old, Message):  # a new object under the same id
            history[k] = old.model_copy(update={"content": "edited " + old.text})
        elif recent:  # a dict changed in place (a streamed answer, a retried request)
            old["content"] = "edited"
        else:
            history[k] = {**old, "content": "edited"}
        if not recent:
            history = list(history)
    elif op == "truncate" and history:
        del history[data.draw(st.integers(0, len(history) - 1)):]
    elif op == "replace":
        return [Message.model_validate(m.model_dump()) if isinstance(m, Message) else dict(m) for m in history]
    elif op == "dicts":
        return [m.to_openai() if isinstance(m, Message) else m for m in history]
    elif op == "form":  # the whole history handed over in another API's shape
        return as_form(history, data.draw(st.sampled_from(["openai", "anthropic", "responses"])))
    return history


def outcome(builder: ContextBuilder, history: list[Any], current: str | None = None, recall: Any = None) -> Any:
    """What a build returns, comparable across builders: messages and report, or the error.

    ``current`` is the current turn a runtime_context provider reads (``state["input"]``), ``recall``
    what a :class:`Recalled` provider before the history returns (``state["recall"]``).
    """
    state: dict[str, Any] = {"messages": history}
    if current is not None:
        state["input"] = current
    if recall is not None:
        state["recall"] = recall
    try:
        built: BuiltContext = builder.build(state)
    except CtxError as exc:
        return type(exc).__name__, str(exc)
    return read(built)


def read(built: BuiltContext) -> Any:
    """A build's messages and report (its records made now, on this first read), comparable across builders."""
    removed = built.report.removed_count  # before the records exist: read from the recorded ranges
    report = built.report.to_dict()
    assert removed == sum(1 for r in built.report.records if r.fate in ("dropped", "compressed"))
    report.pop("timings")
    report.pop("cache")
    return [m.model_dump() for m in built.messages], report


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(start=histories(), budget=st.integers(40, 400), data=st.data())
def test_incremental_builds_equal_builds_from_scratch(start: list[Message], budget: int, data: Any) -> None:
    """Whatever happens to the history (Messages, OpenAI chat dicts, Anthropic dicts or Responses items,
    appended, edited in place, truncated, handed over anew) between builds, a reused builder gives exactly
    a fresh builder's result. With a provider after the history (runtime_context: a new current turn, the
    same one again, or none), and with a provider before it whose output changes between builds (other text,
    one message or two, protected or not, or nothing), too."""
    counter = TiktokenCounter("cl100k_base")
    options = data.draw(st.sampled_from([{}, {"on_overflow": "warn"}, {"trim_from_start": False}]))
    after, before = data.draw(st.booleans()), data.draw(st.booleans())
    reused = agent_builder(counter, budget, after, before, **options)
    form = data.draw(st.sampled_from(["Message", "openai", "anthropic", "responses"]))
    history: list[Any] = list(start) if form == "Message" else as_form(start, form)
    for turn in range(data.draw(st.integers(1, 5)) + 1):
        if turn:
            history = mutate(history, data, "openai" if form == "Message" else form)
        current = data.draw(CURRENT) if after else None
        recall = data.draw(RECALL) if before else None
        fresh = agent_builder(counter, budget, after, before, **options)
        assert outcome(reused, history, current, recall) == outcome(fresh, history, current, recall)


#: the current turn runtime_context reads: a few texts (so the same one comes again), or none.
CURRENT = st.one_of(st.none(), st.sampled_from(["next?", "and then", "why"]), st.text(max_size=30))
#: what a Recalled provider returns: nothing, or one or two messages of a few kinds and texts (so the same comes again).
RECALL = st.one_of(st.none(), st.lists(st.tuples(st.sampled_from(["system", "trusted", "untrusted"]),
                                                 st.sampled_from(["Priya uses Neovim", "deploys on Tuesdays", "x"])),
                                       min_size=1, max_size=2, unique=True))  # one id once (the report keys records by id)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(start=histories(), budget=st.integers(40, 400), data=st.data())
def test_an_earlier_build_does_not_change_when_the_history_changes_afterwards(start: list[Message], budget: int, data: Any) -> None:
    """The history provider and the chain share append-only lists across builds (snapshots read through a
    length, engine.lazy.Snapshot): whatever happens to the state's list afterwards (appends, edits in place,
    truncation, a new list, another API's form), an earlier build's messages and report, read only at the
    end, are what a fresh builder gave for the history as it was then."""
    counter = TiktokenCounter("cl100k_base")
    options = data.draw(st.sampled_from([{}, {"on_overflow": "warn"}]))
    reused = agent_builder(counter, budget, **options)
    form = data.draw(st.sampled_from(["Message", "openai", "anthropic", "responses"]))
    history: list[Any] = list(start) if form == "Message" else as_form(start, form)
    builds: list[tuple[BuiltContext, Any]] = []
    for _ in range(data.draw(st.integers(2, 6))):
        try:
            built = reused.build({"messages": history})
        except CtxError:
            built = None
        if built is not None:  # read the report only at the end; a fresh build of a private copy, read now
            builds.append((built, outcome(agent_builder(counter, budget, **options), copy.deepcopy(history))))
        history = mutate(history, data, "openai" if form == "Message" else form)
    for built, expected in builds:
        assert read(built) == expected


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(start=histories(max_units=60), budget=st.integers(40, 300), data=st.data())
def test_a_long_dict_history_read_late_is_what_was_built(start: list[Message], budget: int, data: Any) -> None:
    """Plain chat dicts are kept as stand-ins until read (history.standins.Stored): with most of a long dict history
    dropped, every build's messages and report (the dropped records' ids, previews and tokens made only now),
    read after later appends, in-place edits of the newest dicts and other changes, are what a fresh builder
    gave for the history as it was then."""
    counter = TiktokenCounter("cl100k_base")
    reused = agent_builder(counter, budget, on_overflow="warn")
    history: list[Any] = as_form(start, "openai")
    builds: list[tuple[BuiltContext, Any]] = []
    for _ in range(data.draw(st.integers(2, 5))):
        try:
            built = reused.build({"messages": history})
        except CtxError:  # an illegal current turn (an orphan result): the fresh builder agrees (the property above)
            built = None
        if built is not None:
            builds.append((built, outcome(agent_builder(counter, budget, on_overflow="warn"), copy.deepcopy(history))))
        history = mutate(history, data, "openai")
        history.extend(as_form(data.draw(histories(max_units=2)), "openai"))
    for built, expected in builds:
        assert read(built) == expected


@st.composite
def conversation_steps(draw: Any) -> list[list[Message]]:
    """The appends of a legal conversation: user and assistant messages and tool runs (1-3 parallel calls),
    a run's call and results sometimes appended in separate steps, as an agent loop does."""
    steps: list[list[Message]] = []
    for u in range(draw(st.integers(1, 24))):
        kind = draw(st.sampled_from(["user", "assistant", "tools"]))
        text = draw(TEXT)
        if kind == "user":
            steps.append([human(text or "hi")])
        elif kind == "assistant":
            steps.append([ai(text or "ok")])
        else:
            ids = [f"t{u}_{k}" for k in range(draw(st.integers(1, 3)))]
            call = ai(tool_calls=[{"id": i, "name": "read", "arguments": {"p": text}} for i in ids])
            results = [tool(text * draw(st.integers(1, 9)), tool_call_id=i) for i in ids]
            cut = draw(st.integers(0, len(results)))
            steps.extend([[call, *results[:cut]], results[cut:]] if cut < len(results) else [[call, *results]])
        if not draw(st.integers(0, 11)):  # a message the repair step fixes or drops once it is in the past
            steps.append([draw(st.sampled_from(POISON))()])
    return steps


#: past messages OpenAI cannot take: the builder's repair step drops or fixes them (render.repair).
POISON = [
    lambda: Message.from_openai({"role": "assistant", "content": None}),
    lambda: Message.from_openai({"role": "user", "content": []}),
    lambda: Message.from_openai({"role": "system", "content": None}),
]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(steps=conversation_steps(), budget=st.integers(40, 900), dicts=st.booleans(), data=st.data())
def test_next_turns_reuse_the_last_window_exactly(steps: list[list[Message]], budget: int, dicts: bool, data: Any) -> None:
    """A history that only grows (the next turns of a conversation, a tool run's results in a later step,
    the odd message the repair step must fix once it is past): every build, reusing the last build's kept
    window and output checks (engine.reuse), equals a fresh builder's build, under every target setting,
    with or without a provider after the history (runtime_context's new current turn) and one before it whose
    output changes between builds (Recalled)."""
    counter = TiktokenCounter("cl100k_base")
    target = data.draw(st.sampled_from(TARGETS))
    pairing = data.draw(st.booleans())
    after, before = data.draw(st.booleans()), data.draw(st.booleans())

    def builder() -> ContextBuilder:
        b = agent_builder(counter, budget, after, before, on_overflow="warn")
        b.target, b.check_pairing = target, pairing
        return b

    reused = builder()
    history: list[Any] = []
    for step in steps:
        history.extend(m.to_openai() for m in step) if dicts else history.extend(step)
        if step[0].role != "tool" and not data.draw(st.integers(0, 3)):
            continue  # not every append is followed by a build
        current = data.draw(CURRENT) if after else None
        recall = data.draw(RECALL) if before else None
        assert outcome(reused, history, current, recall) == outcome(builder(), history, current, recall)


TARGETS = [
    TargetSpec(),
    TargetSpec(),  # the default, twice as likely
    TargetSpec(recover_user=True),
    TargetSpec(sanitize="off"),
    TargetSpec(legal_start=False),
    TargetSpec(validate_request=False),
    TargetSpec(provider="anthropic"),
]


class TestWindowReuse:
    def test_a_next_turn_walks_only_the_new_units(self, transcript: list[Message], monkeypatch: Any) -> None:
        """After one appended message, token_budget groups only that message's unit; the older kept units
        come from the last window, and the window is the one a fresh builder keeps."""
        counter = TiktokenCounter("cl100k_base")
        builder = agent_builder(counter, 32_000)
        history = transcript[:2_000]
        state = {"messages": history}
        builder.build(state)
        history.append(human("one more question"))
        module = sys.modules["ctxcore_filters.token_window"]
        units = module._units_newest_first
        walked: list[int] = []

        def counting(structure: Any, floor: int) -> Any:
            for unit in units(structure, floor):
                walked.append(unit.start)
                yield unit

        monkeypatch.setattr(module, "_units_newest_first", counting)
        built = builder.build(state)
        assert len(walked) <= 2  # the new unit, and the one that may be found not to fit
        fresh = agent_builder(counter, 32_000).build(state)
        assert built.messages == fresh.messages and len(built.messages) > 50


    def test_the_pinned_prefix_is_taken_from_the_last_window(self, transcript: list[Message]) -> None:
        """A next turn reads and counts the pinned prompt again only when it changed; the window is a fresh
        builder's either way."""

        class Prompt:
            def __init__(self) -> None:
                self.out = (system("be brief"),)

            def get_messages(self, state: Any, runtime: Any) -> Any:
                return self.out

        prompt = Prompt()
        counter = TiktokenCounter("cl100k_base")

        def builder() -> ContextBuilder:
            return ContextBuilder([prompt, History()], [TokenBudget()], counter, budget=8_000)

        reused = builder()
        asked: list[str | None] = []
        count = reused.counter.count_message

        def recording(m: Message) -> int:
            asked.append(m.source)
            return count(m)

        reused.counter.count_message = recording  # type: ignore[method-assign]
        history = transcript[:300]
        state = {"messages": history}
        reused.build(state)
        history.append(human("one more question"))
        asked.clear()
        built = reused.build(state)
        assert "prompt" not in asked and built.messages == builder().build(state).messages
        prompt.out = (system("be brief, and cite the file you read " * 40),)  # a longer prompt: less room for the rest
        history.append(human("and another"))
        asked.clear()
        changed = reused.build(state)
        assert "prompt" in asked and changed.messages == builder().build(state).messages
        assert changed.messages[0].text.startswith("be brief, and cite")


SLICE_BOUND = st.one_of(st.none(), st.integers(-15, 15))


@settings(max_examples=200, deadline=None)
@given(n=st.integers(0, 10), data=st.data())
def test_a_snapshot_reads_the_prefix_it_was_taken_of_after_any_appends(n: int, data: Any) -> None:
    """A Snapshot indexes, slices (any step), iterates, reverses and compares exactly like the prefix of
    its list it was taken of, however much is appended to the list afterwards."""
    items = [human(str(k), id=str(k)) for k in range(n)]
    length = data.draw(st.integers(0, n))
    snapshot = Snapshot(items, length)
    expected = items[:length]
    items.extend(human(f"later {k}") for k in range(data.draw(st.integers(0, 5))))
    assert len(snapshot) == length and list(snapshot) == expected and snapshot.tolist() == expected
    assert list(reversed(snapshot)) == expected[::-1] and snapshot == expected and snapshot == Snapshot(expected)
    for _ in range(5):
        cut = slice(data.draw(SLICE_BOUND), data.draw(SLICE_BOUND), data.draw(st.sampled_from([None, 1, 2, -1, -2, 3])))
        assert snapshot[cut] == expected[cut]
        index = data.draw(st.integers(-length - 2, length + 1))
        if -length <= index < length:
            assert snapshot[index] is expected[index]
        else:
            with pytest.raises(IndexError):
                snapshot[index]
    later = Snapshot(items)
    assert later.extends(snapshot) and snapshot.extends(later) == (len(items) == length)
    assert not Snapshot(list(items)).extends(snapshot)  # another list proves nothing, whatever it holds
    with pytest.raises(ValueError):
        Snapshot(items, len(items) + 1)


class TestLazyPieces:
    def test_lazy_messages_transform_once_and_only_when_read(self) -> None:
        """A transform runs on first read of a message and its result is reused by later sequences."""
        calls: list[str] = []

        def shout(m: Message) -> Message:
            calls.append(m.id)
            return m.model_copy(update={"content": m.text.upper()})

        stored = [human("a", id="a"), human("b", id="b")]
        memo: dict[int, tuple[Message, Message]] = {}
        lazy = LazyMessages(stored, [(shout, memo)])
        assert len(lazy) == 2 and calls == []
        assert lazy[-1].text == "B" and calls == ["b"]
        again = LazyMessages(list(stored), [(shout, memo)])
        assert again[1] is lazy[1] and [m.text for m in again] == ["A", "B"] and calls == ["b", "a"]
        assert lazy.has_id("a") and not lazy.has_id("c") and lazy == [again[0], again[1]]

    def test_chain_reads_across_parts(self) -> None:
        """A chain indexes, slices and iterates its parts as one sequence."""
        a, b, c = human("a", id="a"), human("b", id="b"), human("c", id="c")
        chain = MessageChain([LazyMessages([a]), [], LazyMessages([b, c])])
        assert len(chain) == 3 and chain[0] is a and chain[-1] is c and chain[1:] == [b, c]
        assert list(chain) == [a, b, c] and chain.structure == [a, b, c] and chain.has_id("b")
        with pytest.raises(IndexError):
            chain[3]

    def test_prefix_memo_resumes_only_after_an_unchanged_prefix(self) -> None:
        """The walk resumes after the old items when they are unchanged, and restarts otherwise."""
        memo: PrefixMemo[int] = PrefixMemo()
        items = [human(str(k), id=str(k)) for k in range(4)]
        assert memo.resume(items) == (None, 0)
        memo.save(items[:3], 3)
        assert memo.resume(items) == (3, 3)
        assert memo.resume(items[:2]) == (None, 0)
        assert memo.resume([items[0], human("x", id="x"), *items[2:]]) == (None, 0)


#: how a part of a chain changes from one build to the next (see test_a_join_reads_and_proves_as_its_parts_joined)
PART_CHANGES = ["same", "grown", "rebuilt", "replaced"]


@st.composite
def joined_parts(draw: Any) -> tuple[list[Any], list[str]]:
    """Parts of a chain (plain lists, snapshots of a longer append-only list, empty ones) and how each changes."""
    parts: list[Any] = []
    for k in range(draw(st.integers(0, 4))):
        items = [human(f"{k}.{i}", id=f"{k}.{i}") for i in range(draw(st.integers(0, 4)))]
        if draw(st.booleans()):
            length = draw(st.integers(0, len(items)))
            parts.append(Snapshot(items, length))  # the list already holds more than the snapshot reads
        else:
            parts.append(items)
    return parts, draw(st.lists(st.sampled_from(PART_CHANGES), min_size=len(parts), max_size=len(parts)))


@settings(max_examples=200, deadline=None)
@given(drawn=joined_parts(), cut=st.tuples(st.integers(-12, 12) | st.none(), st.integers(-12, 12) | st.none(),
                                           st.sampled_from([None, 1, 2, -1, -3])))
def test_a_join_reads_and_proves_as_its_parts_joined(drawn: tuple[list[Any], list[str]], cut: Any) -> None:
    """A Joined reads exactly as its parts' items concatenated (index, slice, iteration, backwards, equality); a
    later join of changed parts (the same part, a snapshot grown on its list, the same objects in a new list, or
    other messages) proves only what it holds at the same places, never more; appends change no earlier join."""
    parts, changes = drawn
    flat = [m for p in parts for m in p]
    joined = Joined(parts)
    assert len(joined) == len(flat) and list(joined) == flat and list(reversed(joined)) == flat[::-1]
    assert all(joined[i] is flat[i] for i in range(-len(flat), len(flat)))
    for bad in (len(flat), -len(flat) - 1):
        with pytest.raises(IndexError):
            joined[bad]
    assert joined[slice(*cut)] == flat[slice(*cut)] and joined.tolist() == flat and joined == flat
    later: list[Any] = []
    for k, (part, change) in enumerate(zip(parts, changes, strict=True)):
        if change == "grown" and isinstance(part, Snapshot):
            part.items.append(human(f"new {k}", id=f"new {k}"))  # an append past what any snapshot read
            later.append(Snapshot(part.items))
        elif change == "rebuilt":
            later.append(list(part))
        elif change == "replaced":
            later.append([human(f"other {k}", id=f"other {k}")])
        else:
            later.append(part)
    proved = Joined(later)
    shared = proved.shares(joined)
    assert list(joined) == flat and len(joined) == len(flat)  # the appends did not reach the earlier join
    assert 0 <= shared <= len(flat) and all(proved[i] is flat[i] for i in range(shared))
    assert proved.extends(joined) == (shared == len(flat))
    grows = [c == "grown" and isinstance(p, Snapshot) for p, c in zip(parts, changes, strict=True)]
    if "replaced" not in changes and not any(grows[:-1]):
        assert proved.extends(joined)  # the same objects and appends to the last part: proven, nothing compared
    assert joined.shares(joined) == len(flat) and proved.shares(flat) == 0  # a plain list proves nothing


class TestExtensionProofs:
    """One prefix check (by the history provider) serves every later walk of the build."""

    def test_history_structure_proves_it_extends_the_last_one_only_after_appends(self) -> None:
        """The history's snapshots share one append-only list while the state only grows; an edit makes a new list."""
        provider = History()
        items = [human("a", id="a"), ai("b", id="b")]
        first = structure_of(provider.get_messages({"messages": items}, {}))
        items.append(human("c", id="c"))
        second = structure_of(provider.get_messages({"messages": items}, {}))
        assert isinstance(first, Snapshot) and isinstance(second, Snapshot)
        assert second.extends(first) and second.items is first.items
        assert [m.id for m in first] == ["a", "b"] and len(first) == 2  # the earlier snapshot did not grow
        items[0] = human("edited", id="a")
        third = structure_of(provider.get_messages({"messages": items}, {}))
        assert isinstance(third, Snapshot) and not third.extends(second) and third.items is not second.items
        assert [m.text for m in second] == ["a", "b", "c"]  # the edit is not seen through the old snapshot

    def test_chain_extends_previous_only_when_earlier_parts_are_unchanged(self) -> None:
        """A chain proves by its parts that it extends an earlier chain, copies no pointer, and changes nothing."""
        sys_a = [system("s", id="s")]
        store = [human("a", id="a")]
        old = Snapshot(store)
        store.append(human("b", id="b"))
        grown = Snapshot(store)
        previous = MessageChain([LazyMessages(list(sys_a)), LazyMessages(old)])
        chain = MessageChain([LazyMessages(list(sys_a)), LazyMessages(grown)])
        assert chain.structure.extends(previous.structure)
        assert [m.id for m in previous.structure] == ["s", "a"] and [m.id for m in chain.structure] == ["s", "a", "b"]
        other_prompt = MessageChain([LazyMessages([system("t", id="t")]), LazyMessages(grown)])
        assert not other_prompt.structure.extends(previous.structure)
        unproven = MessageChain([LazyMessages(list(sys_a)), LazyMessages([*old, human("b", id="b")])])
        assert not unproven.structure.extends(previous.structure)
        # a chain two appends later still proves it extends the first
        assert isinstance(chain.structure, Joined)
        store.append(human("c", id="c"))
        later = MessageChain([LazyMessages(list(sys_a)), LazyMessages(Snapshot(store))])
        assert later.structure.extends(previous.structure) and later.structure.extends(chain.structure)
        assert [m.id for m in previous.structure] == ["s", "a"] and [m.id for m in chain.structure] == ["s", "a", "b"]
        assert chain.structure.tolist() == [*sys_a, *store[:2]]

    @pytest.mark.parametrize("after", [False, True])
    def test_a_next_turn_copies_no_history_list(self, after: bool) -> None:
        """After an append, the history's snapshot is of the last build's list, grown in place (only the new
        message copied), and the chain joins it without a list of pointers, with or without a new part after
        the history; the last build still reads its own length."""
        builder = agent_builder(TiktokenCounter("cl100k_base"), 4_000, after=after)
        history = [m.to_openai() for m in as_messages(coding_agent_transcript(300))]
        state = {"messages": history, "input": "go"}
        chains: list[MessageChain] = []
        finish = builder._finish
        builder._finish = lambda chain, *rest: (chains.append(chain), finish(chain, *rest))[1]  # type: ignore[method-assign]
        first = builder.build(state)
        history.append({"role": "user", "content": "one more"})
        state["input"] = "go on"
        second = builder.build(state)
        chain, grown = chains
        assert len(grown) == len(chain) + 1
        old_history, new_history = chain.parts[1].structure, grown.parts[1].structure
        assert new_history.extends(old_history) and new_history.items is old_history.items
        assert isinstance(grown.structure, Joined) and grown.structure.parts[1][1] is new_history
        assert grown.structure.extends(chain.structure) is not after  # a new current turn: shared up to it
        assert grown.structure.shares(chain.structure) == (chain.structure.parts[-1][0] if after else len(chain))
        assert first.report.removed_count == len(chain) - len(first.messages)  # the old build's length, not the list's
        assert second.messages[-1 - after].text == "one more" and all(m.text != "one more" for m in first.messages)

    def test_history_ids_of_a_snapshot_are_its_own(self) -> None:
        """An earlier result's has_id does not see ids appended later (nor lose ids when the provider
        takes back a run of Responses calls to join a new call to it)."""
        provider = History(annotate=False)
        items: list[Any] = [{"role": "user", "content": "q"}, {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"}]
        first = provider.get_messages({"messages": items}, {})
        assert isinstance(first, LazyMessages)
        ids = [m.id for m in first]
        items.append({"type": "function_call", "call_id": "c2", "name": "f", "arguments": "{}"})  # joins the open run
        items.append({"role": "user", "content": "r"})
        second = provider.get_messages({"messages": items}, {})
        assert isinstance(second, LazyMessages) and len(second) == 3
        assert [m.id for m in first] == ids and all(map(first.has_id, ids))
        assert not first.has_id(second[-1].id) and second.has_id(second[-1].id)
        assert len(first[1].tool_calls) == 1 and len(second[1].tool_calls) == 2

    def test_prefix_memo_trusts_a_snapshot_of_the_same_list_and_compares_otherwise(self) -> None:
        """A snapshot of the list seen resumes without a comparison; another list is compared."""
        memo: PrefixMemo[int] = PrefixMemo()
        store = [human(str(k), id=str(k)) for k in range(3)]
        memo.save(Snapshot(store), 7)
        store.append(human("n", id="n"))
        assert memo.resume(Snapshot(store)) == (7, 3)
        assert memo.resume(Snapshot([*store[:2], human("x", id="x"), human("n", id="n")])) == (None, 0)
        assert memo.resume([*store]) == (7, 3)  # an equal list: compared, same answer

    def test_a_chain_with_a_new_last_part_proves_what_it_shares(self) -> None:
        """A new last part (a provider after the history) stops the in-place growth, but the chain still proves,
        by its parts, that it shares the previous chain's items up to the old last part."""
        sys_a = [system("s", id="s")]
        store = [human("a", id="a")]
        old = Snapshot(store)
        store.append(ai("b", id="b"))
        previous = MessageChain([LazyMessages(list(sys_a)), LazyMessages(old), [human("now 1", id="n1")]])
        chain = MessageChain([LazyMessages(list(sys_a)), LazyMessages(Snapshot(store)), [human("now 2", id="n2")]])
        assert not chain.structure.extends(previous.structure) and chain.structure.shares(previous.structure) == 2
        assert [m.id for m in chain.structure] == ["s", "a", "b", "n2"]
        edited = MessageChain([LazyMessages(list(sys_a)), LazyMessages(Snapshot([human("x", id="a"), *store[1:]])),
                               [human("now 2", id="n2")]])
        assert edited.structure.shares(previous.structure) == 1  # only the prompt: the history is a new list
        other_prompt = MessageChain([LazyMessages([system("t", id="t")]), LazyMessages(Snapshot(store))])
        assert other_prompt.structure.shares(previous.structure) == 0

    def test_a_walk_resumes_each_part_entered_in_the_same_state(self) -> None:
        """PrefixMemo.walk re-walks a changed part before the history (other text, other length) and resumes the
        history at its old end while it is entered in the state it was entered in last time, and not otherwise."""
        store = [human("a", id="a"), ai("b", id="b")]
        memo: PrefixMemo[tuple[str, ...]] = PrefixMemo()
        walked: list[str] = []

        def step(state: tuple[str, ...], part: Any) -> tuple[str, ...]:  # the open "calls": ids ending in "?"
            walked.extend(m.id for m in part)
            return tuple(i for i in (*state, *(m.id for m in part)) if i.endswith("?"))

        previous = MessageChain([LazyMessages([system("s1", id="s1")]), LazyMessages(Snapshot(store)), [human("n1", id="n1")]])
        assert memo.walk(previous.structure, (), step) == () and walked == ["s1", "a", "b", "n1"]
        store.append(human("c", id="c"))
        walked.clear()
        chain = MessageChain([LazyMessages([system("s2", id="s2"), human("r", id="r")]), LazyMessages(Snapshot(store)),
                              [human("n2", id="n2")]])
        assert memo.walk(chain.structure, (), step) == () and walked == ["s2", "r", "c", "n2"]
        walked.clear()
        opened = MessageChain([LazyMessages([system("s3?", id="s3?")]), LazyMessages(Snapshot(store)),
                               [human("n2", id="n2")]])
        assert memo.walk(opened.structure, (), step) == ("s3?",)  # the history entered in another state: walked again
        assert walked == ["s3?", "a", "b", "c", "n2"]
        walked.clear()
        assert memo.walk(opened.structure, (), step, start=1) == () and walked == ["a", "b", "c", "n2"]  # another start


def count_walks(monkeypatch: Any, **more: int) -> dict[str, int]:
    """Count the messages the builder's legality walk and token_budget's shape check read, from now on.

    Returns the counts (``legality``, ``shape`` and the keys of ``more``, for the
    caller's own counters), which the walks add to as they run.
    """
    builder_module = sys.modules[ContextBuilder.__module__]
    budget_module = sys.modules[TokenBudget.__module__]
    walked = {"legality": 0, "shape": 0, **more}
    legality, shape = builder_module.open_calls_after, budget_module._shape_step

    def counted_legality(messages: Any, pending: Any = frozenset()) -> Any:
        walked["legality"] += len(messages)
        return legality(messages, pending)

    def counted_shape(state: Any, tail: Any) -> Any:
        walked["shape"] += len(tail)
        return shape(state, tail)

    monkeypatch.setattr(builder_module, "open_calls_after", counted_legality)
    monkeypatch.setattr(budget_module, "_shape_step", counted_shape)
    return walked


class TestProviderAfterHistory:
    """The agent preset's runtime_context after the history: a next turn walks only what is new."""

    def test_a_next_turn_walks_only_the_new_messages_for_legality_and_shape(
        self, transcript: list[Message], monkeypatch: Any
    ) -> None:
        window_module = sys.modules["ctxcore_filters.token_window"]
        walked = count_walks(monkeypatch, units=0)
        units = window_module._units_newest_first

        def counted_units(structure: Any, floor: int) -> Any:
            for unit in units(structure, floor):
                walked["units"] += 1
                yield unit

        monkeypatch.setattr(window_module, "_units_newest_first", counted_units)
        counter = TiktokenCounter("cl100k_base")
        builder = agent_builder(counter, 32_000, after=True)
        history = [m.to_openai() for m in transcript[:3_000]]
        state: dict[str, Any] = {"messages": history, "input": "first"}
        builder.build(state)
        assert walked["legality"] > 3_000 and walked["shape"] > 3_000  # the cold build walks everything once
        assert walked["units"] > 50  # the kept window's units
        for turn in range(3):
            walked.update(legality=0, shape=0, units=0)
            history.append({"role": "user", "content": f"q{turn}"})
            history.append({"role": "assistant", "content": f"a{turn}"})
            state["input"] = f"question {turn}"
            built = builder.build(state)
            # two new history messages and the current turn; token_budget groups their units (and the one found
            # not to fit) and takes the older kept units from the last window
            assert walked["legality"] == 3 and walked["shape"] == 3 and walked["units"] <= 4
            fresh = agent_builder(counter, 32_000, after=True).build(state)
            assert read(built) == read(fresh)


class TestProviderBeforeHistory:
    """A part before the history whose output changes every build (the agent preset's recalled memory):
    the walks resume the history part by part, and token_budget keeps the protected block tail-first."""

    def test_a_new_recall_walks_only_the_prompt_parts_and_the_new_messages(
        self, transcript: list[Message], monkeypatch: Any, tmp_path: Path
    ) -> None:
        """With memory_recall (a real SQLite store) before the history and runtime_context after it, each next turn
        recalls other memories (another block, or none) and the legality and shape walks read only the changed
        parts and the new messages; token_budget stays tail-first (its linear path is never taken)."""
        budget_module = sys.modules[TokenBudget.__module__]
        walked = count_walks(monkeypatch, classify=0)
        classify = budget_module._classify

        def counted_classify(units: Any, rest: Any) -> Any:
            walked["classify"] += len(units)
            return classify(units, rest)

        monkeypatch.setattr(budget_module, "_classify", counted_classify)
        store = SqliteMemoryStore(tmp_path / "memory.db")
        for text in ("Priya uses Neovim with tabs", "Deploys happen on Tuesdays and Thursdays", "The staging database is PostgreSQL 15"):
            store.record(text)

        def builder() -> ContextBuilder:
            recall = MemoryRecall(MemoryRecallConfig(store=store))
            providers = [PROMPT, recall, History(), RuntimeContext(clock=_fixed_clock)]
            return ContextBuilder(providers, [TokenBudget()], TiktokenCounter("cl100k_base"), budget=32_000)

        reused = builder()
        history = [m.to_openai() for m in transcript[:3_000]]
        state: dict[str, Any] = {"messages": history, "input": "which editor?"}
        reused.build(state)
        assert walked["legality"] > 3_000 and walked["shape"] > 3_000  # the cold build walks everything once
        for turn, question in enumerate(["when do we deploy?", "nothing matches this", "which database on staging?"]):
            walked.update(legality=0, shape=0, classify=0)
            history.append({"role": "user", "content": f"q{turn}"})
            history.append({"role": "assistant", "content": f"a{turn}"})
            state["input"] = question
            built = reused.build(state)
            recalled = [m for m in built.messages if m.metadata.get("context_kind") == "memory_recall"]
            assert len(recalled) == (turn != 1)  # the recalled block changes (none for a query that matches nothing)
            # the prompt (1), the recalled block (0 or 1), two new history messages, the current turn
            assert walked["legality"] <= 5 and walked["shape"] <= 4 and walked["classify"] == 0
            assert read(built) == read(builder().build(state))


@st.composite
def protected_runs(draw: Any) -> list[Message]:
    """Protected one-message units right after the prompt, as the agent preset's system part holds them,
    and sometimes a protected tool call whose (unprotected) results follow: a unit longer than one message."""
    kinds = draw(st.lists(st.sampled_from(["trusted", "untrusted", "user"]), max_size=3))
    out = [human(f"remember {k}", id=f"p{k}", zone="protected") if kind == "user" else _recalled(kind, f"block {k} " * k)
           for k, kind in enumerate(kinds)]
    if draw(st.integers(0, 3)) == 0:
        out.append(ai(tool_calls=[{"id": "pc", "name": "read", "arguments": {}}], id="pcall", zone="protected"))
        out.append(tool("the file " * draw(st.integers(1, 30)), tool_call_id="pc", id="presult"))
    return out


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(lead=protected_runs(), history=histories(), budget=st.integers(20, 400), warn=st.booleans())
def test_a_protected_run_after_the_prompt_is_kept_as_protected_units_are(
    lead: list[Message], history: list[Message], budget: int, warn: bool
) -> None:
    """token_budget's tail-first walk, keeping a protected run right after the pinned prefix with it, returns
    (or raises) exactly what its general path (protected units always kept, the rest by priority) does."""
    budget_module = sys.modules[TokenBudget.__module__]
    messages = [system("You are a coding agent.", id="prompt"), *lead, *history]
    options: dict[str, Any] = {"on_overflow": "warn" if warn else "raise"}

    def run(general: bool) -> Any:
        ctx = FilterContext(counter=CachedCounter(TiktokenCounter("cl100k_base")), budget=budget, runtime={},
                            report=BuildReport(budget=budget), step_id="token_budget")
        try:
            if general:  # no protected run: its messages are protected units after the prefix, so the general path runs
                with patch.object(budget_module, "_protected_run", lambda structure, start: start):
                    kept = TokenBudget(**options).apply(messages, ctx)
            else:
                kept = TokenBudget(**options).apply(messages, ctx)
        except BudgetExceeded as exc:
            return str(exc), exc.required
        return [m.id for m in kept], ctx.report.warnings if ctx.report is not None else None

    assert run(False) == run(True)


def _recall_history(n: int = 60) -> list[Message]:
    """Filler turns with one fact early on, for the recall cost test."""
    filler = "we talked about cooking pasta with garlic and basil in the oven tonight"
    messages: list[Message] = [human("My sister Clara moved to Lisbon last spring."), ai("Noted.")]
    for i in range(1, n):
        messages += [human(f"turn {i}: {filler}"), ai(f"answer {i}: {filler}")]
    return messages


class TestRecallCost:
    def test_a_next_turn_of_a_pipeline_reads_only_the_new_messages(self, monkeypatch, host) -> None:
        """Through a YAML pipeline's lazy history, the second build indexes the two new messages and slices nothing more."""
        pipe = Pipeline.from_string("""
version: 1
model: {context_window: 500, reserve_output_tokens: 0}
counter: {type: approximate}
providers: [history]
filters: [token_budget, recall]
""", host=host)
        state = {"messages": [m.to_openai() for m in _recall_history()] + [{"role": "user", "content": "Where did Clara move?"}]}
        extended: list[int] = []
        extend = RecallIndex._extend
        monkeypatch.setattr(RecallIndex, "_extend", lambda self, items, messages: (extended.append(len(items)),
                                                                                    extend(self, items, messages))[1])
        pipe.build(state)
        state["messages"] += [{"role": "assistant", "content": "Lisbon."}, {"role": "user", "content": "And the oven?"}]
        sliced: list[int] = []
        cut = Joined._slice
        monkeypatch.setattr(Joined, "_slice", lambda self, a, b, step: (sliced.append(b - a), cut(self, a, b, step))[1])
        pipe.build(state)
        assert extended == [len(state["messages"]) - 2, 2]
        assert max(sliced, default=0) < len(state["messages"]) // 2  # no copy of the history, only window-sized reads
