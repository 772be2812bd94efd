"""PrefixMemo: a left-to-right walk over a history, resumed after what it saw last build.

Invariant: :meth:`PrefixMemo.walk` returns exactly the state a walk of the
whole sequence from ``initial`` would return, provided ``step`` is a left fold
(walking two slices one after the other gives what walking them joined does).
Why: a next turn appends a message to a long history; a walk that re-read the
history each build (legality, ``token_budget``'s shape check) would cost time
linear in its length for an answer that only the new messages can change.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from operator import is_
from typing import Any, Generic, TypeVar

from ctxcore.engine.views import VIEWS, Joined

__all__ = ["PrefixMemo"]

S = TypeVar("S")
#: per part of the last chain walked: (structure, where the walk began in it, its length, state in, state out)
_Record = tuple[Sequence[Any], int, int, Any, Any]


class PrefixMemo(Generic[S]):
    """The state of a left-to-right walk, resumable on an append-only list.

    ``resume(items)`` returns ``(state, start)``: the remembered state and the
    index to continue from when ``items`` begins with the items seen last time,
    else ``(None, 0)``. ``save(items, state)`` remembers a finished walk. Two
    views of the same append-only list prove it by identity and length
    (:meth:`~ctxcore.engine.views.Snapshot.extends`: nothing compared); anything
    else costs one C-level list comparison (identical elements compare by pointer).

    :meth:`walk` does all of it, part by part on a chain's
    :class:`~ctxcore.engine.views.Joined`: a part entered in the state it was
    entered in last time, which is the same part or provably extends it,
    resumes at the part's old end. So a part *before* the history whose output
    changed (a recalled memory, a clock in the system prompt) costs a walk of
    that part only. Memory: one record per part.
    """

    __slots__ = ("_items", "_state", "_parts", "_start")

    def __init__(self) -> None:
        self._items: Sequence[Any] = []
        self._state: S | None = None
        self._parts: tuple[_Record, ...] = ()
        self._start = 0  # where walk() began in the items last time

    def resume(self, items: Sequence[Any]) -> tuple[S | None, int]:
        """The saved state and where to continue, or ``(None, 0)`` when the prefix changed."""
        seen = self._items
        n = len(seen)
        if self._state is None or n == 0:
            return None, 0
        if isinstance(items, VIEWS) and items.extends(seen):
            return self._state, n  # the same append-only list, no shorter: nothing to compare
        if len(items) < n or items[n - 1] is not seen[n - 1] or items[0] is not seen[0]:
            return None, 0
        prefix = items[:n]
        if (prefix if isinstance(prefix, list) else list(prefix)) != (seen if isinstance(seen, list) else list(seen)):
            return None, 0
        return self._state, n

    def shared(self, items: Sequence[Any]) -> tuple[S | None, int]:
        """The saved state and how many leading items ``items`` provably shares with what it was saved for.

        For a walk whose state says itself how far it is valid (``token_budget``'s
        window: the units before its last run); only a view's proof counts
        (:meth:`~ctxcore.engine.views.Joined.shares`), nothing is compared.
        """
        if self._state is None or not isinstance(items, VIEWS):
            return None, 0
        return self._state, items.shares(self._items)

    def save(self, items: Sequence[Any], state: S) -> None:
        """Remember ``state`` as the result of walking all of ``items``.

        A list or a view is kept by reference (no copy): the caller hands over
        a list it will not mutate (a fresh slice), or a view, which later
        appends to its list do not change.
        """
        self._items = items if isinstance(items, (list, *VIEWS)) else list(items)
        self._state = state
        self._parts = ()

    def walk(self, items: Sequence[Any], initial: S, step: Callable[[S, Sequence[Any]], S], start: int = 0) -> S:
        """The state after walking ``items[start:]`` from ``initial`` with ``step``, re-walking only what is new.

        On a chain's :class:`~ctxcore.engine.views.Joined` the walk goes part by
        part and each part resumes where it can (see the class docstring);
        otherwise it resumes after the prefix seen last time (:meth:`resume`)
        when it began at the same ``start``.
        """
        if isinstance(items, Joined):
            return self._walk_parts(items, initial, step, start)
        state, k = self.resume(items) if start == self._start else (None, 0)
        if state is None or k < start:
            state, k = initial, start
        state = step(state, items[k:] if k else items)
        self.save(items, state)
        self._start = start
        return state

    def _walk_parts(self, items: Joined, initial: S, step: Callable[[S, Sequence[Any]], S], start: int) -> S:
        """:meth:`walk` on a chain: part by part, each resumed from the last walk's record when it can be."""
        old = self._parts
        state = initial
        records = []
        for offset, part in items.parts:
            n = len(part)
            if offset + n <= start:
                continue
            begin = max(0, start - offset)
            entered = state
            last = _resumable(old, part, begin, state)
            if last is not None:
                had, out = last[2], last[4]
                state = step(out, part[had:]) if n > had else out
            else:
                state = step(state, part[begin:] if begin else part)
            records.append((part, begin, n, entered, state))
        self.save(items, state)
        self._parts, self._start = tuple(records), start
        return state


def _resumable(records: tuple[_Record, ...], part: Sequence[Any], begin: int, entered: Any) -> _Record | None:
    """The record of the last walk that ``part`` (walked from ``begin``, entered in state ``entered``) resumes.

    The part must be entered in the same state, from the same place, and hold
    the record's items unchanged at the same positions: a view extending the
    recorded one, or the same list at the same length (a part's structure is a
    list its owner does not mutate), or a list of the same objects (one C-level
    pass, cheaper than the walk it saves). A chain has a handful of parts, so
    every record is tried.
    """
    for record in records:
        seen, was, had, state, _ = record
        if was == begin and state == entered and _holds(part, seen, had):
            return record
    return None


def _holds(part: Sequence[Any], seen: Sequence[Any], had: int) -> bool:
    """Whether ``part`` holds the ``had`` items of ``seen`` (a part walked before) unchanged, at the same places."""
    if isinstance(part, VIEWS):
        return part.extends(seen)
    if part is seen:
        return len(part) == had
    return len(part) == had == len(seen) and all(map(is_, part, seen))
