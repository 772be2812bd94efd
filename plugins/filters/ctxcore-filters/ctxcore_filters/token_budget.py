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

from bisect import bisect_left
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from operator import attrgetter, is_, itemgetter
from typing import Literal

import structlog
from pydantic import BaseModel, ConfigDict, Field

from ctxcore import BudgetExceeded, FilterContext, Message, Unit, group_units
from ctxcore.kit import PrefixMemo, is_lazy, pinned_prefix_length, structure_of

log = structlog.get_logger("ctxcore_filters.token_budget")

_ZONE = attrgetter("zone")
_MEMO = itemgetter(1)
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

    Tail-first: when nothing after the pinned prefix is protected (but for a
    run of protected messages right after it, such as the ``agent`` preset's
    recalled-memory block inside its system part) and every other message has
    the same priority (the usual conversation), units are grouped walking back
    from the newest message and counting stops at the first unit that does
    not fit, so a build reads (and tokenizes) only the messages it inspects.
    Whether that holds is remembered part by part of the chain seen last
    time, so a next-turn build checks only the new messages and the parts
    whose output changed.
    """

    accepts_lazy = True  # reads roles/zones from the structure; indexes only what it inspects

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
        self._shape: PrefixMemo[tuple[bool, frozenset[int]]] = PrefixMemo()
        self._window: PrefixMemo[_Window | None] = PrefixMemo()

    def apply(self, messages: Sequence[Message], ctx: FilterContext) -> list[Message]:
        """Return the always-kept part plus the units that fit; overflow if the always-kept part does not."""
        budget = self.max_tokens if self.max_tokens is not None else ctx.budget
        if budget is None:
            raise ValueError("no token budget: set max_tokens or the pipeline's model.context_window")
        structure = structure_of(messages)
        if self.trim_from_start:
            pinned = pinned_prefix_length(structure, self.pinned_roles)
            start = _protected_run(structure, pinned)  # kept as the pinned prefix is: the same result
            if self._uniform(structure, start):
                return self._tail_first(messages, structure, start, budget, ctx, start > pinned)
        counter = ctx.counter
        messages = list(messages)
        start = pinned_prefix_length(messages, self.pinned_roles)
        rest = messages[start:]
        units = group_units(rest)

        def cost(unit: Unit) -> int:
            return sum(counter.count_message(m) for m in unit.slice(rest))

        protected, dynamic, priorities = _classify(units, rest)
        pinned_tokens = counter.priming + sum(counter.count_message(m) for m in messages[:start])
        required = pinned_tokens + sum(cost(u) for u in protected)
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

    def _tail_first(
        self, messages: Sequence[Message], structure: Sequence[Message], start: int, budget: int, ctx: FilterContext,
        protected: bool = False,
    ) -> list[Message]:
        """Keep the first ``start`` messages and the newest units that fit, walking back from the newest.

        ``start`` is the pinned prefix and the protected run right after it
        (``protected``: that run is not empty), all always kept.

        Each unit's messages are read once (one slice) and kept for the result.
        On a next turn (``structure`` proven or checked to extend the last
        build's, same pinned cost, counter and transforms) only the units from
        the last build's final non-tool run on are walked; the older kept units
        are taken from the last window by their remembered costs (one bisect,
        one slice) — the same units a full walk keeps, see :class:`_Window`.
        """
        counter = ctx.counter
        count = counter.count_message
        layers = _layers(messages) if is_lazy(messages) else None
        last, seen = self._reusable(layers, structure, start, counter)
        if last is not None:  # the same stored prefix through the same transforms and memos: as read last time
            pinned, pinned_cost = list(last.pinned), last.pinned_cost
        else:
            pinned = list(messages[:start])
            pinned_cost = sum(map(count, pinned))
        limit = budget - counter.priming - pinned_cost
        if last is not None and last.limit != limit:
            last = None
        floor = last.run if last is not None else start
        if last is not None and seen < len(structure) and structure[seen].role != "tool":
            floor = seen  # the appended part starts a unit: every older unit is as it was (kept or not by its cost)
        units = _units_newest_first(structure, floor)
        current = next(units, None)
        read = messages[current.start:current.end] if current is not None else []
        current_cost = sum(map(count, read))
        if current_cost > limit:
            self._window.save([], None)
            required = budget - limit
            detail = self._detail(protected, required, current_cost, current is not None, budget)
            return self._overflow(pinned, start, [], set(), required + current_cost, budget, ctx, detail)
        if current is None:
            self._window.save([], None)
            return pinned
        remaining = limit - current_cost
        kept, starts, costs = [read], [current.start], [current_cost]
        broke = False
        for unit in units:
            read = messages[unit.start:unit.end]
            unit_cost = sum(map(count, read))
            if unit_cost > remaining:
                broke = True
                break
            remaining -= unit_cost
            kept.append(read)
            starts.append(unit.start)
            costs.append(unit_cost)
        if last is not None and not broke and remaining > limit - last.sums[-1] + last.sums[bisect_left(last.starts, floor)]:
            # more room before `floor` than last time (a part after the history replaced by a cheaper one): a unit
            # the last walk could not fit may fit now, so walk it all again (rare: the current turn usually grows)
            self._window.save([], None)
            return self._tail_first(messages, structure, start, budget, ctx, protected)
        old_starts: list[int] = []
        sums = [0]
        if last is not None and not broke:  # the older units: the last window's, by their costs
            m = bisect_left(last.starts, floor)
            i = bisect_left(last.sums, last.sums[m] - remaining, 0, m + 1)
            if i < m:
                pinned.extend(last.window[last.starts[i] - last.ws:floor - last.ws])
            old_starts, sums = last.starts[i:m], last.sums[i:m + 1]
        for part in reversed(kept):
            pinned.extend(part)
        for cost in reversed(costs):
            sums.append(sums[-1] + cost)
        old_starts.extend(reversed(starts))
        if layers is None:  # a caller's plain list may be mutated in place after the build: not kept
            self._window.save([], None)
            return pinned
        self._window.save(structure, _Window(
            start, limit, counter, layers, _last_run(structure, floor), old_starts[0], old_starts, sums,
            pinned[start:], pinned[:start], pinned_cost,
        ))
        return pinned

    def _reusable(
        self, layers: list[tuple[object, object]] | None, structure: Sequence[Message], start: int, counter: object,
    ) -> tuple[_Window | None, int]:
        """The last build's window when this build's history only appended to it (else ``None``: a full walk).

        ``layers`` are the input's transforms (:func:`_layers`), ``None`` for a
        plain list (see the end of :meth:`_tail_first`: only a lazy input's
        window is kept). The caller still checks the budget left after the
        pinned prefix (``limit``). Also returns how long the last build's history was.
        """
        if layers is None:
            return None, 0
        last, seen = self._window.resume(structure)
        if last is None:  # a new part after the history: the units before the last run may still be the same
            last, shared = self._window.shared(structure)
            if last is None or shared < last.run or last.run >= len(structure) or structure[last.run].role == "tool":
                return None, 0
            seen = last.run  # what is proven the same: everything before the last build's final run
        if last.start != start:
            return None, 0
        if last.counter is not counter or last.ws > last.run:
            return None, 0
        old = last.layers
        if len(layers) != len(old) or not all(map(is_, map(_MEMO, layers), map(_MEMO, old))):
            return None, 0  # other memos (compared by identity first: a dict comparison would read them)
        return (last, seen) if layers == old else (None, 0)  # equal transforms (a bound method is made per build)

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


def _units_newest_first(structure: Sequence[Message], start: int) -> Iterator[Unit]:
    """The units of ``structure[start:]`` (absolute positions), newest first, grouped lazily.

    Every non-tool message starts a unit, so the units ending at ``e`` are found
    by stepping back over tool messages to the previous non-tool one and
    grouping that short run forward: the same units :func:`group_units` finds.
    """
    e = len(structure)
    while e > start:
        b = e - 1
        while b > start and structure[b].role == "tool":
            b -= 1
        for u in reversed(group_units(structure[b:e])):
            yield Unit(b + u.start, b + u.end)
        e = b


def _last_run(structure: Sequence[Message], floor: int) -> int:
    """Where the last run of ``structure[floor:]`` starts: its last non-tool message (or ``floor``).

    Appending messages changes only the units from there on; earlier units stay as they are.
    """
    b = len(structure) - 1
    while b > floor and structure[b].role == "tool":
        b -= 1
    return b


def _layers(messages: Sequence[Message]) -> list[tuple[object, object]]:
    """The transforms (and their memos) the kept messages were read through, part by part."""
    parts = getattr(messages, "parts", None) or [messages]
    return [layer for part in parts for layer in getattr(part, "layers", ())]


@dataclass(frozen=True, slots=True)
class _Window:
    """What a tail-first walk kept, for the next turn's walk.

    Units (absolute ``starts``, oldest first) and ``sums`` (``sums[k]`` = the
    cost of the kept units before the k-th; one more entry than ``starts``).
    When the history only grew, the units before ``run`` are unchanged and a
    full walk would reach them with no more room than last time, so it keeps
    a newest-first run of them: those whose summed cost fits what remains
    (found by bisecting ``sums``), and stops where last time it stopped or
    earlier. ``window`` is the kept messages ``structure[ws:]`` as read;
    ``pinned`` the pinned prefix as read and ``pinned_cost`` its tokens (a
    next turn whose prefix is the same stored messages, read through the same
    transforms, takes both as they are instead of reading and counting it again).
    """

    start: int
    limit: int
    counter: object
    layers: list[tuple[object, object]]
    run: int
    ws: int
    starts: list[int]
    sums: list[int]
    window: list[Message]
    pinned: list[Message]
    pinned_cost: int


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
        if m.zone != "protected" or m.role == "tool" or m.tool_calls:
            break
        end += 1
    return end
