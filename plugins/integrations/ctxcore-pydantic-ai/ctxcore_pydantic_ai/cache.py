"""The per-message conversion cache: each pydantic-ai message is converted to ctxcore once, found again by content.

A next turn then converts only the messages it has not seen. An entry keeps
the message's part types and a shallow snapshot of each part's fields (the
part's ``__dict__`` copied when converted): everything the conversion reads,
since it reads the parts and nothing else of a message. A message *matches*
an entry when its parts have those types and fields, compared at C level, so
a history handed back as new objects equal by value (loaded again with
``ModelMessagesTypeAdapter.validate_json``, as a user persisting history does
every turn) reuses its conversions just as the very same objects do.

Three ways, cheapest first:

- **grown**: the last call's history, the very objects (pointer compares), each
  holding the same ``parts`` list, plus new messages; the newest :data:`GUARD`
  are also matched against their entries, so a part replaced or a field
  reassigned there (a streamed or retried answer) is converted again;
- **reloaded**: the last call's history again as other objects (or some of
  them): the same message types and part counts, and every part matching its
  snapshot (four C-level list compares over the whole history, flattened);
- otherwise **per message**: each message is looked up by identity, then by
  its type and timestamp, and reused only if it matches the entry (every part,
  at any position); entries of messages no longer in the history are dropped,
  so memory follows the current history.

Not noticed, on the grown way only: a field reassigned on a part of a message
older than the newest :data:`GUARD`, a part replaced *in place* in such a
message's ``parts`` list, and an in-place change *inside* a field's value
(appending to a content list, editing an ``args`` dict) anywhere; replace the
part or the message instead, as pydantic-ai itself does. This is the rule
ctxcore's ``history`` provider keeps for its own items. A reused conversion
refers to the message it was made from (equal in every part to the one given);
message-level fields the model does not read (``usage``, ``run_id``...) are
not compared. Memory: the entries of the current history, and the current
history's objects beside the ones its conversions were made from (at most the
history twice, after a history loaded again).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain
from operator import attrgetter, is_
from typing import Any

from pydantic_ai.messages import ModelMessage

from ctxcore import Message
from ctxcore_pydantic_ai.convert import convert_model_message
from ctxcore_pydantic_ai.window import WindowCache

__all__ = ["ConversionCache", "GUARD"]

#: how many of the newest messages are matched against their entries on the grown way.
GUARD = 8

_PARTS = attrgetter("parts")

#: (the message converted, its part types, a snapshot of each part's fields, the conversion)
_Entry = tuple[ModelMessage, tuple[type, ...], list[dict[str, Any]], tuple[Message, ...]]


def _entry(index: int, message: Any, thinking: bool) -> _Entry:
    """A new entry for ``message`` (at ``index`` of the history, for the error).

    Raises:
        ValueError: ``message`` is not a pydantic-ai message; names its index.
    """
    try:
        converted = convert_model_message(message, thinking)
    except TypeError as exc:
        raise ValueError(f"message {index}: {exc}") from None
    parts = message.parts
    return message, tuple(map(type, parts)), [dict(vars(p)) for p in parts], converted


def _matches(entry: _Entry, message: Any) -> bool:
    """Whether ``message``'s parts have the entry's types and fields (what the conversion reads)."""
    parts = message.parts
    return (type(message) is type(entry[0]) and tuple(map(type, parts)) == entry[1]
            and list(map(vars, parts)) == entry[2])


def _key(message: Any) -> tuple[type, Any]:
    return type(message), getattr(message, "timestamp", None)


class ConversionCache:
    """Converts a ``ModelMessage`` list to ctxcore messages, reusing earlier conversions of equal messages.

    ``hits`` and ``misses`` count the messages reused and converted by the last call; ``way`` says which
    way it took (``"grown"``, ``"reloaded"``, ``"per message"``).
    """

    def __init__(self, *, thinking: bool = True) -> None:
        #: whether thinking parts are counted (see :func:`ctxcore_pydantic_ai.convert.convert_model_message`)
        self.thinking = thinking
        self.hits = 0
        self.misses = 0
        self.way = ""
        self._reset()
        #: the way back of this conversation's windows (kept here: one per conversation, dropped with it)
        self.window = WindowCache()

    def __len__(self) -> int:
        return len(self._entries)

    def convert(self, messages: Sequence[ModelMessage]) -> list[Message]:
        """The ctxcore messages of ``messages``, in order (see :func:`ctxcore_pydantic_ai.from_pydantic_ai`)."""
        n = len(self._seen)
        if n and len(messages) >= n:
            prefix = list(messages[:n])
            way = "grown" if self._grew(prefix) else "reloaded" if self._reloaded(prefix) else ""
            if way:
                for index in range(n, len(messages)):
                    self._add(messages[index], _entry(index, messages[index], self.thinking))
                self.hits, self.misses, self.way = n, len(messages) - n, way
                return list(self._out)
        return self._rebuild(messages)

    # ---------------------------------------------------------------- internals
    def _reset(self) -> None:
        self._entries: list[_Entry] = []  # one per message of the last call's history, in order
        self._seen: list[ModelMessage] = []  # the last call's messages, and each one's parts list
        self._parts: list[Any] = []
        self._types: list[type] = []  # for the reloaded way: message types, part counts, and flattened,
        self._counts: list[int] = []  # every part's type and snapshot
        self._part_types: list[type] = []
        self._snaps: list[dict[str, Any]] = []
        self._out: list[Message] = []

    def _add(self, message: Any, entry: _Entry) -> None:
        parts = message.parts
        self._entries.append(entry)
        self._seen.append(message)
        self._parts.append(parts)
        self._types.append(type(message))
        self._counts.append(len(parts))
        self._part_types.extend(entry[1])
        self._snaps.extend(entry[2])
        self._out.extend(entry[3])

    def _grew(self, prefix: list[Any]) -> bool:
        """Whether ``prefix`` is the last call's history, the very objects with their parts lists, the newest unedited."""
        if not (all(map(is_, prefix, self._seen)) and all(map(is_, map(_PARTS, prefix), self._parts))):
            return False
        entries = self._entries
        return all(_matches(entries[i], prefix[i]) for i in range(max(0, len(prefix) - GUARD), len(prefix)))

    def _reloaded(self, prefix: list[Any]) -> bool:
        """Whether ``prefix`` matches the last call's history message by message (any objects), at C level."""
        if list(map(type, prefix)) != self._types:
            return False
        parts = list(map(_PARTS, prefix))
        if list(map(len, parts)) != self._counts:
            return False
        flat = list(chain.from_iterable(parts))
        if list(map(type, flat)) != self._part_types or list(map(vars, flat)) != self._snaps:
            return False
        self._seen, self._parts = prefix, parts  # the next turn's grown way compares with these objects
        return True

    def _rebuild(self, messages: Sequence[ModelMessage]) -> list[Message]:
        """Each message looked up on its own (by identity, then type and timestamp) and matched; the rest dropped."""
        by_id = {id(e[0]): e for e in self._entries}
        by_key: dict[tuple[type, Any], list[_Entry]] = {}
        for e in self._entries:
            by_key.setdefault(_key(e[0]), []).append(e)
        self._reset()
        taken: set[int] = set()  # one entry serves one message: a conversion appears once in the output
        hits = 0
        for message in messages:
            entry = self._find(message, by_id, by_key, taken)
            if entry is None:
                entry = _entry(len(self._seen), message, self.thinking)
            else:
                hits += 1
            taken.add(id(entry))
            self._add(message, entry)
        self.hits, self.misses, self.way = hits, len(messages) - hits, "per message"
        return list(self._out)

    @staticmethod
    def _find(message: Any, by_id: dict[int, _Entry], by_key: dict[tuple[type, Any], list[_Entry]],
              taken: set[int]) -> _Entry | None:
        parts = getattr(message, "parts", None)
        if parts is None:
            return None
        entry = by_id.get(id(message))
        if entry is not None and id(entry) not in taken and _matches(entry, message):
            return entry
        for entry in by_key.get(_key(message), ()):
            if id(entry) not in taken and _matches(entry, message):
                return entry
        return None
