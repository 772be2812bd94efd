"""``token_budget``: drop whole units from the old end until the request fits.

The pinned prefix (leading system messages) is always kept. From the newest end
(``trim_from_start: true``, the default) or the oldest end, units are counted one
by one and kept while they fit; counting stops at the first unit that does not,
so a build never tokenizes history it is about to drop. The kept window is
contiguous: a smaller older unit is not pulled in past a gap.

Overflow: when the pinned prefix alone, or the pinned prefix plus the newest
unit (the current turn), does not fit, ``on_overflow: raise`` (default) raises
:class:`BudgetExceeded` carrying the report; ``warn`` returns the pinned prefix
only and records a warning. Never silently.
"""

from __future__ import annotations

from typing import Literal, Sequence

import structlog
from pydantic import BaseModel, ConfigDict, Field

from ctxcore.budget import FilterContext
from ctxcore.errors import BudgetExceeded
from ctxcore.messages import Message
from ctxcore.transactions import group_units, pinned_prefix_length

log = structlog.get_logger("ctxcore_filters.token_budget")


class TokenBudgetConfig(BaseModel):
    """Options of the ``token_budget`` filter."""

    model_config = ConfigDict(extra="forbid")

    max_tokens: int | None = Field(default=None, ge=0, description="Input-token limit; default: the pipeline's model budget.")
    pinned_roles: tuple[str, ...] = Field(default=("system",), description="Roles of the leading prefix always kept.")
    trim_from_start: bool = Field(default=True, description="Drop the oldest units (true) or the newest (false).")
    on_overflow: Literal["raise", "warn"] = Field(
        default="raise",
        description="When the pinned prefix, or it plus the current turn, is over budget: raise BudgetExceeded, "
        "or return the pinned prefix with a warning.",
    )


class TokenBudget:
    """Keeps the pinned prefix and as many whole units as fit the token budget."""

    def __init__(
        self,
        max_tokens: int | None = None,
        pinned_roles: Sequence[str] = ("system",),
        trim_from_start: bool = True,
        on_overflow: Literal["raise", "warn"] = "raise",
    ) -> None:
        self.max_tokens = max_tokens
        self.pinned_roles = tuple(pinned_roles)
        self.trim_from_start = trim_from_start
        self.on_overflow = on_overflow

    def apply(self, messages: Sequence[Message], ctx: FilterContext) -> list[Message]:
        """Return the pinned prefix plus the units that fit; overflow if not even one unit fits."""
        budget = self.max_tokens if self.max_tokens is not None else ctx.budget
        if budget is None:
            raise ValueError("no token budget: set max_tokens or the pipeline's model.context_window")
        counter = ctx.counter
        messages = list(messages)
        start = pinned_prefix_length(messages, self.pinned_roles)
        pinned_tokens = counter.priming + sum(counter.count_message(m) for m in messages[:start])
        if pinned_tokens > budget:
            detail = f"the pinned prefix alone needs {pinned_tokens} tokens"
            return self._overflow(messages[:start], pinned_tokens, budget, ctx, detail)
        rest = messages[start:]
        units = group_units(rest)
        remaining = budget - pinned_tokens
        order = reversed(units) if self.trim_from_start else iter(units)
        kept = []
        cost = 0
        for unit in order:
            cost = sum(counter.count_message(m) for m in unit.slice(rest))
            if cost > remaining:
                break
            remaining -= cost
            kept.append(unit)
        if not kept:
            if not units:
                return messages[:start]
            end = "newest" if self.trim_from_start else "oldest"
            detail = f"the pinned prefix ({pinned_tokens} tokens) plus the {end} unit ({cost} tokens) need {pinned_tokens + cost}"
            return self._overflow(messages[:start], pinned_tokens + cost, budget, ctx, detail)
        lo = min(u.start for u in kept)
        hi = max(u.end for u in kept)
        return messages[:start] + rest[lo:hi]

    def _overflow(self, pinned: list[Message], required: int, budget: int, ctx: FilterContext, detail: str) -> list[Message]:
        message = (
            f"{detail} but the budget is {budget} (filter '{ctx.step_id}'); "
            "shorten the system prompt or the current turn, or raise model.context_window"
        )
        if self.on_overflow == "raise":
            raise BudgetExceeded(message, budget=budget, required=required, report=ctx.report)
        log.warning("over_budget", filter=ctx.step_id, required=required, budget=budget)
        if ctx.report is not None:
            ctx.report.warnings.append(message + " (on_overflow: warn — sent without the conversation)")
        return pinned
