"""Anthropic cache placement under the API's rules, over 20,000 fuzzed builds, and its settings.

Each fuzzed build is a real ``to_anthropic`` body of a generated thread turn
(text, multi-block user turns, parallel tool calls and results), with tools
that may carry the caller's own ``cache_control`` (5m or 1h), an optional
top-level automatic ``cache_control`` and a turn breakpoint (off, 5m or 1h). Checked on every build: at most 4
breakpoints in all, never a 1h breakpoint after a 5m one, the stub's wire rules
hold, and while the prefix is unchanged the block of the previous request's
last breakpoint is read back: still marked, or (when the caller's marks leave
too few slots) within the 20-block lookback of a later breakpoint.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from ctxcore_counters import ApproximateCounter
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

from ctxcore import ContextBuilder, Message, TargetSpec, ai, human, system, tool
from ctxcore.engine.reference import reference_build
from ctxcore.kit import ToolCall
from ctxcore.render import to_anthropic
from ctxcore.render.caching import (
    ANTHROPIC_LOOKBACK,
    MAX_BREAKPOINTS,
    CachePlan,
    cache_marks,
    mark_anthropic,
    plan_anthropic_cache,
    ttl_problem,
)
from ctxcore.testing.harness.anthropic_server import wire_problem

EXAMPLES = 200
BUILDS_PER_EXAMPLE = 100  # EXAMPLES * BUILDS_PER_EXAMPLE = 20,000 fuzzed builds


def _turn(rng: random.Random, n: int) -> list[Message]:
    """One user turn and the assistant's answer: plain, multi-block, or with parallel tool calls and results."""
    kind = rng.random()
    if kind < 0.3:
        user = human([{"type": "text", "text": f"part {k} of turn {n}"} for k in range(rng.randint(2, 6))])
    else:
        user = human(f"question {n}")
    out = [user]
    if rng.random() < 0.5:
        calls = [ToolCall(id=f"toolu_{n}_{k}", name="lookup", arguments='{"q": 1}') for k in range(rng.randint(1, 4))]
        out.append(ai("", tool_calls=calls))
        out += [tool(f"result {c.id}", tool_call_id=c.id) for c in calls]
    out.append(ai(f"answer {n}"))
    return out


def _tools(rng: random.Random, marks: int) -> list[dict[str, Any]]:
    """Anthropic tools, the first ``marks`` carrying the caller's cache_control (1h ones first)."""
    count = max(marks, rng.randint(0, 3))
    ttls = sorted((rng.choice(["5m", "1h"]) for _ in range(marks)), key=lambda t: t != "1h")
    tools: list[dict[str, Any]] = []
    for k in range(count):
        t: dict[str, Any] = {"name": f"tool_{k}", "description": "d", "input_schema": {"type": "object", "properties": {}}}
        if k < marks:
            t["cache_control"] = {"type": "ephemeral", "ttl": ttls[k]}
        tools.append(t)
    return tools


def _ttls(rng: random.Random) -> tuple[str, str, str | None]:
    """(cache_ttl, cache_prefix_ttl, cache_turn_ttl or None for off) a valid target may hold."""
    ttl = rng.choice(["5m", "1h"])
    return ttl, ("1h" if ttl == "1h" else rng.choice(["5m", "1h"])), rng.choice([None, "5m", "1h", "1h"])


def _marked_blocks(body: dict[str, Any]) -> set[tuple[str, int, int]]:
    return {(part, i, b) for part, i, b, _ in cache_marks(body)}


