"""engine.reuse: a next turn's output checked from the last one's must agree with the full steps.

The hypothesis property builds a last output that passed every step unchanged,
cuts a new output from runs of it plus a new tail (tool results, repeats,
messages the repair step fixes, leading non-user messages), and asserts: when
:meth:`OutputMemo.reuse` says "only the tail needed checks", the full steps
(repair, legal start, pairing walk, OpenAI's per-message rules, counting) give
exactly its answer. Builder-level equality with a fresh builder is pinned in
tests/test_build_cost.py.
"""

from __future__ import annotations

import operator
from typing import Any

import pytest
from ctxcore_counters import TiktokenCounter
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxcore.engine.budget import CachedCounter
from ctxcore.engine.reuse import OutputMemo, shared_runs
from ctxcore.errors import InvalidHistory
from ctxcore.model.messages import Message, ai, human, system, tool
from ctxcore.model.transactions import check_tool_pairing, legal_start
from ctxcore.render.openai import check_openai_message
from ctxcore.render.repair import RepairCache, repair_past

COUNTER = CachedCounter(TiktokenCounter("cl100k_base"))
KEY = ("openai", True, "drop", True, False)


def _poison() -> st.SearchStrategy[Message]:
    return st.sampled_from([
        {"role": "assistant", "content": None}, {"role": "user", "content": []}, {"role": "system", "content": None},
    ]).map(Message.from_openai)


@st.composite
def conversation(draw: Any, prefix: str) -> list[Message]:
    """A paired conversation: a system prompt, then users, assistants and tool runs (1-3 calls)."""
    out = [system("be brief")]
    for u in range(draw(st.integers(0, 10))):
        kind = draw(st.sampled_from(["user", "assistant", "tools"]))
        if kind == "user":
            out.append(human(f"q{u}"))
        elif kind == "assistant":
            out.append(ai(f"a{u}"))
        else:
            ids = [f"{prefix}{u}_{k}" for k in range(draw(st.integers(1, 3)))]
            out.append(ai(tool_calls=[{"id": i, "name": "read", "arguments": {}} for i in ids]))
            out.extend(tool(f"r{i}", tool_call_id=i) for i in ids)
    return out


def _full_steps_clean(messages: list[Message], validate: bool) -> bool:
    """Whether the full steps leave ``messages`` as they are (what the memo requires of a saved output)."""
    try:
        check_tool_pairing(messages)
        for i, m in enumerate(messages):
            if validate:
                check_openai_message(m, i)
    except InvalidHistory:
        return False
    result = repair_past(messages, "openai")
    return not result.dropped and not result.notes


@st.composite
def next_outputs(draw: Any) -> tuple[list[Message], list[Message]]:
    """(a clean last output, a new output made of its runs and a new tail)."""
    previous = draw(conversation("p"))
    if not draw(st.integers(0, 3)):
        previous.append(draw(_poison()))  # the current turn is never repaired: it may be one
    cuts = sorted(draw(st.lists(st.integers(0, len(previous)), min_size=2, max_size=6)))
    current: list[Message] = []
    for a, b in zip(cuts[::2], cuts[1::2], strict=False):
        current.extend(previous[a:b])
    new = draw(conversation("n"))[1:]
    extras = draw(st.lists(st.one_of(
        _poison(),
        st.sampled_from(previous),  # an old message again
        st.builds(lambda k: tool("late", tool_call_id=f"p{k}_0"), st.integers(0, 10)),
        st.builds(lambda k: tool("again", tool_call_id=f"n{k}_0"), st.integers(0, 10)),
    ), max_size=3))
    tail = new + extras
    order = draw(st.permutations(range(len(tail)))) if draw(st.integers(0, 3)) == 0 else range(len(tail))
    current.extend(tail[k] for k in order)
    if current and current[0].role == "system" and not draw(st.integers(0, 3)):  # before the first user message
        current[1:1] = draw(st.lists(st.one_of(_poison(), st.just(ai("lead"))), min_size=1, max_size=2))
    return previous, current


