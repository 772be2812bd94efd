"""The reference filters: ``MaxMessagesFilter`` and ``TokenBudgetFilter``.

Both call ctxcore's own filters (``max_messages``, ``token_budget``, created
through the registry) with the reference signature ``apply(messages,
local_state=None, global_state=None, ctx=None, **kwargs)``. Called by a native
``ContextBuilder`` (``apply(messages, filter_context)``) they use the builder's
counter and report instead, so the same object works in both worlds.

Where ctxcore deliberately differs from the reference code:

- a tool-call unit (the assistant call and its results) is kept or dropped
  whole, and the newest unit (the current turn) is always kept;
- ``max_messages`` counts the messages *after* the pinned prefix, as the
  reference's own example shows (``[sys1, sys2, u1, a1, u2, a2, u3, a3]`` with 5
  keeps ``[sys1, sys2, a1, u2, a2, u3, a3]``);
- when the pinned prefix plus the current turn exceed ``max_tokens``,
  ``TokenBudgetFilter`` raises ``BudgetExceeded`` (the reference silently sends
  the pinned prefix alone).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ctxcore.compat._resolve import create
from ctxcore.compat.counters import SimpleTokenCounter
from ctxcore.engine.budget import CachedCounter, FilterContext
from ctxcore.model.messages import Message
from ctxcore.render import coerce

__all__ = ["MaxMessagesFilter", "TokenBudgetFilter"]


class MaxMessagesFilter:
    """Keep the leading pinned roles plus the newest ``max_messages`` other messages, by whole units."""

    def __init__(self, max_messages: int | None, pinned_roles: Sequence[str] = ("system",)) -> None:
        self.max_messages = max_messages
        self.pinned_roles = tuple(pinned_roles)
        self._native = None if max_messages is None else create(
            "filter", "max_messages", {"max_messages": max_messages, "pinned_roles": self.pinned_roles}, for_="MaxMessagesFilter")

    def apply(self, messages: Sequence[Message | Mapping[str, Any]], local_state: Any = None, global_state: Any = None,
              ctx: Any | None = None, **kwargs: Any) -> list[Message]:
        """The trimmed list (a new list; the input is not changed); ``max_messages=None`` keeps everything."""
        if self._native is None:
            return coerce(messages)
        return list(self._native.apply(coerce(messages), local_state if isinstance(local_state, FilterContext) else None))


class TokenBudgetFilter:
    """Drop the oldest (``trim_from_start``) or newest whole units until the messages fit ``max_tokens``.

    ``token_counter`` defaults to :class:`SimpleTokenCounter` (4 characters a
    token), as in the reference. Counts are cached per message content.
    """

    def __init__(self, max_tokens: int | None, token_counter: Any | None = None, pinned_roles: Sequence[str] = ("system",),
                 trim_from_start: bool = True) -> None:
        self.max_tokens = max_tokens
        self.token_counter = token_counter or SimpleTokenCounter()
        self.pinned_roles = tuple(pinned_roles)
        self.trim_from_start = trim_from_start
        self._native = None if max_tokens is None else create(
            "filter", "token_budget", {"max_tokens": max_tokens, "pinned_roles": self.pinned_roles,
                                       "trim_from_start": trim_from_start}, for_="TokenBudgetFilter")
        self._counter = CachedCounter(self.token_counter)

    def apply(self, messages: Sequence[Message | Mapping[str, Any]], local_state: Any = None, global_state: Any = None,
              ctx: Any | None = None, **kwargs: Any) -> list[Message]:
        """The messages that fit, in order.

        Raises:
            BudgetExceeded: the pinned prefix and the newest unit alone exceed ``max_tokens``.
        """
        if self._native is None:  # max_tokens=None: no budget, as in the reference
            return coerce(messages)
        if isinstance(local_state, FilterContext):  # inside a native ContextBuilder
            context = FilterContext(counter=self._counter, budget=self.max_tokens, runtime=local_state.runtime,
                                    report=local_state.report, step_id=local_state.step_id)
        else:
            context = FilterContext(counter=self._counter, budget=self.max_tokens, step_id="TokenBudgetFilter")
        return list(self._native.apply(coerce(messages), context))
