"""``ProviderContract`` and ``FilterContract``: the suites every provider and filter passes (like langchain-tests).

Subclass a contract in a test module, name the subclass ``Test...`` and give it
the factory fixture; pytest collects every check::

    from ctxcore.testing.contracts import FilterContract

    class TestMyFilter(FilterContract):
        def make_filter(self):
            return MyFilter(limit=3)

The suites use plain pytest (no extra dependency) and fixed sample histories
that hold what breaks filters in practice: system prefixes, parallel tool
calls answered out of order, long tool results.
"""

from __future__ import annotations

import asyncio
import copy
import inspect
from typing import Any

import pytest

from ctxcore.engine.budget import CachedCounter, FilterContext
from ctxcore.engine.counting import MessageCounter
from ctxcore.engine.report import BuildReport
from ctxcore.model.messages import Message, ai, human, system, tool
from ctxcore.model.transactions import check_tool_pairing, pinned_prefix_length
from ctxcore.testing.contracts.base import Contract

__all__ = ["ProviderContract", "FilterContract", "sample_histories"]


class _CharCounter(MessageCounter):
    """A dependency-free counter for the suites: one token per four characters."""

    name = "contract-chars"

    def count_text(self, text: str) -> int:
        return (len(text) + 3) // 4


def _call(*ids: str) -> Message:
    return ai(tool_calls=[{"id": i, "name": "read_file", "arguments": {"path": f"src/{i}.py"}} for i in ids])


def sample_histories() -> dict[str, list[Message]]:
    """Named, legal histories every filter must handle (fresh objects on every call)."""
    long_result = "def handler(event):\n    return event\n" * 60
    return {
        "empty": [],
        "system_only": [system("You are terse."), system("Follow the repository's rules.")],
        "chat": [system("persona"), *[m for i in range(6) for m in (human(f"question {i} " * 8), ai(f"answer {i} " * 10))]],
        "tool_rounds": [
            system("persona"),
            human("fix the failing test"),
            _call("a"),
            tool(long_result, tool_call_id="a"),
            _call("b", "c", "d"),
            tool("result d " * 30, tool_call_id="d"),
            tool("result b " * 30, tool_call_id="b"),
            tool("result c " * 30, tool_call_id="c"),
            ai("found it"),
            human("thanks, now add a test"),
            _call("e"),
            tool("ok", tool_call_id="e"),
        ],
        "no_system": [human("hi"), ai("hello"), human("what now?")],
    }


class ProviderContract(Contract):
    """Checks every provider must pass. Subclasses implement :meth:`make_provider`.

    Override :meth:`sample_state` to give the provider the state it reads.
    """

    __contract__ = True

    def make_provider(self) -> Any:  # pragma: no cover - subclasses implement
        raise NotImplementedError

    def sample_state(self) -> dict[str, Any]:
        """A state the provider has something to say about."""
        return {"messages": [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}]}

    def test_returns_messages(self) -> None:
        """get_messages returns a sequence of ctxcore Messages."""
        out = self.make_provider().get_messages(self.sample_state(), {})
        assert all(isinstance(m, Message) for m in out)

    def test_same_state_same_messages(self) -> None:
        """Two calls with one state give identical content: the prompt prefix stays cacheable."""
        provider, state = self.make_provider(), self.sample_state()
        first = [m.to_openai() for m in provider.get_messages(state, {})]
        second = [m.to_openai() for m in provider.get_messages(state, {})]
        assert first == second

    def test_does_not_mutate_state(self) -> None:
        """The caller's state is read, never changed."""
        state = self.sample_state()
        before = copy.deepcopy(state)
        self.make_provider().get_messages(state, {})
        assert state == before

    def test_empty_state_is_fine(self) -> None:
        """An empty state and empty runtime do not raise."""
        out = self.make_provider().get_messages({}, {})
        assert all(isinstance(m, Message) for m in out)

    def test_async_matches_sync(self) -> None:
        """When aget_messages exists it returns what get_messages returns."""
        provider = self.make_provider()
        fn = getattr(provider, "aget_messages", None)
        if fn is None or not inspect.iscoroutinefunction(fn):
            pytest.skip("provider has no async variant")
        state = self.sample_state()
        sync = [m.to_openai() for m in provider.get_messages(state, {})]
        assert [m.to_openai() for m in asyncio.run(fn(state, {}))] == sync


