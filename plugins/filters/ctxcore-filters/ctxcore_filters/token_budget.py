"""``token_budget``: drop whole units from the old end until the request fits.

The pinned prefix (leading system messages) is always kept. From the newest end
(``trim_from_start: true``, the default) or the oldest end, units are counted one
by one and kept while they fit; counting stops at the first unit that does not,
so a build never tokenizes history it is about to drop. The kept window is
contiguous: a smaller older unit is not pulled in past a gap.
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
        default="raise", description="When the pinned prefix alone is over budget: raise BudgetExceeded, or keep it with a warning."
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
        """Return the pinned prefix plus the units that fit; raise if the prefix alone does not."""
        budget = self.max_tokens if self.max_tokens is not None else ctx.budget
        if budget is None:
            raise ValueError("no token budget: set max_tokens or the pipeline's model.context_window")
        counter = ctx.counter
        messages = list(messages)
        start = pinned_prefix_length(messages, self.pinned_roles)
        pinned_tokens = counter.priming + sum(counter.count_message(m) for m in messages[:start])
        if pinned_tokens > budget:
            return self._overflow(messages[:start], pinned_tokens, budget, ctx)
        rest = messages[start:]
        units = group_units(rest)
        remaining = budget - pinned_tokens
        order = reversed(units) if self.trim_from_start else iter(units)
        kept = []
        for unit in order:
            cost = sum(counter.count_message(m) for m in unit.slice(rest))
            if cost > remaining:
                break
            remaining -= cost
            kept.append(unit)
        if not kept:
            return messages[:start]
        lo = min(u.start for u in kept)
        hi = max(u.end for u in kept)
        return messages[:start] + rest[lo:hi]

    def _overflow(self, pinned: list[Message], required: int, budget: int, ctx: FilterContext) -> list[Message]:
        message = (
            f"the pinned prefix alone needs {required} tokens but the budget is {budget} "
            f"(filter '{ctx.step_id}'); shorten the system prompt or raise model.context_window"
        )
        if self.on_overflow == "raise":
            raise BudgetExceeded(message, budget=budget, required=required, report=ctx.report)
        log.warning("over_budget", filter=ctx.step_id, required=required, budget=budget)
        if ctx.report is not None:
            ctx.report.warnings.append(message + " (on_overflow: warn — sent over budget)")
        return pinned