def _check_thread(seed: int) -> int:
    """Fuzz one thread for BUILDS_PER_EXAMPLE turns; return how many builds were checked."""
    rng = random.Random(seed)
    top_level = rng.random() < 0.3
    caller = rng.randint(0, MAX_BREAKPOINTS - top_level)
    tools = _tools(rng, caller)
    ttl, prefix_ttl, turn_ttl = _ttls(rng)
    minimum = rng.choice([1, 200, 1024, 4096])
    messages: list[Message] = [system("You are terse. " * rng.randint(1, 50))]
    tokens: list[int] = [rng.randint(1, 3000)]
    previous: tuple[list[Message], dict[str, Any]] | None = None
    starts: list[int] = []
    for n in range(BUILDS_PER_EXAMPLE):
        if n % 10 == 0:  # a new thread every 10 turns keeps requests the size of real ones
            del messages[1:], tokens[1:]
            starts, previous = [], None
        if previous is not None and rng.random() < 0.1:  # a changed prefix now and then (compaction, edits)
            cut = rng.choice(starts)
            del messages[cut:], tokens[cut:]
            starts = [s for s in starts if s < cut]
        starts.append(len(messages))
        turn = _turn(rng, n)
        messages += turn
        tokens += [rng.randint(0, 800) for _ in turn]
        rest_before = previous[0] if previous is not None else []
        rest = [m for m in messages if m.role != "system"]
        reused = 0
        for a, b in zip(rest_before, rest, strict=False):
            if a is not b:
                break
            reused += 1
        extends = previous is not None and reused == len(rest_before)
        blocks = [max(1, (len(m.content) if isinstance(m.content, list) else 1) + len(m.tool_calls)) for m in messages]
        plan = plan_anthropic_cache([m.role for m in messages], tokens, 300 * len(tools), bool(tools), reused, minimum,
                                    blocks=blocks, ttl=ttl, prefix_ttl=prefix_ttl, top_level=top_level,  # type: ignore[arg-type]
                                    turn_ttl=turn_ttl, extends=extends)  # type: ignore[arg-type]
        body = to_anthropic(messages, tools, plan)
        assert len(cache_marks(body)) <= MAX_BREAKPOINTS, cache_marks(body)
        assert plan.count <= MAX_BREAKPOINTS
        assert ttl_problem(body) is None, ttl_problem(body)
        assert wire_problem({**body, "max_tokens": 1}) is None
        if previous is not None and reused == len(rest_before):
            _assert_last_mark_kept(previous[1], body, plan)
        previous = (rest, body)
    return BUILDS_PER_EXAMPLE


def _assert_last_mark_kept(before: dict[str, Any], after: dict[str, Any], plan: CachePlan) -> None:
    """The previous request's last message breakpoint (or top-level end) is marked on the same block now."""
    marks = [m for m in cache_marks(before) if m[0] in ("messages", "top_level")]
    if not marks:
        return
    part, turn, block, _ = marks[-1]
    if part == "top_level":  # the API marks the last cacheable block
        turn = len(before["messages"]) - 1
        block = len(before["messages"][turn]["content"]) - 1
    if plan.min_tokens > 1 and not plan.messages:
        return  # the reused prefix is below the minimum now only if it was before: nothing to keep
    assert before["messages"][turn]["content"][block]["type"] == after["messages"][turn]["content"][block]["type"]
    assert _read_back(after, turn, block), (turn, block, cache_marks(after))


def _read_back(body: dict[str, Any], turn: int, block: int) -> bool:
    """The block is marked, or a later breakpoint reaches it through Anthropic's 20-block lookback."""
    flat = [(k, j) for k, m in enumerate(body["messages"]) for j in range(len(m["content"]))]
    at = flat.index((turn, block))
    marks = [flat.index((i, b)) for part, i, b, _ in cache_marks(body) if part == "messages"]
    marks += [len(flat) - 1] if "cache_control" in body else []
    return any(0 <= q - at <= ANTHROPIC_LOOKBACK for q in marks)


@settings(max_examples=EXAMPLES, derandomize=True, deadline=None, database=None, phases=[Phase.explicit, Phase.generate])
@given(st.integers(0, 2**32 - 1))
def test_fuzzed_builds_respect_the_cap_ttl_order_and_stability(seed: int) -> None:
    """20,000 fuzzed builds: never over 4 breakpoints, never 1h after 5m, and the last breakpoint is read back while the prefix holds."""
    assert _check_thread(seed) == BUILDS_PER_EXAMPLE