class FilterContract(Contract):
    """Checks every filter must pass. Subclasses implement :meth:`make_filter`.

    Class attributes describe what the filter promises beyond the basics:
    ``compresses`` (it may replace messages, so output need not be a
    subsequence of input), ``idempotent`` and ``keeps_pinned_system``.
    """

    __contract__ = True

    compresses: bool = False
    idempotent: bool = True
    keeps_pinned_system: bool = True
    budgets: tuple[int | None, ...] = (None, 40, 120, 400, 100_000)

    def make_filter(self) -> Any:  # pragma: no cover - subclasses implement
        raise NotImplementedError

    def context(self, budget: int | None) -> FilterContext:
        """The FilterContext the suite passes (a shared caching counter, a fresh report)."""
        return FilterContext(counter=CachedCounter(_CharCounter()), budget=budget, report=BuildReport(), step_id="contract")

    def _cases(self):
        for name, history in sample_histories().items():
            for budget in self.budgets:
                yield name, history, budget

    def _apply(self, history: list[Message], budget: int | None) -> list[Message] | None:
        from ctxcore.errors import BudgetExceeded

        try:
            return list(self.make_filter().apply(history, self.context(budget)))
        except BudgetExceeded:
            return None  # refusing is allowed; returning an illegal request is not

    def _outputs(self):
        """(name, history, budget, output) for every case the filter did not refuse."""
        for name, history, budget in self._cases():
            out = self._apply(history, budget)
            if out is not None:
                yield name, history, budget, out

    def test_returns_messages(self) -> None:
        """apply returns ctxcore Messages."""
        for _, _, _, out in self._outputs():
            assert all(isinstance(m, Message) for m in out)

    def test_never_splits_tool_units(self) -> None:
        """Whatever it keeps, every tool call keeps its results and every result its call."""
        for name, _, budget, out in self._outputs():
            try:
                check_tool_pairing(out)
            except Exception as exc:  # pragma: no cover - reported as a failure
                pytest.fail(f"history {name!r}, budget {budget}: {exc}")

    def test_output_is_subsequence(self) -> None:
        """Without declared compression, output messages appear in input order."""
        if self.compresses:
            pytest.skip("filter declares compression")
        for name, history, budget, out in self._outputs():
            ids = iter(m.id for m in history)
            assert all(m.id in ids for m in out), f"history {name!r}, budget {budget}: not a subsequence"

    def test_does_not_mutate_input(self) -> None:
        """The list passed in is left as it was."""
        history = sample_histories()["tool_rounds"]
        given = list(history)
        self._apply(given, 120)
        assert [m.id for m in given] == [m.id for m in history]

    def test_keeps_leading_system_messages(self) -> None:
        """The pinned system prefix survives."""
        if not self.keeps_pinned_system:
            pytest.skip("filter does not promise to keep the system prefix")
        for name, history, budget, out in self._outputs():
            prefix = [m.id for m in history[: pinned_prefix_length(history, ("system",))]]
            assert [m.id for m in out[: len(prefix)]] == prefix, f"history {name!r}, budget {budget}"

    def test_idempotent(self) -> None:
        """Applying the filter to its own output changes nothing."""
        if not self.idempotent:
            pytest.skip("filter is not idempotent by design")
        for name, _, budget, once in self._outputs():
            twice = self._apply(once, budget)
            assert twice is not None and [m.id for m in twice] == [m.id for m in once], f"history {name!r}, budget {budget}"
