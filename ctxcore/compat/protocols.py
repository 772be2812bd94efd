"""The reference protocols: ``MessageProvider``, ``ContextFilter``, ``TokenCounterProtocol``.

Structural types with the reference signatures, for code that annotates or
subclasses them. An object following ``MessageProvider`` or ``ContextFilter``
also works in a native ``ContextBuilder``: the builder calls
``get_messages(state, runtime)`` and ``apply(messages, filter_context)``,
which land on ``local_state`` and ``global_state`` / ``local_state``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Protocol, runtime_checkable

from ctxcore.model.messages import Message

__all__ = ["ContextFilter", "Message", "MessageProvider", "TokenCounterProtocol"]


@runtime_checkable
class MessageProvider(Protocol):
    """Produces messages from the state and the run's context."""

    def get_messages(self, local_state: Any, global_state: Any = None, ctx: Any | None = None) -> Sequence[Message]:
        """The messages this source contributes."""
        ...


@runtime_checkable
class ContextFilter(Protocol):
    """Post-processes the aggregated messages (trim, enrich, clean)."""

    def apply(self, messages: Sequence[Message], local_state: Any = None, global_state: Any = None,
              ctx: Any | None = None, **kwargs: Any) -> Sequence[Message]:
        """The processed messages."""
        ...


@runtime_checkable
class TokenCounterProtocol(Protocol):
    """Estimates the tokens of one message and of a sequence."""

    def count_message(self, message: Message) -> int:
        """Tokens of one message."""
        ...

    def count_messages(self, messages: Iterable[Message]) -> int:
        """Tokens of a sequence of messages."""
        ...
