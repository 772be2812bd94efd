"""Two messages sharing an id in one build: the report still lists every message it dropped.

Ids key the report's records, and a filter may return modified copies of
what it keeps (same id, another object), so drops are worked out by id. A
history may still hold two messages with one id (two ``Message`` objects
given the same id, a provider returning one text twice with a content-derived
id): the report matches ids as many times as the output keeps each one, so a
dropped message never hides behind a kept one that shares its id, and
``removed_count`` always equals the records it announces.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from ctxcore_counters import ApproximateCounter
from ctxcore_filters import MaxMessages, TokenBudget
from ctxcore_providers import History, StaticPrompt
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxcore.engine.builder import ContextBuilder, Step
from ctxcore.model.messages import Message, ai, human


def _builder(*filters: Any) -> ContextBuilder:
    return ContextBuilder([Step("prompt", StaticPrompt("be brief")), Step("chat", History())], list(filters),
                          ApproximateCounter(), budget=100_000)


class TestTwoMessagesOneId:
    def test_the_dropped_one_is_reported_when_the_kept_one_shares_its_id(self) -> None:
        history = [human("first " * 40, id="dup"), ai("answer " * 40, id="a1"), human("second", id="dup")]
        built = _builder(Step("budget", TokenBudget(max_tokens=40))).build({"messages": history})
        assert [m.text for m in built.messages[1:]] == ["second"]
        report = built.report
        assert report.removed_count == 2
        assert [(r.id, r.preview.split()[0]) for r in report.dropped] == [("dup", "first"), ("a1", "answer")]
        assert [r.id for r in report.kept] == [built.messages[0].id, "dup"]

    def test_both_kept_means_nothing_dropped(self) -> None:
        history = [human("first", id="dup"), ai("answer", id="a1"), human("second", id="dup")]
        built = _builder(Step("budget", TokenBudget(max_tokens=10_000))).build({"messages": history})
        assert len(built.messages) == 4
        assert built.report.removed_count == 0 and built.report.dropped == []

    def test_a_filter_taking_a_plain_list_reports_the_same(self) -> None:
        """MaxMessages gets a list (not a lazy sequence): the same matching applies."""
        history = [human("first", id="dup"), ai("answer", id="a1"), human("second", id="dup")]
        built = _builder(Step("window", MaxMessages(2))).build({"messages": history})
        report = built.report
        assert report.removed_count == len(report.dropped) == len(history) + 1 - len(built.messages)
        assert Counter(r.id for r in report.records) == Counter(["dup", "dup", "a1", built.messages[0].id])

    def test_a_later_step_changing_the_list_does_not_change_the_record(self) -> None:
        """A plain list handed to a filter is recorded as a copy: the next filter may change it in place."""

        class PopInPlace:
            def apply(self, messages: list[Message], ctx: Any) -> list[Message]:
                messages.pop()  # a badly behaved filter: its input is the previous filter's result
                return messages

        history = [human(f"q{i}", id=f"q{i}") for i in range(3)]
        built = _builder(Step("window", MaxMessages(2)), Step("pop", PopInPlace())).build({"messages": history})
        assert [(r.id, r.by) for r in built.report.dropped] == [("q0", "window"), ("q2", "pop")]


ids = st.sampled_from(["a", "b", "c", "d"])


@st.composite
def histories(draw: st.DrawFn) -> list[Message]:
    """Alternating user/assistant messages whose ids repeat (drawn from four)."""
    n = draw(st.integers(1, 14))
    out = []
    for i in range(n):
        text = f"message {i} " + "word " * draw(st.integers(0, 30))
        out.append((human if i % 2 == 0 else ai)(text, id=draw(ids)))
    return out


@settings(max_examples=150, deadline=None)
@given(histories(), st.integers(15, 400), st.booleans())
def test_every_input_message_is_kept_or_reported_dropped(history: list[Message], budget: int, lazy_filter: bool) -> None:
    """Kept records plus dropped records are exactly the input, message for message, and removed_count agrees."""
    window = Step("f", TokenBudget(max_tokens=budget, on_overflow="warn")) if lazy_filter else Step("f", MaxMessages(budget % 7))
    built = _builder(window).build({"messages": history})
    report = built.report
    removed = report.removed_count  # read before the records are made

    def key(m_id: str, text: str) -> tuple[str, str]:  # "message <i>" is unique per input message
        return m_id, " ".join(text.split()[:2])

    inputs = Counter(key(m.id, m.text) for m in [built.messages[0], *history])
    output = Counter(key(m.id, m.text) for m in built.messages)
    assert Counter(key(r.id, r.preview) for r in report.kept) == output
    assert Counter(key(r.id, r.preview) for r in report.dropped) == inputs - output
    assert removed == len(report.dropped) == len(history) + 1 - len(built.messages)
