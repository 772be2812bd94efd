"""The error the adapter raises when a pydantic-ai request cannot be made to fit."""

from __future__ import annotations

from ctxcore import BudgetExceeded

__all__ = ["ContextBudgetExceeded"]

_FIX = (
    "pydantic-ai request: the protected part (system prompts, instructions, tool schemas, the current "
    "request) does not fit the pipeline's budget; raise model.context_window or lower "
    "reserve_output_tokens in the pipeline, shorten the agent's system prompt or instructions, "
    "or start a new conversation"
)


class ContextBudgetExceeded(BudgetExceeded):
    """A ``BudgetExceeded`` raised from inside a pydantic-ai run; the message names the fix.

    Catch it as :class:`ctxcore.BudgetExceeded` (or this class); ``report``,
    ``budget``, ``required`` and ``unit`` are those of the build that failed.
    """

    @classmethod
    def from_error(cls, error: BudgetExceeded, cause: str | None = None) -> ContextBudgetExceeded:
        """Wrap the pipeline's error, keeping its numbers and report; ``cause`` (the largest contributor) leads."""
        lead = f"{cause}. " if cause else ""
        return cls(f"{lead}{error} — {_FIX}", budget=error.budget, required=error.required, report=error.report,
                   unit=error.unit)
