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
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic_ai.messages import ModelMessage

from ctxcore import Message
from ctxcore_pydantic_ai.convert import convert_model_message

__all__ = ["ConversionCache", "GUARD"]

#: how many of the newest messages also have each part's fields compared with a snapshot.
GUARD = 8


_Entry = tuple[ModelMessage, Any, tuple[Any, ...], list[dict[str, Any]], tuple[Message, ...]]


def _entry(message: Any) -> _Entry:
    parts = message.parts
    return (message, parts, tuple(parts), [dict(vars(p)) for p in parts], convert_model_message(message))


class ConversionCache:
    """Converts a ``ModelMessage`` list to ctxcore messages, reusing earlier conversions.

    ``hits`` and ``misses`` count the messages reused and converted by the last call.
    """

    def __init__(self) -> None:
        self._entries: dict[int, _Entry] = {}
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)

    def convert(self, messages: Sequence[ModelMessage]) -> list[Message]:
        """The ctxcore messages of ``messages``, in order (see :func:`ctxcore_pydantic_ai.from_pydantic_ai`)."""
        get = self._entries.get
        kept: dict[int, _Entry] = {}
        out: list[Message] = []
        extend = out.extend
        hits = 0
        deep_from = len(messages) - GUARD
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
                entry = _entry(message)
            kept[key] = entry
            extend(entry[4])
        self._entries = kept
        self.hits, self.misses = hits, len(messages) - hits
        return out