def _check_new(m: Message, index: int) -> bool:
    try:
        check_openai_message(m, index)
    except InvalidHistory:
        return False
    return True


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(case=next_outputs(), legal=st.booleans(), recover=st.booleans(), validate=st.booleans())
def test_a_reused_output_is_what_the_full_steps_give(
    case: tuple[list[Message], list[Message]], legal: bool, recover: bool, validate: bool
) -> None:
    previous, current = case
    if not _full_steps_clean(previous, validate):
        return
    memo = OutputMemo()
    memo.save(previous, COUNTER.count_each(previous), KEY)
    repairs = RepairCache()

    def repaired(m: Message) -> bool:
        fixed, reason = repairs.get(m, "openai")
        return fixed is not m or reason is not None

    reused = memo.reuse(list(current), KEY, _check_new if validate else lambda m, i: True, repaired, legal, recover)
    if reused is None:
        return
    fixed = repair_past(current, "openai")
    assert not fixed.dropped and not fixed.notes
    assert all(map(operator.is_, fixed.messages, current)) and len(fixed.messages) == len(current)
    expected = fixed.messages
    if legal:
        start = legal_start(fixed.messages)
        assert start.recovered is None and (not recover or not start.dropped)
        assert start.dropped == reused.dropped
        expected = start.messages
    else:
        assert reused.dropped == []
    assert len(reused.messages) == len(expected) and all(map(operator.is_, reused.messages, expected))
    check_tool_pairing(reused.messages)
    for i, m in enumerate(reused.messages):
        if validate:
            check_openai_message(m, i)
    assert reused.shared_counts == COUNTER.count_each(reused.messages[:reused.tail])


def test_the_usual_next_turn_is_reused() -> None:
    """The pinned prompt, the window minus its oldest unit, and a new question: two runs and a one-message tail."""
    previous = [system("s"), human("q1"), ai("a1"), human("q2"), ai(tool_calls=[{"id": "c", "name": "f", "arguments": {}}]),
                tool("r", tool_call_id="c"), ai("a2")]
    current = [previous[0], *previous[3:], human("q3")]
    assert shared_runs(previous, current) == ([(0, 1), (3, 7)], 5)
    memo = OutputMemo()
    memo.save(previous, COUNTER.count_each(previous), KEY)
    reused = memo.reuse(current, KEY, _check_new, None, True)
    assert reused is not None and reused.tail == 5 and reused.messages == current
    assert memo.reuse(current, ("anthropic",), _check_new, None, True) is None  # another configuration


@pytest.mark.parametrize("tail", [
    [tool("r", tool_call_id="c")],  # a result whose call is not open
    [ai(tool_calls=[{"id": "d", "name": "f", "arguments": {}}])],  # a call never answered
])
def test_a_tail_that_breaks_the_pairing_is_left_to_the_full_steps(tail: list[Message]) -> None:
    previous = [system("s"), human("q1"), ai(tool_calls=[{"id": "c", "name": "f", "arguments": {}}]), tool("r", tool_call_id="c")]
    memo = OutputMemo()
    memo.save(previous, COUNTER.count_each(previous), KEY)
    assert memo.reuse([*previous, *tail], KEY, _check_new, None, True) is None


def test_the_last_current_turn_is_checked_once_it_is_past() -> None:
    """The last output's current turn was never repaired; when it becomes past, a message the repair step drops
    sends the build to the full steps."""
    previous = [system("s"), human("q1"), Message.from_openai({"role": "assistant", "content": None})]
    memo = OutputMemo()
    memo.save(previous, COUNTER.count_each(previous), KEY)
    repairs = RepairCache()

    def repaired(m: Message) -> bool:
        fixed, reason = repairs.get(m, "openai")
        return fixed is not m or reason is not None

    assert memo.reuse([*previous, human("q2")], KEY, lambda m, i: True, repaired, True) is None
    assert memo.reuse(list(previous), KEY, lambda m, i: True, repaired, True) is not None  # still the current turn


