"""The errors this integration raises, each a subclass of a ctxcore error so one ``except`` catches both."""

from __future__ import annotations

from ctxcore import BudgetExceeded, InvalidHistory

__all__ = ["ContextBudgetExceeded", "UnsupportedItem"]


class UnsupportedItem(InvalidHistory):
    """A Responses input item this integration cannot represent as a ctxcore message (``.index`` names it)."""


class ContextBudgetExceeded(BudgetExceeded):
    """The agent's trusted part (instructions, tool definitions, protected messages) alone is over the pipeline's budget.

    Carries the build report like :class:`ctxcore.BudgetExceeded`; the message
    names what to change.
    """
