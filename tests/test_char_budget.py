"""The model budget's character limits: a build is within ``max_input_chars`` / ``max_schema_chars`` or raises.

The property: for any history, tool list and limits, ``build`` either returns
a request whose message text and tool schemas are within the limits, or
raises ``BudgetExceeded`` with ``unit == "chars"`` naming the limit; never a
request over a limit, never another error.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxcore import BudgetExceeded, ContextBuilder, ModelBudget, Pipeline, ai, human, system
from ctxcore.engine.char_budget import input_chars, schema_chars


class _Given:
    def get_messages(self, state, runtime):
        return state["messages"]


def _builder(budget: ModelBudget, host) -> ContextBuilder:
    from ctxcore_counters import ApproximateCounter
    from ctxcore_filters import TokenBudget

    return ContextBuilder([_Given()], [TokenBudget()], ApproximateCounter(), budget=budget)


TOOLS = [{"type": "function", "function": {"name": "read_file", "description": "Read a file.",
                                           "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}]


class TestLimits:
    def test_within_limits_passes(self, host) -> None:
        """A request under both limits is returned unchanged."""
        budget = ModelBudget(10_000, max_input_chars=100, max_schema_chars=500)
        built = _builder(budget, host).build({"messages": [system("be brief"), human("hi")], "tools": TOOLS})
        assert [m.text for m in built.messages] == ["be brief", "hi"]

    def test_input_over_limit_is_a_typed_error(self, host) -> None:
        """Message text over max_input_chars raises BudgetExceeded(unit='chars') naming the option and the counts."""
        budget = ModelBudget(10_000, max_input_chars=10)
        with pytest.raises(BudgetExceeded, match=r"hold 23 characters but model.max_input_chars is 10") as info:
            _builder(budget, host).build({"messages": [system("be brief"), human("hello there, ok")]})
        assert (info.value.unit, info.value.budget, info.value.required) == ("chars", 10, 23)
        assert info.value.report is not None

    def test_schema_over_limit_is_a_typed_error(self, host) -> None:
        """Tool schemas over max_schema_chars raise before any filter runs."""
        budget = ModelBudget(10_000, max_schema_chars=20)
        with pytest.raises(BudgetExceeded, match="max_schema_chars is 20") as info:
            _builder(budget, host).build({"messages": [human("hi")], "tools": TOOLS})
        assert info.value.unit == "chars" and info.value.required == schema_chars(TOOLS)

    def test_tool_call_arguments_count(self) -> None:
        """Tool-call names and arguments count as input characters."""
        call = ai(tool_calls=[{"id": "c1", "name": "grep", "arguments": {"q": "x"}}])
        assert input_chars([call]) == len("grep") + len(call.tool_calls[0].arguments) > len("grep")

    def test_yaml_options(self, host) -> None:
        """model.max_input_chars / max_schema_chars in a pipeline file reach the builder's budget."""
        pipe = Pipeline.from_string("version: 1\nmodel: {context_window: 8000, max_input_chars: 5, max_schema_chars: 9}\n"
                                    "providers: [history]\n", host=host)
        assert (pipe.budget.max_input_chars, pipe.budget.max_schema_chars) == (5, 9)
        with pytest.raises(BudgetExceeded, match="max_input_chars"):
            pipe.build({"messages": [{"role": "user", "content": "too long"}]})

    @pytest.mark.parametrize("bad", [-1, 1.5, True])
    def test_bad_limit(self, bad) -> None:
        """A limit that is not a whole number >= 0 is refused."""
        with pytest.raises(ValueError, match="max_input_chars"):
            ModelBudget(1000, max_input_chars=bad)


@settings(max_examples=80, deadline=None)
@given(texts=st.lists(st.text(max_size=80), min_size=1, max_size=12), tools=st.integers(0, 3),
       max_input=st.none() | st.integers(0, 600), max_schema=st.none() | st.integers(0, 700))
def test_within_limits_or_typed_error(texts: list[str], tools: int, max_input: int | None, max_schema: int | None) -> None:
    """Any history and limits: the build is within both limits, or raises BudgetExceeded with unit 'chars'."""
    import ctxcore_counters.plugin
    import ctxcore_filters.plugin

    from ctxcore.testing import fresh_host

    host = fresh_host(("ctxcore-filters", ctxcore_filters.plugin), ("ctxcore-counters", ctxcore_counters.plugin))
    messages = [human(t) if i % 2 == 0 else ai(t) for i, t in enumerate(texts)]
    state = {"messages": messages, "tools": TOOLS * tools}
    budget = ModelBudget(100_000, max_input_chars=max_input, max_schema_chars=max_schema)
    try:
        built = _builder(budget, host).build(state)
    except BudgetExceeded as exc:
        assert exc.unit == "chars" and exc.required > exc.budget
        return
    if max_input is not None:
        assert input_chars(built.messages) <= max_input
    if max_schema is not None:
        assert schema_chars(TOOLS * tools) <= max_schema
