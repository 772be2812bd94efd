"""The tail-first walk of ``token_budget``: the newest units that fit, reading only what it keeps.

Invariant: :meth:`TailFirst.run` keeps exactly the units the reference walk
(``TokenBudget.reference()``: every message counted, every unit visited newest
first) keeps, when nothing after the always-kept prefix is protected and every
message has one priority. Why: a conversation of 20,000 messages under a
4,000-token budget keeps a few dozen; walking back from the newest and stopping
at the first unit that does not fit reads (and tokenizes) only those, and a
next turn, whose history only grew, re-walks only the units from the last
build's final run on (the older kept units come from the last window by their
remembered costs: one bisect, one slice).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from operator import is_, itemgetter

from ctxcore import Message, Unit, group_units
from ctxcore.kit import PrefixMemo, is_lazy

__all__ = ["Overflow", "TailFirst"]

_MEMO = itemgetter(1)


@dataclass(frozen=True, slots=True, kw_only=True)
class _Window:
    """What a tail-first walk kept, for the next turn's walk.

    Units (absolute ``starts``, oldest first) and ``sums`` (``sums[k]`` = the
    cost of the kept units before the k-th; one more entry than ``starts``).
    When the history only grew, the units before ``run`` are unchanged and a
    full walk would reach them with no more room than last time, so it keeps
    a newest-first run of them: those whose summed cost fits what remains
    (found by bisecting ``sums``). ``window`` is the kept messages
    ``structure[ws:]`` as read; ``pinned`` the always-kept prefix as read and
    ``pinned_cost`` its tokens (a next turn whose prefix is the same stored
    messages through the same transforms takes both as they are).
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

    def room_before(self, floor: int, limit: int) -> int:
        """The room a full walk had left when it reached the units before ``floor`` last time."""
        return limit - self.sums[-1] + self.sums[bisect_left(self.starts, floor)]


@dataclass(frozen=True, slots=True, kw_only=True)
class _Plan:
    """Where this build's walk starts: the reusable last window (or ``None``), the floor, the prefix and the room."""

    last: _Window | None
    floor: int
    pinned: list[Message]
    pinned_cost: int
    limit: int


@dataclass(slots=True, kw_only=True)
class _Walk:
    """The units a newest-first walk kept (newest first), their costs, the room left and whether it stopped early.

    ``over``: the newest unit (``has_current``, ``current_cost``) does not fit, nothing is kept.
    """

    has_current: bool = False
    current_cost: int = 0
    over: bool = False
    parts: list[Sequence[Message]] = field(default_factory=list)
    starts: list[int] = field(default_factory=list)
    costs: list[int] = field(default_factory=list)
    remaining: int = 0
    broke: bool = False


@dataclass(frozen=True, slots=True)
class Overflow:
    """The always-kept prefix plus the newest unit do not fit: what ``token_budget`` reports."""

    pinned: list[Message]
    required: int
    current_cost: int
    has_current: bool


