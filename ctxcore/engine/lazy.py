"""Lazy message sequences: a build pays only for the messages it looks at.

A long conversation is handed through the build as a :class:`LazyMessages`: a
``structure`` (the stored messages, held by pointer: a list, or a
:class:`Snapshot` of an append-only list) plus a stack of
*structure-preserving* transforms (the history provider's annotation and marker
neutralising, the builder's ``source`` stamp). A transform may change content,
metadata and provenance but never ``id``, ``role``, ``zone``, ``priority``,
``trust``, ``tool_calls`` or ``tool_call_id``, so code that only needs those
(grouping units, legality, budget classification) reads ``structure`` and
derives nothing; a message is transformed the first time somebody indexes it,
and the result is memoised per transform (keyed by the stored object, whose
identity is stable across builds), so the next build reuses it.

What a structure item provides. An item of ``structure`` is a
:class:`Message` or a provider's own light stand-in for one (the ``history``
provider keeps a plain chat dict that way until it is read, see
``ctxcore_providers.history``). Code reading ``structure`` may rely on
``id``, ``role``, ``zone``, ``priority``, ``trust``, ``tool_call_id``,
``tool_calls`` (only its truth: whether the message requests calls),
``tool_call_ids`` and ``metadata``, and on nothing else (not ``content``,
``text`` or the calls' names: index the lazy sequence for the message).
Identity is stable across builds, as for a message. The first layer of a
provider that stores stand-ins turns each into its :class:`Message`, so
indexing, slicing and iterating a lazy sequence only ever give messages.

:class:`MessageChain` concatenates several sequences (one per provider); its
``structure`` is a :class:`Joined`: the parts' own structures read as one
sequence, with no list of their pointers made. :class:`PrefixMemo` remembers
the sequence a walk last saw and the walk's state, so the next walk over an
append-only list resumes after the unchanged prefix (proven by a snapshot's
identity and length, or a chain's parts, else checked by one C-level pointer
comparison, never a per-message Python loop). It also keeps the walk's state
at the chain's *mark* (where its last part begins): a provider after the
history (the ``agent`` preset's ``runtime_context``) makes a new last part
every build, but the chain proves by its parts that it shares the last
chain's items up to the old mark (:meth:`Joined.shares`), and the walk
resumes there.

Why snapshots: a next turn's history is the last one plus a message. Copying
the 20,000 pointers of a long history (the provider's snapshot of its
messages, the chain's concatenation) is C-level, but it touches every stored
message's reference count, and after a cache flush (a model call, a garbage
collection) each is a memory miss: such copies were most of what a next
turn at 20,000 messages cost beyond one at 2,000. A snapshot is taken by
pointer instead, and a chain joins its parts without copying them, so
whatever happens to the list later (only appends) leaves every earlier
build's view, output and report as they were.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Container, Iterable, Iterator, Sequence
from itertools import chain, islice
from operator import is_
from typing import (
    Any,
    Generic,
    TypeVar,
    overload,
)

from ctxcore.model.messages import Message
from ctxcore.model.structure import structure_of

__all__ = ["Joined", "LazyMessages", "MessageChain", "PrefixMemo", "Snapshot", "structure_of", "is_lazy"]

Transform = Callable[[Message], Message]
Memo = dict[int, tuple[Message, Message]]
S = TypeVar("S")


class Snapshot(Sequence[Message]):
    """The first ``length`` items of an append-only list: what later appends cannot change.

    ``items`` is a list its owner only ever appends to: an item at a position
    below any published length is never replaced or removed, and a change
    other than an append is made on a *new* list. So a snapshot reads
    ``items[:length]`` forever, at no cost: no copy is made when it is taken,
    and the next build's snapshot of the same list proves that it extends this
    one by identity and length alone (:meth:`extends`), without comparing a
    single message. The history provider and :class:`MessageChain` make them.

    A chain's structure is the subclass :class:`Joined`, which also sets
    ``mark`` (where its last part begins) and ``parts`` (each part's offset and
    structure), so a :class:`PrefixMemo` can resume there and part by part; for
    a plain snapshot ``mark`` is 0 and ``parts`` is ``None``.

    Args:
        items: the append-only list (not copied; any other iterable is copied
            into a new list).
        length: how many of its items belong to the snapshot (default: all).

    Raises:
        ValueError: ``length`` is negative or more than ``items`` holds.
    """

    __slots__ = ("items", "length", "mark", "parts")

    def __init__(self, items: Iterable[Message] = (), length: int | None = None) -> None:
        self.items: list[Message] = items if type(items) is list else list(items)
        self.length = len(self.items) if length is None else length
        if not 0 <= self.length <= len(self.items):
            raise ValueError(f"snapshot length {length} outside 0..{len(self.items)}")
        self.mark = 0  # where the last part of a chain begins (0: no mark)
        self.parts: tuple[tuple[int, Sequence[Message]], ...] | None = None  # a chain's (offset, part structure)s

    def shares(self, other: object) -> int:
        """How many leading items this snapshot provably has in common with ``other`` (nothing compared)."""
        if type(other) is not Snapshot:  # a chain's Joined is proven by its parts, never by a list's identity
            return 0
        return min(self.length, other.length) if other.items is self.items else 0

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
        if isinstance(other, Snapshot):
            if type(other) is Snapshot and other.items is self.items:
                return other.length == self.length
            return self.length == other.length and self.tolist() == other.tolist()
        if isinstance(other, list):
            return self.length == len(other) and self.tolist() == other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Snapshot({self.length} of {len(self.items)} items)"


class Joined(Snapshot):
    """Several structures (lists, snapshots) read as one: a :class:`MessageChain`'s ``structure``.

    Nothing is copied: the parts are held as they are, with their offsets,
    and an index is found by one bisect over the offsets, a slice part by part,
    iteration chains the parts. So a chain whose first or last part changed
    (the ``agent`` preset's recalled memory before the history, its
    ``runtime_context`` after it) costs a handful of pointers, not a copy of the
    history's 20,000. It is as immutable as a :class:`Snapshot`: each part is
    a snapshot (later appends to its list change nothing it reads) or a list
    its owner does not mutate (the builder hands over a new list per provider
    output), read only up to the length it had when joined.

    What a snapshot proves by its list's identity, a join proves by its parts
    (:meth:`shares`): part by part, the same object (at the length it had
    then), a :class:`Snapshot` that shares the other's items, or a short list of
    the same objects (one C-level pass). So two builds' chains prove, without
    comparing the history, that the history only grew, whatever happened to
    the parts before or after it. ``items`` (the pointers as one list) is made
    only when somebody asks for it, once.

    Args:
        parts: the structures, in order (empty ones are skipped).
    """

    __slots__ = ("_parts", "_lists", "_lengths", "_offsets", "_joined")

    def __init__(self, parts: Iterable[Sequence[Message]]) -> None:
        self._parts = tuple(p for p in parts if len(p))
        # what to index: a plain snapshot's own list (a position below its length reads the snapshot), else the part
        self._lists: tuple[Sequence[Message], ...] = tuple(
            p.items if type(p) is Snapshot else p for p in self._parts
        )
        self._lengths = tuple(map(len, self._parts))
        self._offsets: list[int] = []
        total = 0
        for n in self._lengths:
            self._offsets.append(total)
            total += n
        self.length = total
        self.mark = self._offsets[-1] if len(self._parts) > 1 else 0
        self.parts = tuple(zip(self._offsets, self._parts, strict=True))
        self._joined: list[Message] | None = None

    @property
    def items(self) -> list[Message]:
        """The pointers as one list (made on first use: nothing in the engine asks for it)."""
        if self._joined is None:
            self._joined = self.tolist()
        return self._joined

    @items.setter
    def items(self, value: list[Message]) -> None:
        raise AttributeError("a Joined reads its parts: join new parts instead")

    def shares(self, other: object) -> int:
        """How many leading items this join provably has in common with ``other`` (by their parts, see the class)."""
        if other is self:
            return self.length
        if not isinstance(other, Joined):
            return 0
        shared = 0
        for mine, n, theirs, had in zip(self._parts, self._lengths, other._parts, other._lengths, strict=False):
            if mine is theirs and n == had:
                same = had
            elif isinstance(mine, Snapshot):
                same = min(mine.shares(theirs), had)
            elif n == had and all(map(is_, mine, theirs)):
                same = had  # a list of the same objects (a short part rebuilt as a new list: the system prompt)
            else:
                same = 0
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
            start, stop, step = index.indices(self.length)
            if step != 1:
                return [self[i] for i in range(start, stop, step)]
            if start >= stop:
                return []
            offsets, lists = self._offsets, self._lists
            k = bisect_right(offsets, start) - 1
            offset = offsets[k]
            if stop - offset <= self._lengths[k]:  # within one part: that part's slice (a list: no second copy)
                got = lists[k][start - offset:stop - offset]
                return got if type(got) is list else list(got)
            out: list[Message] = []
            while start < stop:
                offset = offsets[k]
                end = min(stop, offset + self._lengths[k])
                out.extend(lists[k][start - offset:end - offset])
                start, k = end, k + 1
            return out
        if index < 0:
            index += self.length
        if not 0 <= index < self.length:
            raise IndexError("chain index out of range")
        k = bisect_right(self._offsets, index) - 1
        return self._lists[k][index - self._offsets[k]]

    def __iter__(self) -> Iterator[Message]:
        return chain.from_iterable(map(islice, self._lists, self._lengths))

    def __reversed__(self) -> Iterator[Message]:
        for items, n in zip(reversed(self._lists), reversed(self._lengths), strict=True):
            yield from (items[i] for i in range(n - 1, -1, -1))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Snapshot):
            return self.length == other.length and (self.extends(other) or self.tolist() == other.tolist())
        if isinstance(other, list):
            return self.length == len(other) and self.tolist() == other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Joined({self.length} items in {len(self._parts)} parts)"


class LazyMessages(Sequence[Message]):
    """``structure`` seen through memoised, structure-preserving transforms.

    Args:
        structure: the stored messages (not copied: the caller gives a list it
            will not mutate, or a :class:`Snapshot`).
        layers: ``(transform, memo)`` pairs applied in order; each memo maps
            ``id(stored message)`` to ``(stored message, transformed)`` and may be
            shared across builds by whoever owns it.
        id_sets: containers (sets, or a provider's own view of its ids) that
            together hold exactly the ids in ``structure`` (answering
            :meth:`has_id` without a walk); computed on first use when absent.
    """

    __slots__ = ("structure", "layers", "_id_sets")

    def __init__(
        self,
        structure: list[Message] | Snapshot,
        layers: Sequence[tuple[Transform, Memo]] = (),
        id_sets: Sequence[Container[str]] | None = None,
    ) -> None:
        self.structure = structure
        self.layers = tuple(layers)
        self._id_sets = tuple(id_sets) if id_sets is not None else None

    def map(self, transform: Transform, memo: Memo) -> LazyMessages:
        """The same messages with one more transform on top (memoised in ``memo``)."""
        return LazyMessages(self.structure, (*self.layers, (transform, memo)), self._id_sets)

    def _get(self, stored: Message) -> Message:
        m = stored
        key = id(stored)
        for transform, memo in self.layers:
            hit = memo.get(key)
            if hit is not None and hit[0] is stored:
                m = hit[1]
            else:
                m = transform(m)
                memo[key] = (stored, m)
        return m

    @overload
    def __getitem__(self, index: int) -> Message: ...

    @overload
    def __getitem__(self, index: slice) -> list[Message]: ...

    def __getitem__(self, index: int | slice) -> Message | list[Message]:
        if isinstance(index, slice):
            return [self._get(m) for m in self.structure[index]]
        return self._get(self.structure[index])

    def __len__(self) -> int:
        return len(self.structure)

    def __iter__(self) -> Iterator[Message]:
        return map(self._get, self.structure)

    def has_id(self, message_id: str) -> bool:
        """Whether a message with this id is in the sequence (no transform runs)."""
        if self._id_sets is None:
            self._id_sets = ({m.id for m in self.structure},)
        return any(message_id in s for s in self._id_sets)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (list, tuple, LazyMessages, MessageChain)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"LazyMessages({len(self)} messages, {len(self.layers)} transforms)"


class MessageChain(Sequence[Message]):
    """Several message sequences read as one, without copying their messages or their pointers.

    ``structure`` is a :class:`Joined` of the parts' structures: nothing is
    copied, whichever parts changed since the last build, and a next turn's
    chain proves by its parts what it shares with the last one
    (:meth:`Joined.shares`). Indexing finds the part and asks it. The parts
    are held, not copied: a part's list must not change afterwards (as for
    :class:`LazyMessages`).

    Args:
        parts: the sequences, in order (empty ones are skipped).
        previous: accepted for compatibility and unused: the proof that a
            chain extends an earlier one is made from both chains' parts.
    """

    __slots__ = ("parts", "structure", "_offsets")

    def __init__(self, parts: Iterable[Sequence[Message]], previous: MessageChain | None = None) -> None:
        self.parts = [p for p in parts if len(p)]
        self.structure = Joined([structure_of(p) for p in self.parts])
        self._offsets = self.structure._offsets

    @overload
    def __getitem__(self, index: int) -> Message: ...

    @overload
    def __getitem__(self, index: slice) -> list[Message]: ...

    def __getitem__(self, index: int | slice) -> Message | list[Message]:
        if isinstance(index, slice):
            start, stop, step = index.indices(self.structure.length)
            if step != 1:
                return [self[i] for i in range(start, stop, step)]
            out: list[Message] = []
            k = bisect_right(self._offsets, start) - 1 if start < stop else len(self.parts)
            while start < stop and k < len(self.parts):  # part by part: one slice of each part touched
                offset = self._offsets[k]
                part = self.parts[k]
                end = min(stop, offset + len(part))
                out.extend(part[start - offset:end - offset])
                start, k = end, k + 1
            return out
        n = self.structure.length
        if index < 0:
            index += n
        if not 0 <= index < n:
            raise IndexError("message index out of range")
        k = bisect_right(self._offsets, index) - 1
        return self.parts[k][index - self._offsets[k]]

    def __len__(self) -> int:
        return self.structure.length

    def __iter__(self) -> Iterator[Message]:
        for p in self.parts:
            yield from p

    def has_id(self, message_id: str) -> bool:
        """Whether a message with this id is in any part (no transform runs)."""
        for p in self.parts:
            if isinstance(p, LazyMessages):
                if p.has_id(message_id):
                    return True
            elif any(m.id == message_id for m in p):
                return True
        return False

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (list, tuple, LazyMessages, MessageChain)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"MessageChain({len(self)} messages in {len(self.parts)} parts)"


def is_lazy(messages: Sequence[Message]) -> bool:
    """Whether ``messages`` is a lazy sequence (materialise it for code that needs a list).

    The exact types are tried first: both classes are ``Sequence`` subclasses,
    whose ``isinstance`` check for any other object runs Python code (ABCMeta).
    """
    kind = type(messages)
    if kind is MessageChain or kind is LazyMessages:
        return True
    return kind is not list and kind is not Snapshot and kind is not Joined and isinstance(messages, (LazyMessages, MessageChain))


class PrefixMemo(Generic[S]):
    """The state of a left-to-right walk, resumable on an append-only list.

    ``resume(items)`` returns ``(state, start)``: the remembered state and the
    index to continue from when ``items`` begins with the items seen last time,
    else ``(None, 0)``. ``save(items, state)`` remembers a finished walk. Two
    snapshots of the same append-only list prove it by identity and length
    (:meth:`Snapshot.extends`: nothing compared); anything else costs one
    C-level list comparison (identical elements compare by pointer).

    :meth:`advance` walks from a resumed state to the end and, on a chain's
    snapshot, also keeps the state at its :attr:`Snapshot.mark` (where the
    last part begins). When the next chain's last part is new (a provider after
    the history) but the chain proves it shares the items up to that mark
    (:meth:`Joined.shares`), ``resume`` continues from the mark: the walk
    covers the history's new messages and the last part, not the history.

    :meth:`walk` does all of it and more, part by part: it keeps, for each part
    of a chain, the part's structure and the walk's state where the part
    begins and ends. A part the walk enters in the state it entered it last
    time, and which is the same part or provably extends it (a history
    :class:`Snapshot` of the same list, no shorter), resumes at the part's old
    end. So a part *before* the history whose output changed (a recalled
    memory, a clock in the system prompt), of any length, costs a walk of that
    part, and the history's walk resumes: a walk whose state after the system
    prompt is the same whatever the prompt says (the legality walk: nothing
    open) never re-reads the history. Memory: one record per part.
    """

    __slots__ = ("_items", "_state", "_mark", "_parts", "_start")

    def __init__(self) -> None:
        self._items: list[Any] | Snapshot = []
        self._state: S | None = None
        self._mark: tuple[int, S] | None = None  # (index, the walk's state after items[:index])
        # per part of the last chain walked: (structure, where the walk began in it, its length, state in, state out)
        self._parts: tuple[tuple[Sequence[Any], int, int, S, S], ...] = ()
        self._start = 0  # where walk() began in the items last time

    def resume(self, items: Sequence[Any]) -> tuple[S | None, int]:
        """The saved state and where to continue, or ``(None, 0)`` when the prefix changed."""
        seen = self._items
        n = len(seen)
        if self._state is None or n == 0:
            return None, 0
        if isinstance(items, Snapshot):
            if items.extends(seen):
                return self._state, n  # the same append-only list, no shorter: nothing to compare
            mark = self._mark
            if mark is not None and 0 < mark[0] <= items.shares(seen):
                return mark[1], mark[0]  # the items up to the last part of what was seen: proven the same
        if len(items) < n or items[n - 1] is not seen[n - 1] or items[0] is not seen[0]:
            return None, 0
        prefix = items[:n]
        if (prefix if isinstance(prefix, list) else list(prefix)) != (seen if isinstance(seen, list) else seen.tolist()):
            return None, 0
        return self._state, n

    def shared(self, items: Sequence[Any]) -> tuple[S | None, int]:
        """The saved state and how many leading items ``items`` provably shares with what it was saved for.

        For a walk whose state says itself how far it is valid (``token_budget``'s
        window: the units before its last run); only a snapshot's proof counts
        (:meth:`Snapshot.shares`, :meth:`Joined.shares`), nothing is compared.
        """
        if self._state is None or not isinstance(items, Snapshot):
            return None, 0
        return self._state, items.shares(self._items)

    def advance(self, items: Sequence[Any], state: S, start: int, step: Callable[[S, Sequence[Any]], S]) -> S:
        """Walk ``items[start:]`` from ``state`` with ``step`` (state, slice -> state), save and return the result.

        ``state`` is the walk's state after ``items[:start]`` (from
        :meth:`resume`, or the caller's initial state). On a snapshot with a
        mark at or after ``start`` the walk stops there once to keep the state
        for the next build (see the class docstring).
        """
        mark = items.mark if isinstance(items, Snapshot) else 0
        if 0 < mark < len(items) and start <= mark:
            at_mark = step(state, items[start:mark]) if start < mark else state
            state = step(at_mark, items[mark:])
            self.save(items, state)
            self._mark = (mark, at_mark)
            return state
        state = step(state, items[start:] if start else items)
        self.save(items, state)
        return state

    def save(self, items: Sequence[Any], state: S) -> None:
        """Remember ``state`` as the result of walking all of ``items`` (and forget any mark).

        A list or a :class:`Snapshot` is kept by reference (no copy): the caller
        hands over a list it will not mutate (a fresh slice), or a snapshot,
        which later appends to its list do not change.
        """
        self._items = items if isinstance(items, (list, Snapshot)) else list(items)
        self._state = state
        self._mark = None
        self._parts = ()

    def walk(self, items: Sequence[Any], initial: S, step: Callable[[S, Sequence[Any]], S], start: int = 0) -> S:
        """The state after walking ``items[start:]`` from ``initial`` with ``step``, re-walking only what is new.

        On a chain's snapshot (:attr:`Snapshot.parts`) the walk goes part by
        part and each part resumes where it can (see the class docstring);
        otherwise it resumes after the prefix seen last time (:meth:`resume`)
        when it began at the same ``start``. ``step`` must be a left fold:
        walking two slices one after the other gives what walking them joined does.
        """
        parts = items.parts if isinstance(items, Snapshot) else None
        if parts is None:
            state, k = self.resume(items) if start == self._start else (None, 0)
            if state is None or k < start:
                state, k = initial, start
            state = self.advance(items, state, k, step)
            self._start = start
            return state
        old = self._parts
        state = initial
        records = []
        for offset, part in parts:
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


def _resumable(
    records: tuple[tuple[Sequence[Any], int, int, S, S], ...], part: Sequence[Any], begin: int, entered: S,
) -> tuple[Sequence[Any], int, int, S, S] | None:
    """The record of the last walk that ``part`` (walked from ``begin``, entered in state ``entered``) resumes.

    The part must be entered in the same state, from the same place, and hold
    the record's items unchanged at the same positions: a :class:`Snapshot`
    extending the recorded one, or the same list at the same length (a part's
    structure is a list its owner does not mutate), or a list of the same
    objects (one C-level pass, cheaper than the walk it saves). A chain has a
    handful of parts, so every record is tried.
    """
    for record in records:
        seen, was, had, state, _ = record
        if was != begin or state != entered:
            continue
        if isinstance(part, Snapshot):
            if part.extends(seen):
                return record
        elif part is seen:
            if len(part) == had:
                return record
        elif len(part) == had == len(seen) and all(map(is_, part, seen)):
            return record
    return None
