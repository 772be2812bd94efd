"""Lazy message sequences: a build pays only for the messages it looks at.

A long conversation is handed through the build as a :class:`LazyMessages`: a
``structure`` list (the stored messages, held by pointer) plus a stack of
*structure-preserving* transforms (the history provider's annotation and marker
neutralising, the builder's ``source`` stamp). A transform may change content,
metadata and provenance but never ``id``, ``role``, ``zone``, ``priority``,
``trust``, ``tool_calls`` or ``tool_call_id``, so code that only needs those
(grouping units, legality, budget classification) reads ``structure`` and
derives nothing; a message is transformed the first time somebody indexes it,
and the result is memoised per transform (keyed by the stored object, whose
identity is stable across builds), so the next build reuses it.

:class:`MessageChain` concatenates several sequences (one per provider).
:class:`PrefixMemo` remembers the list a walk last saw and the walk's state, so
the next walk over an append-only list resumes after the unchanged prefix
(checked by one C-level pointer comparison, never a per-message Python loop).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import (
    Any,
    Generic,
    TypeVar,
    overload,
)

from ctxcore.model.messages import Message

__all__ = ["LazyMessages", "MessageChain", "PrefixMemo", "Snapshot", "structure_of", "is_lazy"]

Transform = Callable[[Message], Message]
Memo = dict[int, tuple[Message, Message]]
S = TypeVar("S")


class Snapshot(list[Message]):
    """A structure list that may carry a proof that it extends an earlier one.

    ``extends`` is ``(earlier, n)`` when whoever made this list checked that its
    first ``n`` items are the items of ``earlier`` (a list of length ``n`` that
    nobody mutates), else ``None``. A :class:`PrefixMemo` that saved
    ``earlier`` then resumes by pointer identity, without comparing the
    prefix again: one check by the history provider serves every later walk.
    """

    __slots__ = ("extends",)

    def __init__(self, items: Iterable[Message] = (), extends: tuple[list[Message], int] | None = None) -> None:
        super().__init__(items)
        self.extends = extends


class LazyMessages(Sequence[Message]):
    """``structure`` seen through memoised, structure-preserving transforms.

    Args:
        structure: the stored messages (not copied: the caller gives a list it
            will not mutate).
        layers: ``(transform, memo)`` pairs applied in order; each memo maps
            ``id(stored message)`` to ``(stored message, transformed)`` and may be
            shared across builds by whoever owns it.
        id_sets: sets that together hold every id in ``structure`` (answering
            :meth:`has_id` without a walk); computed on first use when absent.
    """

    __slots__ = ("structure", "layers", "_id_sets")

    def __init__(
        self,
        structure: list[Message],
        layers: Sequence[tuple[Transform, Memo]] = (),
        id_sets: Sequence[set[str] | frozenset[str]] | None = None,
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
    """Several message sequences read as one, without copying their messages.

    ``structure`` is the concatenation of the parts' structures (a list of
    pointers built once); indexing finds the part and asks it.
    """

    __slots__ = ("parts", "structure", "_offsets")

    def __init__(self, parts: Iterable[Sequence[Message]], previous: MessageChain | None = None) -> None:
        self.parts = [p for p in parts if len(p)]
        self.structure: list[Message] = Snapshot(extends=self._extends(previous))
        self._offsets: list[int] = []
        for p in self.parts:
            self._offsets.append(len(self.structure))
            self.structure.extend(structure_of(p))

    def _extends(self, previous: MessageChain | None) -> tuple[list[Message], int] | None:
        """``(previous.structure, its length)`` when this chain provably extends ``previous``.

        True when every part but the last holds the same messages as the
        previous chain's part (a small list compared, or the very same list),
        and the last part is the previous last part or a :class:`Snapshot`
        proven to extend it.
        """
        if previous is None or not self.parts or len(self.parts) != len(previous.parts):
            return None
        for mine, theirs in zip(self.parts[:-1], previous.parts[:-1], strict=True):
            a, b = structure_of(mine), structure_of(theirs)
            if a is not b and a != b:
                return None
        last, before = structure_of(self.parts[-1]), structure_of(previous.parts[-1])
        proof = getattr(last, "extends", None)
        if last is before or (proof is not None and proof[0] is before and proof[1] == len(before)):
            return previous.structure, len(previous.structure)
        return None

    @overload
    def __getitem__(self, index: int) -> Message: ...

    @overload
    def __getitem__(self, index: slice) -> list[Message]: ...

    def __getitem__(self, index: int | slice) -> Message | list[Message]:
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self.structure))
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
        if index < 0:
            index += len(self.structure)
        if not 0 <= index < len(self.structure):
            raise IndexError("message index out of range")
        k = bisect_right(self._offsets, index) - 1
        return self.parts[k][index - self._offsets[k]]

    def __len__(self) -> int:
        return len(self.structure)

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
    return kind is not list and kind is not Snapshot and isinstance(messages, (LazyMessages, MessageChain))


def structure_of(messages: Sequence[Message]) -> Sequence[Message]:
    """What to read ids, roles, zones, priorities and tool calls from without transforming anything."""
    kind = type(messages)
    if kind is MessageChain or kind is LazyMessages:
        return messages.structure  # type: ignore[attr-defined]
    structure = getattr(messages, "structure", None)
    return structure if isinstance(structure, list) else messages


class PrefixMemo(Generic[S]):
    """The state of a left-to-right walk, resumable on an append-only list.

    ``resume(items)`` returns ``(state, start)``: the remembered state and the
    index to continue from when ``items`` begins with the list seen last time
    (same objects, or equal ones), else ``(None, 0)``. ``save(items, state)``
    remembers a finished walk. The prefix check is one C-level list comparison:
    identical elements compare by pointer.
    """

    __slots__ = ("_items", "_state")

    def __init__(self) -> None:
        self._items: list[Any] = []
        self._state: S | None = None

    def resume(self, items: Sequence[Any]) -> tuple[S | None, int]:
        """The saved state and where to continue, or ``(None, 0)`` when the prefix changed."""
        seen = self._items
        n = len(seen)
        if self._state is None or n == 0 or len(items) < n:
            return None, 0
        proof = getattr(items, "extends", None)
        if proof is not None and proof[0] is seen and proof[1] == n:
            return self._state, n  # proven by whoever made ``items``: no comparison
        if items[n - 1] is not seen[-1] or items[0] is not seen[0]:
            return None, 0
        prefix = items if len(items) == n else items[:n]
        if (prefix if isinstance(prefix, list) else list(prefix)) != seen:
            return None, 0
        return self._state, n

    def save(self, items: Sequence[Any], state: S) -> None:
        """Remember ``state`` as the result of walking all of ``items``.

        A list is kept by reference (no copy): the caller hands over a list it
        will not mutate (a fresh slice, a chain's structure).
        """
        self._items = items if isinstance(items, list) else list(items)
        self._state = state
