"""The way back, per conversation: a built window as pydantic-ai messages, reusing the last call's for what did not move.

With adjacent requests merged (the adapter's form), the pydantic-ai messages of a
window are *units*: each assistant message is one ``ModelResponse``, each maximal
run of other messages one ``ModelRequest``, and a unit's value depends only on its
own messages. A next turn's window is almost always the last one with old
messages dropped at the front, a few made or kept before them (the system
prompt) and new ones at the end, so :class:`WindowCache` finds the block of the
new window that is the tail of the last window (by ``id()``: C-level compares of
int lists; the cache keeps the last window's messages alive, so an id names one
object, and ctxcore messages are frozen, so the same object reads the same),
reuses the units lying wholly inside it, and converts only what is around it with
:func:`~ctxcore_pydantic_ai.convert.to_pydantic_ai`. A unit at the block's edge
that could merge with a neighbour outside it (a request) is converted again, so
the result equals ``to_pydantic_ai(window, merge=True)`` exactly; a window that
is not such a block (a filter changed a message in the middle) is converted
whole. Memory: the last window and its units, and the fresh parts of messages in
it (cut to the window when they outgrow it).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence

from pydantic_ai.messages import ModelMessage, ModelRequest

from ctxcore import Message
from ctxcore_pydantic_ai.convert import FreshParts, to_pydantic_ai

__all__ = ["WindowCache"]


class WindowCache:
    """Turns built windows into pydantic-ai messages (adjacent requests merged), reusing the last call's units.

    ``reused`` counts the pydantic-ai messages the last call took from the one before.
    """

    def __init__(self) -> None:
        self.fresh: FreshParts = {}  # parts made for messages ctxcore added (see to_pydantic_ai)
        self.reused = 0
        self._window: Sequence[Message] = ()  # keeps the messages alive while their ids are in _ids
        self._ids: list[int] = []
        self._out: list[ModelMessage] = []
        self._starts: list[int] = []  # index in _window where each of _out's units starts

    def convert(self, window: Sequence[Message]) -> list[ModelMessage]:
        """``to_pydantic_ai(window, merge=True)``, with this cache's fresh parts; a new list."""
        ids = list(map(id, window))
        head_end = tail_start = len(window)  # without a reusable block: all of it is the head
        middle: list[ModelMessage] = []
        middle_starts: list[int] = []
        previous, count = self._ids, len(self._ids)
        j = _index(ids, previous[-1]) if count else -1
        if j >= 0:
            size = _common(ids, j, previous)  # window[j - size + 1 : j + 1] is previous[count - size:]
            first, w0 = count - size, j - size + 1
            starts, units = self._starts, self._out
            i0, i1 = bisect_left(starts, first), len(units)
            if i0 < i1 and starts[i0] == first and w0 > 0 and isinstance(units[i0], ModelRequest):
                i0 += 1  # it could merge with a request just before the block
            if i1 > i0 and j + 1 < len(window) and isinstance(units[i1 - 1], ModelRequest):
                i1 -= 1  # it could merge with a request just after the block
            if i1 > i0:
                delta = w0 - first
                head_end = starts[i0] + delta
                tail_start = (starts[i1] if i1 < len(starts) else count) + delta
                middle = units[i0:i1]
                middle_starts = list(map(delta.__add__, starts[i0:i1])) if delta else starts[i0:i1]
        head, head_starts = self._part(window, 0, head_end)
        tail, tail_starts = self._part(window, tail_start, len(window))
        out = head + middle + tail
        self.reused = len(middle)
        self._window, self._ids, self._out = window, ids, out
        self._starts = head_starts + middle_starts + tail_starts
        if len(self._starts) != len(out):  # not the unit structure assumed: never reuse this call's
            self._window, self._ids, self._out, self._starts = (), [], [], []
        if len(self.fresh) > 2 * len(window) + 16:
            current = {m.id for m in window}
            self.fresh = {k: v for k, v in self.fresh.items() if k in current}
        return list(out)

    def _part(self, window: Sequence[Message], start: int, end: int) -> tuple[list[ModelMessage], list[int]]:
        """The units of ``window[start:end]`` and where each starts (an index into ``window``)."""
        if start >= end:
            return [], []
        segment = window[start:end]
        fresh = dict(self.fresh)
        out = to_pydantic_ai(segment, fresh=fresh, merge=True)
        self.fresh.update(fresh)
        starts: list[int] = []
        after_assistant = True
        for index, message in enumerate(segment, start):
            assistant = message.role == "assistant"
            if assistant or after_assistant:
                starts.append(index)
            after_assistant = assistant
        return out, starts


def _index(ids: list[int], value: int) -> int:
    try:
        return ids.index(value)
    except ValueError:
        return -1


def _common(ids: list[int], j: int, previous: list[int]) -> int:
    """The largest ``size`` with ``ids[j - size + 1 : j + 1] == previous[-size:]`` (at least 1: ``ids[j]`` matches)."""
    count = len(previous)
    size = min(j + 1, count)
    if ids[j - size + 1:j + 1] == previous[count - size:]:
        return size
    low, high = 1, size - 1  # the match is monotone in size: binary search its largest
    while low < high:
        mid = (low + high + 1) // 2
        if ids[j - mid + 1:j + 1] == previous[count - mid:]:
            low = mid
        else:
            high = mid - 1
    return low
