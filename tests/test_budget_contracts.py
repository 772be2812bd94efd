"""The budget-filter contract suite catches broken budget filters (it can fail)."""

from __future__ import annotations

import pytest

from ctxcore.testing.contracts.budget_filter import (
    BudgetFilterContract,
    protected_histories,
)


def run_check(method: str, make_filter) -> None:
    instance = type("Probe", (BudgetFilterContract,), {"make_filter": make_filter})()
    getattr(instance, method)()


class KeepNewest:
    """Keeps the newest messages that fit, ignoring zones (a typical naive budget filter)."""

    def apply(self, messages, ctx):
        out, used = [], ctx.counter.priming
        for m in reversed(messages):
            cost = ctx.counter.count_message(m)
            if used + cost > ctx.budget:
                break
            out.append(m)
            used += cost
        return out[::-1]


def test_protected_histories_hold_a_rule() -> None:
    """Every generated history holds exactly one protected user message (guards the checks below)."""
    for history in protected_histories().values():
        assert sum(1 for m in history if m.zone == "protected" and m.role == "user") == 1


def test_dropping_protected_content_fails() -> None:
    """A filter that trims a protected rule fails the protected check."""
    with pytest.raises(AssertionError, match="dropped protected"):
        run_check("test_keeps_protected_messages", lambda self: KeepNewest())


def test_over_budget_output_fails() -> None:
    """A filter that returns everything regardless of the budget fails the budget check."""

    class Everything:
        def apply(self, messages, ctx):
            return list(messages)

    with pytest.raises(AssertionError):
        run_check("test_within_budget_or_raises", lambda self: Everything())


def test_non_monotone_filter_fails() -> None:
    """A filter keeping different messages at a bigger budget fails the monotonicity check."""

    class Odd:
        def apply(self, messages, ctx):
            step = 2 if ctx.budget >= 400 else 1
            return [m for i, m in enumerate(messages) if m.role == "system" or i % step == 0][-3:]

    with pytest.raises(AssertionError):
        run_check("test_monotone_in_budget", lambda self: Odd())
