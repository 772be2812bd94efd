"""Lazy message sequences: a build pays only for the messages it looks at.

A long conversation is handed through the build as a :class:`LazyMessages`: a
``structure`` (the stored messages, held by pointer: a list, or a
:class:`~ctxcore.engine.views.Snapshot` of an append-only list) plus a stack of
*structure-preserving* transforms (the history provider's annotation and marker
neutralising, the builder's ``source`` stamp). :class:`MessageChain`
concatenates several sequences (one per provider); its ``structure`` is a
:class:`~ctxcore.engine.views.Joined` of the parts' structures.

Invariant: a transform may change content, metadata and provenance but never
``id``, ``role``, ``zone``, ``priority``, ``trust``, ``tool_calls`` or
``tool_call_id``, so code that only needs those (grouping units, legality,
budget classification) reads ``structure`` and gets the answer the transformed
messages would give. Why: a message is then transformed only the first time
somebody indexes it, and the result is memoised per transform (keyed by the
stored object, whose identity is stable across builds), so the next build
reuses it and a build never transforms history it is about to drop.

What a structure item provides: a :class:`Message` or a provider's own light
stand-in for one (see ``ctxcore_providers.history``). Code reading
``structure`` may rely on ``id``, ``role``, ``zone``, ``priority``, ``trust``,
``tool_call_id``, ``tool_calls`` (only its truth), ``tool_call_ids``,
``has_provider_blocks`` and ``metadata``, and on nothing else (index the lazy
sequence for the message).
Indexing, slicing and iterating a lazy sequence only ever give messages.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Container, Iterable, Iterator, Sequence
from typing import overload

from ctxcore.engine.prefix_memo import PrefixMemo
from ctxcore.engine.views import Joined, Snapshot
from ctxcore.model.messages import Message
from ctxcore.model.structure import structure_of

__all__ = ["Joined", "LazyMessages", "MessageChain", "PrefixMemo", "Snapshot", "structure_of", "is_lazy"]

Transform = Callable[[Message], Message]
Memo = dict[int, tuple[Message, Message]]


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
    """

    __slots__ = ("parts", "structure", "_offsets")

    def __init__(self, parts: Iterable[Sequence[Message]]) -> None:
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