class TestCapAndTtl:
    def test_caller_marks_take_slots_least_valuable_dropped(self) -> None:
        """Three tools marked by the caller leave one slot, which goes to the end of the request."""
        tools = _tools(random.Random(0), 3)
        msgs = [system("s"), human("a"), ai("b"), human("c")]
        plan = plan_anthropic_cache([m.role for m in msgs], [2000, 10, 10, 10], 3000, True, 2, 1024)
        body = to_anthropic(msgs, tools, plan)
        assert [m[:3] for m in cache_marks(body)] == [("tools", 0, -1), ("tools", 1, -1), ("tools", 2, -1), ("messages", 2, 0)]

    def test_top_level_takes_a_slot_and_the_end(self) -> None:
        """With cache: top_level the body carries the top-level cache_control and no explicit end mark."""
        msgs = [system("s"), human("a"), ai("b"), human("c")]
        plan = plan_anthropic_cache([m.role for m in msgs], [2000, 10, 10, 10], 0, False, 2, 1024, top_level=True, ttl="1h")
        body = to_anthropic(msgs, (), plan)
        assert body["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
        assert [m[:3] for m in cache_marks(body)] == [("system", 0, -1), ("messages", 1, 0), ("top_level", -1, -1)]
        assert ttl_problem(body) is None  # the top-level 1h lifts the marks before it to 1h

    def test_prefix_1h_messages_5m(self) -> None:
        """System and tools breakpoints at 1h, message breakpoints at 5m: the allowed order."""
        msgs = [system("s"), human("a")]
        plan = plan_anthropic_cache([m.role for m in msgs], [2000, 10], 0, False, 0, 1024, ttl="5m", prefix_ttl="1h")
        body = to_anthropic(msgs, (), plan)
        assert body["system"][-1]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
        assert body["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}

    def test_a_caller_5m_mark_keeps_later_marks_at_5m(self) -> None:
        """After a caller's 5m tool mark, a 1h setting is lowered to 5m rather than sending an illegal order."""
        tools = [{"name": "t", "input_schema": {"type": "object"}, "cache_control": {"type": "ephemeral"}}]
        msgs = [system("s"), human("a")]
        plan = plan_anthropic_cache([m.role for m in msgs], [2000, 10], 0, True, 0, 1024, ttl="1h")
        body = to_anthropic(msgs, tools, plan)
        assert ttl_problem(body) is None
        assert all(c.get("ttl", "5m") == "5m" for *_, c in cache_marks(body))

    def test_the_stub_refuses_an_illegal_order_and_a_fifth_mark(self) -> None:
        """The stub speaks the API's refusals: a 1h after a 5m, and five breakpoints counting the top-level one."""
        body = {"max_tokens": 1, "system": [{"type": "text", "text": "s", "cache_control": {"type": "ephemeral"}}],
                "messages": [{"role": "user", "content": [{"type": "text", "text": "a",
                                                            "cache_control": {"type": "ephemeral", "ttl": "1h"}}]}]}
        assert "must not come after" in (wire_problem(body) or "")
        five = {"max_tokens": 1, "cache_control": {"type": "ephemeral"}, "messages": [{"role": "user", "content": [
            {"type": "text", "text": str(k), "cache_control": {"type": "ephemeral"}} for k in range(4)]}]}
        assert "A maximum of 4 blocks" in (wire_problem(five) or "")

    def test_lookback_ranks_a_near_reused_mark_last(self) -> None:
        """A reused prefix within 20 blocks of the end ranks below system and tools; one further back ranks above."""
        roles = ["system"] + ["user", "assistant"] * 15
        near = plan_anthropic_cache(roles, [2000] * len(roles), 2000, True, 26, 1024)
        far = plan_anthropic_cache(roles, [2000] * len(roles), 2000, True, 2, 1024)
        assert near.reused_near and near.by_value()[-1] == ("messages", 26)
        assert not far.reused_near and far.by_value()[1] == ("messages", 2)

    def test_target_refuses_5m_prefix_under_1h_messages(self) -> None:
        """cache_prefix_ttl shorter than cache_ttl fails when the pipeline loads, naming the fix."""
        with pytest.raises(ValueError, match="1h breakpoints before 5m"):
            TargetSpec(provider="anthropic", cache_ttl="1h", cache_prefix_ttl="5m")


class TestTurnBreakpoint:
    def _turn(self) -> list[Message]:
        call = ToolCall(id="toolu_1", name="lookup", arguments="{}")
        return [system("s"), human("a"), ai("b"), human("c"), ai("", tool_calls=[call]), tool("r", tool_call_id="toolu_1")]

    def test_the_last_user_message_is_marked_1h_and_the_end_5m(self) -> None:
        """Mid-turn, the turn's user message carries a 1h breakpoint (and the system prompt before it); the end stays 5m."""
        msgs = self._turn()
        plan = plan_anthropic_cache([m.role for m in msgs], [2000, 10, 10, 10, 10, 10], 0, False, 4, 1024, turn_ttl="1h",
                                    extends=True)
        body = to_anthropic(msgs, (), plan)
        marks = {m[:3]: m[3].get("ttl", "5m") for m in cache_marks(body)}
        assert marks == {("system", 0, -1): "1h", ("messages", 2, 0): "1h", ("messages", 3, 0): "5m", ("messages", 4, 0): "5m"}
        assert ttl_problem(body) is None and wire_problem({**body, "max_tokens": 1}) is None

    def test_a_request_ending_with_the_user_message_writes_it_at_1h(self) -> None:
        """The first call of a turn marks its end 1h, and a reused mark before it 1h too (1h before 5m)."""
        msgs = self._turn()[:4]
        plan = plan_anthropic_cache([m.role for m in msgs], [2000, 10, 10, 10], 0, False, 2, 1024, turn_ttl="1h", extends=True)
        body = to_anthropic(msgs, (), plan)
        assert [(m[:3], m[3].get("ttl")) for m in cache_marks(body)] == [
            (("system", 0, -1), "1h"), (("messages", 1, 0), "1h"), (("messages", 2, 0), "1h")]

    def test_a_changed_prefix_gets_no_turn_mark(self) -> None:
        """A first build or one whose prefix changed (a compaction) writes at the short lifetime: no 1h turn mark."""
        msgs = self._turn()
        plan = plan_anthropic_cache([m.role for m in msgs], [2000, 10, 10, 10, 10, 10], 0, False, 1, 1024, turn_ttl="1h")
        assert plan.turn is None
        assert all(m[3].get("ttl", "5m") == "5m" for m in cache_marks(to_anthropic(msgs, (), plan)))

    def test_off_marks_no_turn(self) -> None:
        """Without turn_ttl the plan is the end, the reused prefix and the system prompt, all at their own ttls."""
        msgs = self._turn()
        plan = plan_anthropic_cache([m.role for m in msgs], [2000, 10, 10, 10, 10, 10], 0, False, 4, 1024, extends=True)
        assert plan.turn is None
        assert all(m[3].get("ttl", "5m") == "5m" for m in cache_marks(to_anthropic(msgs, (), plan)))

    def test_the_turn_mark_is_the_first_left_out_for_the_callers_marks(self) -> None:
        """Three caller marks leave one slot: it goes to the end of the request, not to the turn."""
        msgs = self._turn()
        plan = plan_anthropic_cache([m.role for m in msgs], [2000, 10, 10, 10, 10, 10], 3000, True, 4, 1024, turn_ttl="1h",
                                    extends=True)
        assert plan.count == MAX_BREAKPOINTS and plan.turn is not None  # end, turn, system, tools
        body = to_anthropic(msgs, _tools(random.Random(0), 3), plan)
        assert [m[:3] for m in cache_marks(body)][3:] == [("messages", 4, 0)]
        assert ttl_problem(body) is None

    def test_a_far_reused_prefix_that_is_also_the_turn_ranks_as_the_reused_prefix(self) -> None:
        """The previous request ended at the user message and 30 blocks came since: that mark ranks above system and tools."""
        roles = ["system", "user"] + ["assistant", "tool"] * 15
        plan = plan_anthropic_cache(roles, [2000] * len(roles), 2000, True, 1, 1024, turn_ttl="1h", extends=True)
        assert plan.turn == plan.reused_at == 1 and not plan.reused_near
        assert plan.by_value() == [("messages", 31), ("messages", 1), ("system", -1), ("tools", -1)]

    def test_the_plan_never_holds_more_than_four(self) -> None:
        """End, a far reused prefix, system, tools and the turn: the turn is left out of the plan itself."""
        roles = ["system", "user"] + ["assistant", "tool"] * 15
        plan = plan_anthropic_cache(roles, [2000] * len(roles), 2000, True, 2, 1024, turn_ttl="1h", extends=True)
        assert plan.count == MAX_BREAKPOINTS and plan.turn is None


def test_builder_threads_keep_their_breakpoints() -> None:
    """Through ContextBuilder, turn after turn, the previous end stays marked and the system mark never moves."""
    b = ContextBuilder([_Fixed([system("Rule: be precise. " * 400)]), _History()], counter=ApproximateCounter(),
                       target=TargetSpec(provider="anthropic", cache_prefix_ttl="1h"))
    history: list[Message] = []
    before: dict[str, Any] | None = None
    for n in range(8):
        history += [human(f"question {n} " * 30)]
        body = b.build({"messages": history}, {"thread_id": "t"}).to_anthropic()
        assert body["system"][-1]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
        if before is not None:
            last = [m for m in cache_marks(before) if m[0] == "messages"][-1]
            assert ("messages", last[1], last[2]) in _marked_blocks(body)
        history.append(ai(f"answer {n}"))
        before = body


def test_builder_marks_each_turn_for_an_hour_by_default() -> None:
    """Through ContextBuilder (both build paths), each call extending the last carries a 1h mark on its turn's user message."""
    for reference in (False, True):
        b = ContextBuilder([_Fixed([system("Rule: be precise. " * 400)]), _History()], counter=ApproximateCounter(),
                           target=TargetSpec(provider="anthropic"))
        history: list[Message] = []
        previous = None
        for n in range(4):
            history.append(human(f"question {n} " * 30))
            for k in range(3):
                runtime = {"thread_id": "t"}
                built = reference_build(b, {"messages": history}, runtime, previous=previous) if reference else \
                    b.build({"messages": history}, runtime)
                body = built.to_anthropic()
                user = max(i for i, m in enumerate(body["messages"]) if m["role"] == "user" and
                           body["messages"][i]["content"][0]["type"] == "text")
                long = [m[:3] for m in cache_marks(body) if m[3].get("ttl") == "1h"]
                assert (("messages", user, 0) in long) is (n + k > 0), (n, k, cache_marks(body))  # not on a first build
                assert ttl_problem(body) is None
                previous = built
                call = ToolCall(id=f"toolu_{n}_{k}", name="lookup", arguments="{}")
                history += [ai("", tool_calls=[call]), tool(f"result {n} {k} " * 20, tool_call_id=call.id)]
            history.append(ai(f"answer {n}"))


class _History:
    def get_messages(self, state: Any, runtime: Any) -> list[Message]:
        return list(state.get("messages", []))


class _Fixed:
    def __init__(self, messages: list[Message]) -> None:
        self.messages = messages

    def get_messages(self, state: Any, runtime: Any) -> list[Message]:
        return self.messages


def test_plan_is_unchanged_without_plan_marks() -> None:
    """mark_anthropic with an empty plan leaves the caller's body as it was."""
    body = to_anthropic([human("a")])
    copy = {**body}
    mark_anthropic(body, CachePlan(), {})
    assert body == copy
