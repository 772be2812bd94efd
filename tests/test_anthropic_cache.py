"""Anthropic prompt caching with ``target.cache: auto``: at most 4 breakpoints, placed where the cache pays.

The rules checked are Anthropic's (docs/caching.md): a breakpoint caches the
prefix tools -> system -> messages up to its block, only from the model's
minimum cacheable length, at most 4 per request, never on a thinking block.
"""

from __future__ import annotations

from typing import Any

import pytest
from anthropic import Anthropic
from ctxcore_counters import ApproximateCounter
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxcore import ContextBuilder, Message, TargetSpec, ai, human, system, tool
from ctxcore.render import to_anthropic
from ctxcore.render.caching import MAX_BREAKPOINTS, CachePlan, cache_marks, min_cacheable_tokens, plan_anthropic_cache
from ctxcore.testing.harness.anthropic_server import MessagesServer, sign, wire_problem
from tests.test_anthropic_full import _ANTHROPIC, WEATHER, anthropic_body, sdk_accepts
from tests.test_render_wire import histories

LONG_SYSTEM = "You are a meticulous assistant. Follow the house style guide below.\n" + "Rule: be precise and kind. " * 400


class _History:
    def get_messages(self, state: Any, runtime: Any) -> list[Message]:
        return list(state.get("messages", []))


def builder(cache: str = "auto", **target: Any) -> ContextBuilder:
    return ContextBuilder([_Fixed([system(LONG_SYSTEM)]), _History()], counter=ApproximateCounter(),
                          target=TargetSpec(provider="anthropic", cache=cache, **target))  # type: ignore[arg-type]


class _Fixed:
    def __init__(self, messages: list[Message]) -> None:
        self.messages = messages

    def get_messages(self, state: Any, runtime: Any) -> list[Message]:
        return self.messages


def marked(body: dict[str, Any]) -> list[tuple[str, int, int]]:
    """Where the body carries cache_control: ('tools'|'system', index, -1) or ('messages', turn, block)."""
    out = [("tools", i, -1) for i, t in enumerate(body.get("tools", [])) if "cache_control" in t]
    out += [("system", i, -1) for i, b in enumerate(body.get("system", [])) if "cache_control" in b]
    for k, m in enumerate(body["messages"]):
        out += [("messages", k, j) for j, b in enumerate(m["content"]) if "cache_control" in b]
    return out


class TestPlacement:
    def test_system_and_tail_marked_then_the_reused_prefix(self) -> None:
        """Turn 1 marks the system prompt and the end; turn 2 also marks where turn 1's request ended."""
        b = builder()
        history = [human("First question?")]
        first = b.build({"messages": history}).to_anthropic()
        assert marked(first) == [("system", 0, -1), ("messages", 0, 0)]
        history += [ai("First answer."), human("Second question?")]
        second = b.build({"messages": history}).to_anthropic()
        assert marked(second) == [("system", 0, -1), ("messages", 0, 0), ("messages", 2, 0)]
        def bare(message: dict[str, Any]) -> dict[str, Any]:
            return {**message, "content": [{k: v for k, v in b.items() if k != "cache_control"} for b in message["content"]]}

        assert bare(second["messages"][0]) == bare(first["messages"][0])  # the prefix turn 1 wrote is read back
        assert [c.get("ttl", "5m") for *_, c in cache_marks(second)] == ["1h", "1h", "1h"]  # the turn mark, 1h before it

    def test_threads_are_tracked_apart(self) -> None:
        """The reused prefix is the previous build of the same thread (runtime thread_id), not of another."""
        b = builder()
        b.build({"messages": [human("a")]}, {"thread_id": "one"})
        b.build({"messages": [human("x")]}, {"thread_id": "two"})
        built = b.build({"messages": [human("a"), ai("b"), human("c")]}, {"thread_id": "one"})
        assert built.cache is not None and built.cache.reused == 1

    def test_below_the_minimum_nothing_is_marked(self) -> None:
        """A request whose prefixes are all under the minimum cacheable length carries no cache_control."""
        b = ContextBuilder([_History()], counter=ApproximateCounter(), target=TargetSpec(provider="anthropic"))
        assert marked(b.build({"messages": [human("short")]}).to_anthropic()) == []

    def test_model_minimum_and_override(self) -> None:
        """The model's minimum is applied (Haiku 4.5: 4,096) and target.cache_min_tokens overrides it."""
        assert min_cacheable_tokens("claude-haiku-4-5-20251001") == 4096
        assert min_cacheable_tokens("claude-sonnet-4-5") == 1024
        assert min_cacheable_tokens("some-future-model") == 1024
        haiku = builder(model="claude-haiku-4-5").build({"messages": [human("q")]})
        assert haiku.cache is not None and haiku.cache.count == 0  # the ~2,400-token prefix is under 4,096
        low = builder(model="claude-haiku-4-5", cache_min_tokens=100).build({"messages": [human("q")]})
        assert low.cache is not None and low.cache.count == 2

    def test_cache_off_marks_nothing(self) -> None:
        """cache: off sends no cache_control at all."""
        built = builder("off").build({"messages": [human("q")]})
        assert built.cache is None and marked(built.to_anthropic()) == []

    def test_never_on_a_thinking_block(self) -> None:
        """When a message ends in a thinking block, the breakpoint goes on its last other block; thinking is untouched."""
        thinking = {"type": "thinking", "thinking": "hm", "signature": sign("hm")}
        reply = Message.from_anthropic({"role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Oslo"}}, thinking]})
        msgs = [human("q"), reply, tool("cold", tool_call_id="toolu_1")]
        body = to_anthropic(msgs, cache=CachePlan(messages=(1,)))
        assert body["messages"][1]["content"][1] == thinking
        assert body["messages"][1]["content"][0]["cache_control"] == {"type": "ephemeral"}
        only_thinking = Message.from_anthropic({"role": "assistant", "content": [thinking]})
        body = to_anthropic([human("q"), only_thinking, human("next")], cache=CachePlan(messages=(1,)))
        assert marked(body) == []

    def test_tools_are_marked_when_they_alone_reach_the_minimum(self) -> None:
        """Large tool schemas get their own breakpoint, so a changed system prompt still reads them."""
        big = {**WEATHER, "function": {**WEATHER["function"], "description": "Weather. " * 700}}  # type: ignore[dict-item]
        built = ContextBuilder([_Fixed([system(LONG_SYSTEM)]), _History()], counter=ApproximateCounter(),
                               target=TargetSpec(provider="anthropic"), tools=[big]).build({"messages": [human("q")]})
        body = anthropic_body(built)
        assert marked(body)[0] == ("tools", 0, -1) and len(marked(body)) == 3
        sdk_accepts(_ANTHROPIC, body)


