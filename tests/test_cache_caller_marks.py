"""The caller's own ``cache_control`` marks: kept from ``from_anthropic`` to ``to_anthropic``, within Anthropic's rules.

A user who marks blocks of an Anthropic history gets the marks back on the
same blocks; when they meet ctxcore's placement (``target.cache: auto``), the
request still carries at most 4 breakpoints (the caller's newest kept first)
and never a ``1h`` breakpoint after a ``5m`` one, so the API never answers 400.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxcore import Message, messages_from_anthropic, system
from ctxcore.render import to_anthropic
from ctxcore.render.caching import MAX_BREAKPOINTS, cache_marks, plan_anthropic_cache, ttl_problem
from ctxcore.testing.harness.anthropic_server import wire_problem

FIVE = {"type": "ephemeral"}
HOUR = {"type": "ephemeral", "ttl": "1h"}


def _marked(text: str, control: dict[str, Any] | None) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "text", "text": text}
    return {**block, "cache_control": control} if control else block


def _ingest(turns: list[dict[str, Any]]) -> list[Message]:
    return [m for t in turns for m in messages_from_anthropic(t)]


class TestRoundTrip:
    def test_marks_on_user_blocks_and_tool_results_come_back_on_the_same_blocks(self) -> None:
        turns = [
            {"role": "user", "content": [_marked("a", HOUR), {"type": "image", "cache_control": HOUR, "source": {
                "type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}, _marked("b", None)]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "r",
                                          "cache_control": FIVE}, _marked("c", FIVE)]},
        ]
        body = to_anthropic(_ingest(turns))
        sent = body["messages"]
        assert sent[0]["content"][0]["cache_control"] == HOUR and sent[0]["content"][1]["cache_control"] == HOUR
        assert "cache_control" not in sent[0]["content"][2]
        assert sent[2]["content"][0]["cache_control"] == FIVE and sent[2]["content"][1] == _marked("c", FIVE)

    def test_a_lone_marked_text_stays_plain_text_for_other_providers(self) -> None:
        """The mark lives in metadata: the message is still a plain user question, rendered anywhere."""
        (m,) = messages_from_anthropic({"role": "user", "content": [_marked("hello", FIVE)]})
        assert m.content == "hello"
        assert to_anthropic([m])["messages"][0]["content"] == [_marked("hello", FIVE)]

    def test_an_edited_message_loses_its_marks(self) -> None:
        """The marks name blocks of the content they were read with; an edit makes them stale."""
        (m,) = messages_from_anthropic({"role": "user", "content": [_marked("a", FIVE), _marked("b", None)]})
        edited = m.model_copy(update={"content": "a shorter question"})
        assert cache_marks(to_anthropic([edited])) == []


class TestCapAndOrder:
    def test_five_caller_marks_send_the_newest_four(self) -> None:
        turn = {"role": "user", "content": [_marked(f"part {k}", FIVE) for k in range(5)]}
        body = to_anthropic(_ingest([turn]))
        assert [b.get("cache_control") for b in body["messages"][0]["content"]] == [None, FIVE, FIVE, FIVE, FIVE]
        assert wire_problem({**body, "max_tokens": 1}) is None

    def test_a_caller_5m_mark_before_a_caller_1h_mark_is_raised(self) -> None:
        turn = {"role": "user", "content": [_marked("a", FIVE), _marked("b", HOUR)]}
        body = to_anthropic(_ingest([turn]))
        assert [b["cache_control"] for b in body["messages"][0]["content"]] == [HOUR, HOUR]
        assert ttl_problem(body) is None

    def test_caller_marks_leave_the_plan_the_slots_left(self) -> None:
        """Three caller marks and a plan of system + end: one slot, which goes to the end of the request."""
        msgs = [system("s" * 10), *_ingest([{"role": "user", "content": [_marked(f"p{k}", FIVE) for k in range(3)]}]),
                *_ingest([{"role": "assistant", "content": "ok"}, {"role": "user", "content": "next"}])]
        plan = plan_anthropic_cache([m.role for m in msgs], [2000, 10, 10, 10], 0, False, 0, 1024)
        body = to_anthropic(msgs, (), plan)
        assert len(cache_marks(body)) == MAX_BREAKPOINTS
        assert body["messages"][-1]["content"][-1]["cache_control"] == FIVE
        assert "cache_control" not in body["system"][-1]


TTLS = st.sampled_from([None, None, FIVE, HOUR])


@st.composite
def marked_history(draw: Any) -> tuple[list[dict[str, Any]], list[str]]:
    """Anthropic turns whose user text blocks and tool results carry random marks; and the marked keys in wire order."""
    turns: list[dict[str, Any]] = []
    order: list[str] = []
    for n in range(draw(st.integers(1, 5))):
        blocks: list[dict[str, Any]] = []
        if n:
            control = draw(TTLS)
            blocks.append({"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": f"result {n}",
                           **({"cache_control": control} if control else {})})
            order += [f"toolu_{n}"] if control else []
        for k in range(draw(st.integers(1, 4))):
            control = draw(TTLS)
            blocks.append(_marked(f"text {n}.{k}", control))
            order += [f"text {n}.{k}"] if control else []
        turns.append({"role": "user", "content": blocks})
        turns.append({"role": "assistant", "content": [{"type": "text", "text": f"answer {n}"},
                                                       {"type": "tool_use", "id": f"toolu_{n + 1}", "name": "f", "input": {}}]})
    turns.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{n + 1}", "content": "last"}]})
    return turns, order


def _key(block: dict[str, Any]) -> str:
    return str(block.get("tool_use_id") or block.get("text"))


@settings(max_examples=300, deadline=None)
@given(marked_history(), st.booleans(), st.sampled_from(["5m", "1h"]), st.sampled_from([None, "5m", "1h"]),
       st.integers(0, 6))
def test_caller_marks_and_placement_never_break_the_cap_or_the_order(
    history: tuple[list[dict[str, Any]], list[str]], top_level: bool, ttl: str, turn_ttl: str | None, reused: int
) -> None:
    """Any caller marks with any plan: at most 4 breakpoints, 1h before 5m, the stub accepts, the caller's newest kept."""
    turns, order = history
    msgs = [system("You are terse."), *_ingest(turns)]
    plan = plan_anthropic_cache([m.role for m in msgs], [300] * len(msgs), 0, False, min(reused, len(msgs) - 1), 1,
                                ttl=ttl, prefix_ttl="1h" if ttl == "1h" else "5m", top_level=top_level,  # type: ignore[arg-type]
                                turn_ttl=turn_ttl, extends=reused > 0)  # type: ignore[arg-type]
    for body in (to_anthropic(msgs, (), plan), to_anthropic(msgs)):
        assert len(cache_marks(body)) <= MAX_BREAKPOINTS
        assert ttl_problem(body) is None
        assert wire_problem({**body, "max_tokens": 1}) is None
        marked = {_key(b) for m in body["messages"] for b in m["content"] if "cache_control" in b}
        assert set(order[-MAX_BREAKPOINTS:]) <= marked


