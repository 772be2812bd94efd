"""A conformance suite for filters that enforce a token budget.

Subclass :class:`BudgetFilterContract` (it includes every check of
:class:`~ctxcore.testing.contracts.FilterContract`) and give it ``make_filter``;
the filter must read its limit from ``ctx.budget``::

    from ctxcore.testing.contracts.budget_filter import BudgetFilterContract

    class TestMyBudget(BudgetFilterContract):
        def make_filter(self):
            return MyBudgetFilter()

The extra checks: the output fits the budget or ``BudgetExceeded`` is raised,
protected messages anywhere in the history survive, and a bigger budget keeps
everything a smaller one kept.
"""

from __future__ import annotations

from typing import Any

from ctxcore.errors import BudgetExceeded
from ctxcore.model.messages import Message, human
from ctxcore.testing.contracts.components import FilterContract, sample_histories

__all__ = ["BudgetFilterContract", "protected_histories"]


def protected_histories() -> dict[str, list[Message]]:
    """The sample histories with a protected rule inserted after the system prefix and in the middle."""
    out = {}
    for name, history in sample_histories().items():
        if len(history) < 2:
            continue
        middle = len(history) // 2
        while middle < len(history) and history[middle].role == "tool":
            middle += 1  # never inside a tool unit
        rule = human(f"Project rule for {name}: never push to main.", zone="protected")
        out[name] = [*history[:middle], rule, *history[middle:]]
    return out


class BudgetFilterContract(FilterContract):
    """Checks every token-budget filter must pass, on top of the filter contract."""

    __contract__ = True

    budgets: tuple[int | None, ...] = (0, 40, 120, 400, 100_000)

    def _fit(self, history: list[Message], budget: int) -> list[Message] | None:
        try:
            return list(self.make_filter().apply(history, self.context(budget)))
        except BudgetExceeded:
            return None

    def test_within_budget_or_raises(self) -> None:
        """The output (messages plus reply priming) fits the budget, or BudgetExceeded is raised."""
        for name, history, budget in self._cases():
            if budget is None:
                continue
            ctx = self.context(budget)
            try:
                out = list(self.make_filter().apply(history, ctx))
            except BudgetExceeded:
                continue
            assert ctx.counter.count_messages(out) <= budget, f"history {name!r}, budget {budget}"

    def test_keeps_protected_messages(self) -> None:
        """Protected messages outside the pinned prefix are never trimmed."""
        for name, history in protected_histories().items():
            for budget in (b for b in self.budgets if b is not None):
                out = self._fit(history, budget)
                if out is None:
                    continue
                kept = {m.id for m in out}
                missing = [m.text for m in history if m.zone == "protected" and m.id not in kept]
                assert not missing, f"history {name!r}, budget {budget}: dropped protected {missing}"

    def test_monotone_in_budget(self) -> None:
        """A bigger budget keeps everything a smaller one keeps."""
        budgets = sorted(b for b in self.budgets if b is not None)
        for name, history in sample_histories().items():
            previous: set[Any] | None = None
            for budget in budgets:
                out = self._fit(history, budget)
                if out is None:
                    assert previous is None, f"history {name!r}: fits a smaller budget but not {budget}"
                    continue
                kept = {m.id for m in out}
                if previous is not None:
                    assert previous <= kept, f"history {name!r}: budget {budget} lost messages a smaller budget kept"
                previous = kept