def test_runs_joined_across_an_open_call_are_left_to_the_full_steps() -> None:
    """A run that ends after a call but before its result, followed by another run: the full walk decides."""
    call = ai(tool_calls=[{"id": "c", "name": "f", "arguments": {}}])
    previous = [system("s"), human("q1"), call, tool("r", tool_call_id="c"), human("q2")]
    memo = OutputMemo()
    memo.save(previous, COUNTER.count_each(previous), KEY)
    current = [*previous[:3], previous[4]]
    assert shared_runs(previous, current) == ([(0, 3), (4, 5)], 4)
    assert memo.reuse(current, KEY, _check_new, None, True) is None
    answered = memo.reuse([*previous[:3], tool("r2", tool_call_id="c")], KEY, _check_new, None, True)
    assert answered is not None and answered.tail == 3  # the open call answered by a new result: reused
    assert memo.reuse(previous[:4], KEY, _check_new, None, True) is not None


@pytest.mark.parametrize("lead", [
    [Message.from_openai({"role": "assistant", "content": None})],  # the repair step drops it (with a note)
    [ai(tool_calls=[{"id": "c", "name": "f", "arguments": {}}]), tool("r", tool_call_id="c"), tool("r", tool_call_id="c")],
])
def test_messages_the_legal_start_drops_must_pass_the_repair_step_unchanged(lead: list[Message]) -> None:
    """The repair step runs before the legal start: what it would change sends the build to the full steps."""
    previous = [system("s"), human("q1"), ai("a1"), human("q2")]
    memo = OutputMemo()
    memo.save(previous, COUNTER.count_each(previous), KEY)
    repairs = RepairCache()

    def repaired(m: Message) -> bool:
        fixed, reason = repairs.get(m, "openai")
        return fixed is not m or reason is not None

    current = [previous[0], *lead, previous[3], human("q3")]
    assert memo.reuse(current, KEY, lambda m, i: True, repaired, True) is None
    plain = memo.reuse([previous[0], ai("lead"), previous[3], human("q3")], KEY, lambda m, i: True, repaired, True)
    assert plain is not None and [m.text for m in plain.messages] == ["s", "q2", "q3"] and plain.dropped[0].text == "lead"


def test_a_new_current_turn_after_the_history_is_reused() -> None:
    """A provider after the history (runtime_context): the last output's current turn is not in the new one, the
    history's new messages and a new current turn follow the shared run; the full steps give the same answer."""
    previous = [system("s"), human("q1"), ai("a1"), human("now 1")]
    current = [*previous[:3], human("q2"), ai("a2"), human("now 2")]
    memo = OutputMemo()
    memo.save(previous, COUNTER.count_each(previous), KEY)
    reused = memo.reuse(current, KEY, _check_new, None, True)
    assert reused is not None and reused.tail == 3 and reused.messages == current and reused.dropped == []
    assert reused.shared_counts == COUNTER.count_each(current[:3])
    check_tool_pairing(reused.messages)


def _reference_runs(previous: list[Message], current: list[Message], limit: int = 4) -> tuple[list[tuple[int, int]], int]:
    """shared_runs as first written: the first identical object at or after the last run's end, by a list of ids."""
    if not previous or not current:
        return [], 0
    ids = [id(m) for m in previous]
    runs: list[tuple[int, int]] = []
    at, floor = 0, 0
    while at < len(current) and len(runs) < limit:
        try:
            j = ids.index(id(current[at]), floor)
        except ValueError:
            break
        length = 0
        while at + length < len(current) and j + length < len(previous) and current[at + length] is previous[j + length]:
            length += 1
        runs.append((j, j + length))
        at, floor = at + length, j + length
    return runs, at


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 12), st.lists(st.tuples(st.booleans(), st.integers(0, 14)), max_size=16))
def test_shared_runs_is_an_identity_scan(size: int, picks: list[tuple[bool, int]]) -> None:
    """shared_runs finds the same runs as a scan over the previous list's ids: repeats, gaps, new and equal messages."""
    previous = [human(f"m{i % 4}", id=f"m{i % 4}") for i in range(size)]  # equal (not identical) messages repeat
    current = [previous[k] if old and k < size else human(f"m{k % 4}", id=f"m{k % 4}") for old, k in picks]
    assert shared_runs(previous, current) == _reference_runs(previous, current)