def test_the_official_client_sends_them_and_the_stub_accepts(tmp_path: Any) -> None:
    """Five turns through client.messages.create: every request has at most 4 breakpoints and is accepted."""
    b = builder()
    history: list[Message] = []
    with MessagesServer(reply=lambda body: "Noted.") as server:
        client = Anthropic(base_url=server.base_url, api_key="unused", max_retries=0)
        for turn in range(5):
            history.append(human(f"Turn {turn}: here is more context. " * 20))
            reply = client.messages.create(model="claude-sonnet-4-6", max_tokens=64, **b.build({"messages": history}).to_anthropic())
            history.append(Message.from_anthropic(reply))
    assert all(0 < len(marked(r)) <= MAX_BREAKPOINTS for r in server.requests)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories(), st.integers(1, 3000), st.booleans())
def test_any_plan_is_legal_and_respects_the_minimum(msgs: list[Message], minimum: int, with_tools: bool) -> None:
    """For any legal history and minimum: ≤ 4 breakpoints, each prefix ≥ the minimum, and the API accepts the body."""
    from ctxcore.errors import InvalidHistory
    from ctxcore.render import validate_request

    try:
        validate_request(msgs, "anthropic")
    except InvalidHistory:
        return
    counter = ApproximateCounter()
    tokens = [counter.count_message(m) * 40 for m in msgs]  # long enough that breakpoints happen
    tool_tokens = 1500 if with_tools else 0
    plan = plan_anthropic_cache([m.role for m in msgs], tokens, tool_tokens, with_tools, len(msgs) // 2, minimum)
    assert plan.count <= MAX_BREAKPOINTS
    for i in plan.messages:
        assert msgs[i].role != "system"
        assert tool_tokens + sum(t for m, t in zip(msgs, tokens, strict=True) if m.role == "system") + sum(
            t for k, (m, t) in enumerate(zip(msgs, tokens, strict=True)) if m.role != "system" and k <= i) >= minimum
    body = anthropic_body(to_anthropic(msgs, [WEATHER] if with_tools else [], plan))
    assert len(marked(body)) <= plan.count
    assert wire_problem(body) is None
    sdk_accepts(_ANTHROPIC, body)


@pytest.mark.parametrize("provider", ["openai"])
def test_openai_targets_carry_no_plan(provider: str) -> None:
    """OpenAI caches automatically: an OpenAI build has no plan and its rendering is unchanged."""
    b = ContextBuilder([_Fixed([system(LONG_SYSTEM)]), _History()], counter=ApproximateCounter(), target=TargetSpec(provider=provider))
    assert b.build({"messages": [human("q")]}).cache is None
