"""The per-message conversion cache: each pydantic-ai message is converted to ctxcore once.

A next turn then converts only the messages it has not seen. An entry is
reused when the history holds the same ``ModelMessage`` object with the same
``parts`` list holding the same part objects; for the newest :data:`GUARD`
messages each part's fields are also compared with a shallow snapshot (at C
level), so a field reassigned there (``part.content = ...``, a streamed or
retried answer) is converted again. Not noticed: a field reassigned on a part
of an older message, and an in-place change *inside* a field's value
(appending to a content list, editing an ``args`` dict); replace the part or
the message instead, as pydantic-ai itself does. This is the rule ctxcore's
``history`` provider keeps for its own items. Entries of messages no longer in
the history are dropped on every call, so memory follows the current history.

The common turn (the last call's history plus new messages) takes a fast
path, two C-level list compares: the same message objects holding the same
``parts`` lists as last call (an identical item compares by pointer; a
different but equal message counts as the same), and for the newest
:data:`GUARD` messages the full guard above; then only the new messages are
converted. On that path a part replaced or added *in place* in the ``parts``
list of a message older than the newest :data:`GUARD` is not noticed either
(the per-message path notices it): replace the message. Anything else takes
the per-message path.
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import attrgetter
from typing import Any

from pydantic_ai.messages import ModelMessage

from ctxcore import Message
from ctxcore_pydantic_ai.convert import convert_model_message
from ctxcore_pydantic_ai.window import WindowCache

__all__ = ["ConversionCache", "GUARD"]

#: how many of the newest messages also have each part's fields compared with a snapshot.
GUARD = 8


_PARTS = attrgetter("parts")

_Entry = tuple[ModelMessage, Any, tuple[Any, ...], list[dict[str, Any]], tuple[Message, ...]]


def _entry(message: Any, thinking: bool = True) -> _Entry:
    parts = message.parts
    return (message, parts, tuple(parts), [dict(vars(p)) for p in parts], convert_model_message(message, thinking))


class ConversionCache:
    """Converts a ``ModelMessage`` list to ctxcore messages, reusing earlier conversions.

    ``hits`` and ``misses`` count the messages reused and converted by the last call.
    """

    def __init__(self, *, thinking: bool = True) -> None:
        #: whether thinking parts are counted (see :func:`ctxcore_pydantic_ai.convert.convert_model_message`)
        self.thinking = thinking
        self._entries: dict[int, _Entry] = {}
        self.hits = 0
        self.misses = 0
        # the last call's history and each message's parts list, for the growth fast path
        self._seen: list[ModelMessage] = []
        self._parts: list[Any] = []
        self._out: list[Message] = []
        #: the way back of this conversation's windows (kept here: one per conversation, dropped with it)
        self.window = WindowCache()

    def __len__(self) -> int:
        return len(self._entries)

    def convert(self, messages: Sequence[ModelMessage]) -> list[Message]:
        """The ctxcore messages of ``messages``, in order (see :func:`ctxcore_pydantic_ai.from_pydantic_ai`)."""
        n = len(self._seen)
        if n and len(messages) >= n and self._grew(messages, n):
            entries, out = self._entries, self._out
            for message in messages[n:]:
                entry = _entry(message, self.thinking)
                entries[id(message)] = entry
                out.extend(entry[4])
                self._note(message)
            self.hits, self.misses = n, len(messages) - n
            return list(out)
        return self._rebuild(messages)

    # ---------------------------------------------------------------- internals
    def _grew(self, messages: Sequence[ModelMessage], n: int) -> bool:
        """Whether ``messages`` is the last call's history plus new messages, as it was (C-level compares)."""
        prefix = messages[:n]
        # list compares: identical items compare by pointer, so the common case costs no __eq__ call
        if (prefix if isinstance(prefix, list) else list(prefix)) != self._seen or list(map(_PARTS, prefix)) != self._parts:
            return False
        get = self._entries.get
        for message in prefix[-GUARD:]:  # the newest: the same part objects with the same fields, too
            entry = get(id(message))
            if (entry is None or entry[0] is not message or entry[1] is not message.parts
                    or tuple(message.parts) != entry[2] or list(map(vars, message.parts)) != entry[3]):
                return False
        return True

    def _note(self, message: ModelMessage) -> None:
        self._seen.append(message)
        self._parts.append(message.parts)

    def _rebuild(self, messages: Sequence[ModelMessage]) -> list[Message]:
        """Each message looked up on its own; entries of messages no longer in the history dropped."""
        get = self._entries.get
        kept: dict[int, _Entry] = {}
        out: list[Message] = []
        extend = out.extend
        hits = 0
        deep_from = len(messages) - GUARD
        self._seen, self._parts = [], []
        for position, message in enumerate(messages):
            key = id(message)
            entry = get(key)
            # the guard: the same message holding the same parts list with the same part objects;
            # for the newest GUARD messages also each part's fields as they were (C-level compares)
            if (entry is not None and entry[0] is message and entry[1] is message.parts
                    and tuple(message.parts) == entry[2]  # compares by identity first
                    and (position < deep_from or list(map(vars, message.parts)) == entry[3])):
                hits += 1
            else:
                entry = _entry(message, self.thinking)
            kept[key] = entry
            extend(entry[4])
            self._note(message)
        self._entries = kept
        self._out = out
        self.hits, self.misses = hits, len(messages) - hits
        return list(out)
