"""``token_budget``: drop whole units, lowest priority and oldest first, until the request fits.

Always kept: the pinned prefix (leading system messages), every unit holding a
protected message (``zone: protected``: rules, permanent memory, skills) and
the current turn (the newest dynamic unit). The other dynamic units are kept in
order of priority (highest first) and, within a priority, newest first
(``trim_from_start: true``, the default) or oldest first; counting stops at the
first unit that does not fit, so a build never tokenizes history it is about to
drop, and within a priority the kept window is contiguous. With equal
priorities this is "keep the newest units that fit".

Overflow: when the always-kept part does not fit, ``on_overflow: raise``
(default) raises :class:`BudgetExceeded` carrying the report; ``warn`` returns
the pinned prefix and the protected units, over budget, and records a warning.
Never silently.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from operator import attrgetter
from typing import Literal

import structlog
from pydantic import BaseModel, ConfigDict, Field

from ctxcore import BudgetExceeded, FilterContext, Message, Unit, group_units
from ctxcore.kit import PrefixMemo, pinned_prefix_length, structure_of
from ctxcore_filters.token_window import Overflow, TailFirst

log = structlog.get_logger("ctxcore_filters.token_budget")

_ZONE = attrgetter("zone")
_PRIORITY = attrgetter("priority")


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
    """Keeps the pinned prefix, the protected units and as many other whole units as fit.

    Two implementations with one output and one report. The reference
    (``fast=False``, :meth:`reference`) counts every message with
    ``count_each``, groups the whole list into units and visits them in keep
    order: it reads in one sitting and keeps nothing between builds. The fast
    path adds, when nothing after the pinned prefix is protected (but for a
    run of protected messages right after it, such as the ``agent`` preset's
    recalled-memory block) and every other message has one priority (the usual
    conversation), the tail-first walk of :mod:`ctxcore_filters.token_window`:
    it reads and counts only the units it keeps, and a next turn re-walks only
    what is new. Why both: the reference is the specification the fast path
    is tested against (the behaviour suites run on both).
    """

    accepts_lazy = True  # reads roles/zones from the structure; indexes only what it inspects

    def __init__(
        self,
        max_tokens: int | None = None,
        pinned_roles: Sequence[str] = ("system",),
        trim_from_start: bool = True,
        on_overflow: Literal["raise", "warn"] = "raise",
        *,
        fast: bool = True,
    ) -> None:
        self.max_tokens = max_tokens
        self.pinned_roles = tuple(pinned_roles)
        self.trim_from_start = trim_from_start
        self.on_overflow = on_overflow
        self.fast = fast
        self.accepts_lazy = fast  # the reference takes a plain list
        self._shape: PrefixMemo[tuple[bool, frozenset[int]]] = PrefixMemo()
        self._tail = TailFirst()

    def reference(self) -> TokenBudget:
        """A new memo-free twin with the same settings: the reference implementation (see the class docstring)."""
        return TokenBudget(self.max_tokens, self.pinned_roles, self.trim_from_start, self.on_overflow, fast=False)

    def apply(self, messages: Sequence[Message], ctx: FilterContext) -> list[Message]:
        """Return the always-kept part plus the units that fit; overflow if the always-kept part does not."""
        budget = self.max_tokens if self.max_tokens is not None else ctx.budget
        if budget is None:
            raise ValueError("no token budget: set max_tokens or the pipeline's model.context_window")
        if not self.fast:
            plain = list(messages)
            each = ctx.counter.count_each(plain)
            return self._by_priority(plain, budget, ctx, lambda a, b: sum(each[a:b]))
        structure = structure_of(messages)
        if self.trim_from_start:
            pinned = pinned_prefix_length(structure, self.pinned_roles)
            start = _protected_run(structure, pinned)  # kept as the pinned prefix is: the same result
            if self._uniform(structure, start):
                kept = self._tail.run(messages, structure, start, budget, ctx.counter)
                if isinstance(kept, Overflow):
                    detail = self._detail(start > pinned, kept.required, kept.current_cost, kept.has_current, budget)
                    return self._overflow(kept.pinned, start, [], set(), kept.required + kept.current_cost, budget,
                                          ctx, detail)
                return kept
        plain = list(messages)
        count = ctx.counter.count_message
        return self._by_priority(plain, budget, ctx, lambda a, b: sum(map(count, plain[a:b])))

    def _by_priority(
        self, messages: list[Message], budget: int, ctx: FilterContext, cost_of: Callable[[int, int], int],
    ) -> list[Message]:
        """The general walk: units in keep order (priority, then age), until the first that does not fit.

        ``cost_of(a, b)`` is the tokens of ``messages[a:b]``; the fast path
        counts a unit only when the walk reaches it.
        """
        start = pinned_prefix_length(messages, self.pinned_roles)
        rest = messages[start:]
        units = group_units(rest)

        def cost(unit: Unit) -> int:
            return cost_of(start + unit.start, start + unit.end)

        protected, dynamic, priorities = _classify(units, rest)
        required = ctx.counter.priming + cost_of(0, start) + sum(cost(u) for u in protected)
        always = set(protected)
        current = (dynamic[-1] if self.trim_from_start else dynamic[0]) if dynamic else None
        current_cost = cost(current) if current is not None else 0
        if required + current_cost > budget:
            detail = self._detail(bool(protected), required, current_cost, current is not None, budget)
            return self._overflow(messages, start, rest, always, required + current_cost, budget, ctx, detail)
        if current is None:
            return messages
        kept = always | {current}
        remaining = budget - required - current_cost
        for unit in self._order(dynamic, priorities, current):
            unit_cost = cost(unit)
            if unit_cost > remaining:
                break
            remaining -= unit_cost
            kept.add(unit)
        return messages[:start] + [m for u in sorted(kept, key=_start) for m in u.slice(rest)]

    def _uniform(self, structure: Sequence[Message], start: int) -> bool:
        """True when no message after ``start`` is protected and all share one priority (tail-first applies).

        Part by part (PrefixMemo.walk): the state entering the history is the
        same whatever the parts before it said, so a system prompt whose text
        or length changed is walked again and the history resumes after what
        was seen last time, as does a history followed by a new current turn.
        """
        protected, priorities = self._shape.walk(structure, (False, frozenset()), _shape_step, start)
        return not protected and len(priorities) <= 1

    def _detail(self, protected: bool, required: int, current_cost: int, has_current: bool, budget: int) -> str:
        """What is over budget, for the overflow message.

        ``required`` in the error is everything that must fit, so a caller
        raising the budget by the shortfall gets a request that fits.
        """
        what = "the pinned prefix" if not protected else "the pinned prefix and the protected messages"
        end = "newest" if self.trim_from_start else "oldest"
        if required > budget:
            detail = f"{what} alone need{'' if protected else 's'} {required} tokens"
            if has_current:
                detail += f" ({required + current_cost} with the {end} unit)"
            return detail
        return f"{what} ({required} tokens) plus the {end} unit ({current_cost} tokens) need {required + current_cost}"

    def _order(self, dynamic: list[Unit], priorities: list[int], current: Unit) -> Iterator[Unit]:
        """Dynamic units in keep order: highest priority first, then newest (or oldest) first.

        Bucketed by priority (usually one bucket), so no sort over the history.
        """
        if min(priorities) == max(priorities):  # one priority: walk lazily, nothing older is touched
            ordered = reversed(dynamic) if self.trim_from_start else iter(dynamic)
            yield from (u for u in ordered if u is not current)
            return
        buckets: dict[int, list[Unit]] = {}
        for unit, priority in zip(dynamic, priorities, strict=True):
            if unit is not current:
                buckets.setdefault(priority, []).append(unit)
        for priority in sorted(buckets, reverse=True):
            bucket = buckets[priority]
            yield from (reversed(bucket) if self.trim_from_start else bucket)

    def _overflow(
        self, messages: list[Message], start: int, rest: list[Message], always: set[Unit],
        required: int, budget: int, ctx: FilterContext, detail: str,
    ) -> list[Message]:
        message = (
            f"{detail} but the budget is {budget} (filter '{ctx.step_id}'); "
            "shorten the system prompt or the current turn, or raise model.context_window"
        )
        if self.on_overflow == "raise":
            raise BudgetExceeded(message, budget=budget, required=required, report=ctx.report)
        log.warning("over_budget", filter=ctx.step_id, required=required, budget=budget)
        if ctx.report is not None:
            ctx.report.warnings.append(message + " (on_overflow: warn — sent without the conversation)")
        return messages[:start] + [m for u in sorted(always, key=_start) for m in u.slice(rest)]


def _start(unit: Unit) -> int:
    return unit.start


def _classify(units: list[Unit], rest: Sequence[Message]) -> tuple[list[Unit], list[Unit], list[int]]:
    """Split units into protected and dynamic; a dynamic unit is as important as its top message."""
    protected: list[Unit] = []
    dynamic: list[Unit] = []
    priorities: list[int] = []
    for u in units:
        if u.end - u.start == 1:  # the common case, without a generator per unit
            m = rest[u.start]
            if m.zone == "protected":
                protected.append(u)
            else:
                dynamic.append(u)
                priorities.append(m.priority)
            continue
        part = rest[u.start:u.end]
        if any(m.zone == "protected" for m in part):
            protected.append(u)
        else:
            dynamic.append(u)
            priorities.append(max(m.priority for m in part))
    return protected, dynamic, priorities


def _shape_step(state: tuple[bool, frozenset[int]], tail: Sequence[Message]) -> tuple[bool, frozenset[int]]:
    """One leg of the shape walk (PrefixMemo.walk): whether ``tail`` holds a protected message, and its priorities."""
    protected, priorities = state
    if protected:
        return state
    return "protected" in map(_ZONE, tail), priorities.union(map(_PRIORITY, tail))


def _protected_run(structure: Sequence[Message], start: int) -> int:
    """The end of the run of protected one-message units right after the pinned prefix (``start``).

    The ``agent`` preset's system part puts an untrusted block (recalled
    memory, a workspace file) between its system messages: a protected user
    message, always kept. Keeping such a leading run with the pinned prefix
    gives exactly what keeping it as protected units does (nothing dynamic is
    before it), so the tail-first walk still applies. A message with tool
    calls or a tool result ends the run (its unit may be longer than one
    message). Reads only the run and the message after it.
    """
    end, n = start, len(structure)
    while end < n:
        m = structure[end]
        if m.zone != "protected" or m.role == "tool" or m.has_tool_calls:
            break
        end += 1
    return end