def test_the_build_report_names_the_marks_left_out_and_raised() -> None:
    """``built.to_anthropic()`` warns once per change to the caller's marks: which were left out, which raised."""
    from ctxcore_counters import ApproximateCounter

    from ctxcore import ContextBuilder, TargetSpec

    class History:
        def get_messages(self, state: Any, runtime: Any) -> list[Message]:
            return list(state["messages"])

    turn = {"role": "user", "content": [_marked("old", FIVE), *[_marked(f"p{k}", FIVE) for k in range(3)], _marked("h", HOUR)]}
    built = ContextBuilder([History()], counter=ApproximateCounter(),
                           target=TargetSpec(provider="anthropic", cache="off")).build({"messages": _ingest([turn])})
    body = built.to_anthropic()
    built.to_anthropic()
    assert [b.get("cache_control") for b in body["messages"][0]["content"]] == [None, HOUR, HOUR, HOUR, HOUR]
    assert built.report.warnings == [
        "cache: 1 of the caller's 5 cache_control marks left out (Anthropic takes at most 4; the newest are kept): "
        "messages.0.content.0",
        "cache: the caller's 5m cache_control marks before a 1h one raised to 1h (Anthropic wants 1h breakpoints "
        "first): messages.0.content.1, messages.0.content.2, messages.0.content.3",
    ]
