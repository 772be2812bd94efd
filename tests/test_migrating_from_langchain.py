"""The claims of docs/migrating-from-langchain.md, checked against the real langchain-core trim_messages.

The guide says: with the same per-message token counts, ``trim_messages(strategy="last",
include_system=True, start_on="human")`` and a pipeline of ``history`` plus
``token_budget`` keep the same messages; and that the two differ where the guide
says they do (a split tool round without ``start_on``, a newest turn over budget).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import BaseMessage, convert_to_messages, trim_messages

from ctxcore import Message, Pipeline
from ctxcore.errors import BudgetExceeded
from ctxcore.testing import fresh_host


@pytest.fixture(scope="module")
def plugins() -> Any:
    """The workspace plugins, registered in-process (no dependence on what else is installed)."""
    import ctxcore_counters.plugin
    import ctxcore_filters.plugin
    import ctxcore_providers.plugin

    return fresh_host(
        ("ctxcore-providers", ctxcore_providers.plugin),
        ("ctxcore-filters", ctxcore_filters.plugin),
        ("ctxcore-counters", ctxcore_counters.plugin),
    )


def _pipeline(plugins: Any, max_tokens: int, on_overflow: str = "warn") -> Pipeline:
    """The guide's replacement for trim_messages(strategy="last", include_system=True, start_on="human")."""
    return Pipeline.from_dict({
        "version": 1,
        "counter": "approximate",
        "providers": [{"type": "history", "annotate": False}],
        "filters": [{"type": "token_budget", "max_tokens": max_tokens, "on_overflow": on_overflow}],
    }, host=plugins)


@st.composite
def conversations(draw: Any) -> list[dict[str, Any]]:
    """A legal OpenAI history: a system prompt, then turns of a user message, tool rounds and an answer.

    Every message's text is unique, so results can be compared by text.
    """
    n = 0

    def text(kind: str) -> str:
        nonlocal n
        n += 1
        return f"{kind} {n} " + "lorem ipsum " * draw(st.integers(0, 30))

    out: list[dict[str, Any]] = [{"role": "system", "content": text("system")}]
    for _ in range(draw(st.integers(1, 6))):
        out.append({"role": "user", "content": text("user")})
        for _ in range(draw(st.integers(0, 2))):
            calls = [{"id": f"call_{n}_{i}", "type": "function",
                      "function": {"name": "read_file", "arguments": json.dumps({"path": f"f{i}.py"})}}
                     for i in range(draw(st.integers(1, 3)))]
            out.append({"role": "assistant", "content": text("plan"), "tool_calls": calls})
            out.extend({"role": "tool", "tool_call_id": c["id"], "content": text("result")} for c in calls)
        if draw(st.booleans()):
            out.append({"role": "assistant", "content": text("answer")})
    return out


def _texts_of_lc(messages: list[BaseMessage]) -> list[str]:
    return [m.content for m in messages if isinstance(m.content, str)]


def _trim_like_the_guide(history: list[dict[str, Any]], max_tokens: int, **kwargs: Any) -> list[str]:
    """trim_messages counting each message as ctxcore's approximate counter does, for a ctxcore budget of max_tokens.

    trim_messages calls token_counter separately on the system message and on the
    rest, so the counter is a plain per-message sum and the request's constant
    (the reply priming ctxcore's budget includes) comes off max_tokens instead.
    """
    from ctxcore_counters import ApproximateCounter

    counter = ApproximateCounter()
    cost = {m["content"]: counter.count_message(Message.from_openai(m)) for m in history}
    priming = counter.count_messages([])

    def token_counter(messages: list[BaseMessage]) -> int:
        return sum(cost[m.content] for m in messages)

    options = {"strategy": "last", "include_system": True, "start_on": "human", **kwargs}
    return _texts_of_lc(trim_messages(convert_to_messages(history), max_tokens=max(0, max_tokens - priming),
                                      token_counter=token_counter, **options))


class TestSameMessagesKept:
    @settings(max_examples=150, deadline=None)
    @given(history=conversations(), fraction=st.floats(0.0, 1.2))
    def test_token_budget_equals_trim_messages_last_with_start_on_human(
        self, plugins: Any, history: list[dict[str, Any]], fraction: float
    ) -> None:
        """With equal counts, token_budget + legal start keeps exactly what trim_messages keeps (over budget: warn)."""
        from ctxcore_counters import ApproximateCounter

        counter = ApproximateCounter()
        full = counter.count_messages([]) + sum(counter.count_message(Message.from_openai(m)) for m in history)
        budget = int(full * fraction)
        built = _pipeline(plugins, budget).build({"messages": history})
        assert [m.text for m in built.messages] == _trim_like_the_guide(history, budget)


class TestDifferences:
    HISTORY = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Read a.py and b.py."},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\": \"a.py\"}"}},
            {"id": "c2", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\": \"b.py\"}"}},
        ]},
        {"role": "tool", "tool_call_id": "c1", "content": "print('a') " * 40},
        {"role": "tool", "tool_call_id": "c2", "content": "print('b')"},
    ]

    def test_without_start_on_trim_messages_splits_a_tool_round(self, plugins: Any) -> None:
        """Without start_on, trim_messages can return a tool result without its call; the pipeline never does."""
        kept = _trim_like_the_guide(self.HISTORY, 40, start_on=None)
        assert kept == ["You are a coding agent.", "print('b')"]  # an orphan tool result: OpenAI refuses it
        built = _pipeline(plugins, 40).build({"messages": self.HISTORY})
        assert [m.role for m in built.messages] == ["system"]
        assert built.report.warnings  # the newest unit did not fit: said so, not silent

    def test_newest_turn_over_budget(self, plugins: Any) -> None:
        """A current turn over budget: trim_messages silently returns the system prompt; token_budget raises."""
        assert _trim_like_the_guide(self.HISTORY, 40) == ["You are a coding agent."]
        with pytest.raises(BudgetExceeded, match="plus the newest unit"):
            _pipeline(plugins, 40, on_overflow="raise").build({"messages": self.HISTORY})


def test_the_guides_pipeline_is_valid(plugins: Any) -> None:
    """The YAML of the guide's 'common call' compiles, and the error it quotes is the one token_budget raises."""
    import re
    from pathlib import Path

    import yaml

    guide = (Path(__file__).resolve().parent.parent / "docs" / "migrating-from-langchain.md").read_text(encoding="utf-8")
    block = re.search(r"```yaml\n(.*?)```", guide, re.DOTALL)
    assert block is not None
    pipeline = Pipeline.from_dict(yaml.safe_load(block.group(1)), host=plugins)
    built = pipeline.build({"messages": TestDifferences.HISTORY})
    assert [m.role for m in built.messages] == ["system", "system", "user", "assistant", "tool", "tool"]
    assert any(m.text.startswith("History semantics:") for m in built.messages[:2])
    with pytest.raises(BudgetExceeded) as err:
        _pipeline(plugins, 40, on_overflow="raise").build({"messages": TestDifferences.HISTORY})
    quoted = re.search(r"\(`(the pinned prefix .*?) \.\.\.`\)", guide)
    assert quoted is not None and str(err.value).startswith(quoted.group(1)), str(err.value)
