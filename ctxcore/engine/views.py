"""Immutable views of append-only lists: :class:`Snapshot` and :class:`Joined`.

Invariant: a view reads the same items forever, whatever is appended to the
lists it reads afterwards, and two views prove by identity alone how many
leading items they share (:meth:`Snapshot.shares`, :meth:`Joined.shares`).
Why: a next turn's history is the last one plus a message; taking it by pointer
(instead of copying 20,000 pointers, each a reference-count write and, after a
cache flush, a memory miss) and proving "only appended" without comparing a
message is what keeps a next turn's cost independent of the history's length.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Iterator, Sequence
from itertools import chain, islice
from operator import is_
from typing import Any, overload

from ctxcore.model.messages import Message

__all__ = ["Joined", "Snapshot", "VIEWS"]


class Snapshot(Sequence[Message]):
    """The first ``length`` items of an append-only list: what later appends cannot change.

    ``items`` is a list its owner only ever appends to: an item at a position
    below any published length is never replaced or removed, and a change
    other than an append is made on a *new* list. So a snapshot reads
    ``items[:length]`` forever, at no cost: no copy is made when it is taken,
    and the next build's snapshot of the same list proves that it extends this
    one by identity and length alone (:meth:`extends`).

    Args:
        items: the append-only list (not copied; any other iterable is copied
            into a new list).
        length: how many of its items belong to the snapshot (default: all).

    Raises:
        ValueError: ``length`` is negative or more than ``items`` holds.
    """

    __slots__ = ("items", "length")

    def __init__(self, items: Iterable[Message] = (), length: int | None = None) -> None:
        self.items: list[Message] = items if type(items) is list else list(items)
        self.length = len(self.items) if length is None else length
        if not 0 <= self.length <= len(self.items):
            raise ValueError(f"snapshot length {length} outside 0..{len(self.items)}")

    def shares(self, other: object) -> int:
        """How many leading items this snapshot provably has in common with ``other`` (nothing compared)."""
        if type(other) is not Snapshot or other.items is not self.items:
            return 0
        return min(self.length, other.length)

    def extends(self, other: object) -> bool:
        """Whether this snapshot holds every item of ``other`` at the same place (``other``'s list, no shorter)."""
        return type(other) is Snapshot and other.items is self.items and other.length <= self.length

    def tolist(self) -> list[Message]:
        """The items as a new list (one C-level copy)."""
        return self.items[:self.length]

    @overload
    def __getitem__(self, index: int) -> Message: ...

    @overload
    def __getitem__(self, index: slice) -> list[Message]: ...

    def __getitem__(self, index: int | slice) -> Message | list[Message]:
        if isinstance(index, slice):
            start, stop, step = index.indices(self.length)
            if step > 0:
                return self.items[start:stop:step]
            items = self.items  # backward: a stop of -1 ("before the first") would mean the list's last item
            return [items[i] for i in range(start, stop, step)]
        if index < 0:
            index += self.length
        if not 0 <= index < self.length:
            raise IndexError("snapshot index out of range")
        return self.items[index]

    def __len__(self) -> int:
        return self.length

    def __iter__(self) -> Iterator[Message]:
        return islice(self.items, self.length)

    def __reversed__(self) -> Iterator[Message]:
        items = self.items
        return (items[i] for i in range(self.length - 1, -1, -1))

    def __eq__(self, other: object) -> bool:
        if type(other) is Snapshot and other.items is self.items:
            return other.length == self.length
        return _equal(self, other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Snapshot({self.length} of {len(self.items)} items)"


class Joined(Sequence[Message]):
    """Several structures (lists, snapshots) read as one: a :class:`~ctxcore.engine.lazy.MessageChain`'s ``structure``.

    Nothing is copied: the parts are held as they are, with their offsets; an
    index is found by one bisect over the offsets, a slice part by part,
    iteration chains the parts. It is as immutable as a :class:`Snapshot`:
    each part is a snapshot or a list its owner does not mutate (the builder
    hands over a new list per provider output), read only up to the length it
    had when joined.

    What a snapshot proves by its list's identity, a join proves by its parts
    (:meth:`shares`): part by part, the same object at the same length, a
    snapshot sharing the other's items, or a short list of the same objects
    (one C-level pass). So two builds' chains prove, without comparing the
    history, that the history only grew, whatever happened to the parts before
    or after it.

    Args:
        parts: the structures, in order (empty ones are skipped).
    """

    __slots__ = ("parts", "length", "_parts", "_lists", "_lengths", "_offsets")

    def __init__(self, parts: Iterable[Sequence[Message]]) -> None:
        self._parts = tuple(p for p in parts if len(p))
        # what to index: a plain snapshot's own list (a position below its length reads the snapshot), else the part
        self._lists: tuple[Sequence[Message], ...] = tuple(p.items if type(p) is Snapshot else p for p in self._parts)
        self._lengths = tuple(map(len, self._parts))
        self._offsets: list[int] = []
        total = 0
        for n in self._lengths:
            self._offsets.append(total)
            total += n
        self.length = total
        #: each part's offset and structure, for walks that resume part by part (PrefixMemo.walk)
        self.parts = tuple(zip(self._offsets, self._parts, strict=True))

    def shares(self, other: object) -> int:
        """How many leading items this join provably has in common with ``other`` (by their parts, see the class)."""
        if other is self:
            return self.length
        if not isinstance(other, Joined):
            return 0
        shared = 0
        for mine, n, theirs, had in zip(self._parts, self._lengths, other._parts, other._lengths, strict=False):
            same = _part_shares(mine, n, theirs, had)
            shared += same
            if same != had or n != had:
                break
        return shared

    def extends(self, other: object) -> bool:
        """Whether this join holds every item of ``other`` (a join) at the same place."""
        return isinstance(other, Joined) and self.shares(other) == other.length

    def tolist(self) -> list[Message]:
        """The items as a new list (one C-level copy of each part)."""
        out: list[Message] = []
        for items, n in zip(self._lists, self._lengths, strict=True):
            out.extend(items if len(items) == n else islice(items, n))
        return out

    @overload
    def __getitem__(self, index: int) -> Message: ...

    @overload
    def __getitem__(self, index: slice) -> list[Message]: ...

    def __getitem__(self, index: int | slice) -> Message | list[Message]:
        if isinstance(index, slice):
            return self._slice(*index.indices(self.length))
        if index < 0:
            index += self.length
        if not 0 <= index < self.length:
            raise IndexError("chain index out of range")
        k = bisect_right(self._offsets, index) - 1
        return self._lists[k][index - self._offsets[k]]

    def _slice(self, start: int, stop: int, step: int) -> list[Message]:
        """``self[start:stop:step]`` part by part (within one part: that part's own slice, no second copy)."""
        if step != 1:
            return [self[i] for i in range(start, stop, step)]
        if start >= stop:
            return []
        offsets, lists = self._offsets, self._lists
        k = bisect_right(offsets, start) - 1
        offset = offsets[k]
        if stop - offset <= self._lengths[k]:
            got = lists[k][start - offset:stop - offset]
            return got if type(got) is list else list(got)
        out: list[Message] = []
        while start < stop:
            offset = offsets[k]
            end = min(stop, offset + self._lengths[k])
            out.extend(lists[k][start - offset:end - offset])
            start, k = end, k + 1
        return out

    def __len__(self) -> int:
        return self.length

    def __iter__(self) -> Iterator[Message]:
        return chain.from_iterable(map(islice, self._lists, self._lengths))

    def __reversed__(self) -> Iterator[Message]:
        for items, n in zip(reversed(self._lists), reversed(self._lengths), strict=True):
            yield from (items[i] for i in range(n - 1, -1, -1))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Joined) and self.length == other.length and self.extends(other):
            return True
        return _equal(self, other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Joined({self.length} items in {len(self._parts)} parts)"


#: the view types (``isinstance(x, VIEWS)``): each proves what it shares with an earlier view of its kind
VIEWS = (Snapshot, Joined)


def _part_shares(mine: Sequence[Message], n: int, theirs: Sequence[Message], had: int) -> int:
    """How many leading items of part ``mine`` (length ``n``) are provably those of ``theirs`` (length ``had``)."""
    if mine is theirs and n == had:
        return had
    if isinstance(mine, VIEWS):
        return min(mine.shares(theirs), had)
    if n == had and all(map(is_, mine, theirs)):
        return had  # a list of the same objects (a short part rebuilt as a new list: the system prompt)
    return 0


def _equal(view: Snapshot | Joined, other: object) -> Any:
    """Item-wise equality of a view with a list or another view (``NotImplemented`` for anything else)."""
    if isinstance(other, VIEWS):
        return view.length == other.length and view.tolist() == other.tolist()
    if isinstance(other, list):
        return view.length == len(other) and view.tolist() == other
    return NotImplemented
