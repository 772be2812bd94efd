"""The per-message conversion cache: each pydantic-ai message is converted to ctxcore once.

A next turn then converts only the messages it has not seen. An entry is
reused when the history holds the same ``ModelMessage`` object, holding the
same part objects, each with the same field values (a shallow snapshot of each
part's fields, compared at C level). Not noticed: an in-place change *inside*
a field's value, such as appending to a ``UserPromptPart``'s content list or
editing a ``ToolCallPart``'s ``args`` dict; replace the part (or the message)
instead, as pydantic-ai itself does. Entries of messages no longer in the
history are dropped on every call, so memory follows the current history.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic_ai.messages import ModelMessage

from ctxcore import Message
from ctxcore_pydantic_ai.convert import convert_model_message

__all__ = ["ConversionCache"]


def _guard(message: Any) -> tuple[Any, ...]:
    parts = message.parts
    return (parts, tuple(parts), tuple([dict(vars(p)) for p in parts]))


def _same(message: Any, guard: tuple[Any, ...]) -> bool:
    parts = message.parts
    if parts is not guard[0] or len(parts) != len(guard[1]):
        return False
    for part, old, snapshot in zip(parts, guard[1], guard[2], strict=True):
        if part is not old or vars(part) != snapshot:
            return False
    return True


class ConversionCache:
    """Converts a ``ModelMessage`` list to ctxcore messages, reusing earlier conversions.

    ``hits`` and ``misses`` count the messages reused and converted by the last call.
    """

    def __init__(self) -> None:
        self._entries: dict[int, tuple[ModelMessage, tuple[Any, ...], tuple[Message, ...]]] = {}
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)

    def convert(self, messages: Sequence[ModelMessage]) -> list[Message]:
        """The ctxcore messages of ``messages``, in order (see :func:`ctxcore_pydantic_ai.from_pydantic_ai`)."""
        entries = self._entries
        kept: dict[int, tuple[ModelMessage, tuple[Any, ...], tuple[Message, ...]]] = {}
        out: list[Message] = []
        hits = 0
        for message in messages:
            key = id(message)
            entry = entries.get(key)
            if entry is not None and entry[0] is message and _same(message, entry[1]):
                hits += 1
            else:
                entry = (message, _guard(message), convert_model_message(message))
            kept[key] = entry
            out.extend(entry[2])
        self._entries = kept
        self.hits, self.misses = hits, len(messages) - hits
        return out