class TailFirst:
    """The tail-first walk and the window it remembers for the next turn (one per ``TokenBudget``)."""

    __slots__ = ("_window",)

    def __init__(self) -> None:
        self._window: PrefixMemo[_Window | None] = PrefixMemo()

    def run(
        self, messages: Sequence[Message], structure: Sequence[Message], start: int, budget: int, counter: object,
    ) -> list[Message] | Overflow:
        """The first ``start`` messages and the newest units that fit, or an :class:`Overflow`."""
        count: Callable[[Message], int] = counter.count_message  # type: ignore[attr-defined]
        layers = _layers(messages) if is_lazy(messages) else None
        plan = self._plan(messages, layers, structure, start, budget, counter)
        last, floor = plan.last, plan.floor
        walk = _walk(messages, structure, floor, plan.limit, count)
        if walk.over or not walk.has_current:
            self._window.save([], None)
            if walk.over:
                return Overflow(plan.pinned, budget - plan.limit, walk.current_cost, walk.has_current)
            return plan.pinned
        if last is not None and not walk.broke and walk.remaining > last.room_before(floor, plan.limit):
            # more room before `floor` than last time (a part after the history replaced by a cheaper one): a unit
            # the last walk could not fit may fit now, so walk it all (rare: the current turn usually grows)
            last, floor = None, start
            walk = _walk(messages, structure, start, plan.limit, count)
        out, starts, sums = _assemble(plan.pinned, walk, last, floor)
        if layers is None:  # a caller's plain list may be mutated in place after the build: not kept
            self._window.save([], None)
        else:
            self._window.save(structure, _Window(
                start=start, limit=plan.limit, counter=counter, layers=layers, run=_last_run(structure, floor),
                ws=starts[0], starts=starts, sums=sums, window=out[start:], pinned=out[:start],
                pinned_cost=plan.pinned_cost,
            ))
        return out

    def _plan(
        self, messages: Sequence[Message], layers: list[tuple[object, object]] | None, structure: Sequence[Message],
        start: int, budget: int, counter: object,
    ) -> _Plan:
        """The reuse decision: the last window and where the walk starts, or a full walk from ``start``."""
        last, seen = self._reusable(layers, structure, start, counter)
        if last is not None:  # the same stored prefix through the same transforms and memos: as read last time
            pinned, pinned_cost = list(last.pinned), last.pinned_cost
        else:
            pinned = list(messages[:start])
            pinned_cost = sum(map(counter.count_message, pinned))  # type: ignore[attr-defined]
        limit = budget - counter.priming - pinned_cost  # type: ignore[attr-defined]
        if last is None or last.limit != limit:
            return _Plan(last=None, floor=start, pinned=pinned, pinned_cost=pinned_cost, limit=limit)
        floor = last.run
        if seen < len(structure) and structure[seen].role != "tool":
            floor = seen  # the appended part starts a unit: every older unit is as it was (kept or not by its cost)
        return _Plan(last=last, floor=floor, pinned=pinned, pinned_cost=pinned_cost, limit=limit)

    def _reusable(
        self, layers: list[tuple[object, object]] | None, structure: Sequence[Message], start: int, counter: object,
    ) -> tuple[_Window | None, int]:
        """The last build's window when this build's history only appended to it (else ``None``), and how far it held.

        ``layers`` are the input's transforms (:func:`_layers`), ``None`` for a
        plain list (only a lazy input's window is kept).
        """
        if layers is None:
            return None, 0
        last, seen = self._window.resume(structure)
        if last is None:  # a new part after the history: the units before the last run may still be the same
            last, shared = self._window.shared(structure)
            if last is None or shared < last.run or last.run >= len(structure) or structure[last.run].role == "tool":
                return None, 0
            seen = last.run  # what is proven the same: everything before the last build's final run
        if last.start != start or last.counter is not counter or last.ws > last.run:
            return None, 0
        old = last.layers
        if len(layers) != len(old) or not all(map(is_, map(_MEMO, layers), map(_MEMO, old))):
            return None, 0  # other memos (compared by identity first: a dict comparison would read them)
        return (last, seen) if layers == old else (None, 0)  # equal transforms (a bound method is made per build)


def _walk(
    messages: Sequence[Message], structure: Sequence[Message], floor: int, limit: int, count: Callable[[Message], int],
) -> _Walk:
    """The newest-first walk of the units from ``floor``, in ``limit`` tokens.

    Each unit's messages are read once (one slice) and kept for the result;
    the walk stops at the first unit that does not fit.
    """
    units = _units_newest_first(structure, floor)
    current = next(units, None)
    if current is None:
        return _Walk(remaining=limit, over=limit < 0)
    read = messages[current.start:current.end]
    current_cost = sum(map(count, read))
    if current_cost > limit:
        return _Walk(has_current=True, current_cost=current_cost, over=True)
    walk = _Walk(has_current=True, current_cost=current_cost, parts=[read], starts=[current.start],
                 costs=[current_cost], remaining=limit - current_cost)
    for unit in units:
        read = messages[unit.start:unit.end]
        unit_cost = sum(map(count, read))
        if unit_cost > walk.remaining:
            walk.broke = True
            break
        walk.remaining -= unit_cost
        walk.parts.append(read)
        walk.starts.append(unit.start)
        walk.costs.append(unit_cost)
    return walk


def _assemble(
    pinned: list[Message], walk: _Walk, last: _Window | None, floor: int,
) -> tuple[list[Message], list[int], list[int]]:
    """The kept messages in order (``pinned`` extended), their units' starts and the cumulative costs.

    With a reusable ``last`` window and a walk that reached ``floor``, the older
    units are the last window's newest run that fits the room left.
    """
    starts: list[int] = []
    sums = [0]
    if last is not None and not walk.broke:
        m = bisect_left(last.starts, floor)
        i = bisect_left(last.sums, last.sums[m] - walk.remaining, 0, m + 1)
        if i < m:
            pinned.extend(last.window[last.starts[i] - last.ws:floor - last.ws])
        starts, sums = last.starts[i:m], last.sums[i:m + 1]
    for part in reversed(walk.parts):
        pinned.extend(part)
    for cost in reversed(walk.costs):
        sums.append(sums[-1] + cost)
    starts.extend(reversed(walk.starts))
    return pinned, starts, sums


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
