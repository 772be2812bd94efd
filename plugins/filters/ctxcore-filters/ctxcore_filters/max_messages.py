"""``max_messages``: keep the pinned prefix plus the newest N messages, by whole units.

Counting is by messages, as in the reference designs: ``[sys1, sys2, u1, a1, u2,
a2, u3, a3]`` with ``max_messages: 5`` keeps ``[sys1, sys2, a1, u2, a2, u3, a3]``.
A tool-call unit (an assistant call with its results) is never split: the window
*narrows* to the unit boundary, so the output never holds more than N
non-pinned messages — except that the newest unit is always kept, even alone
larger than N, because the current tool round cannot be dropped. ``max_messages:
0`` is the one exception to that exception: it keeps only the pinned prefix.

Protected units (holding a ``zone: protected`` message: rules, permanent
memory, skills) are never trimmed: they are kept wherever they are and do not
count towards N, which counts the dynamic messages.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from ctxcore import FilterContext, Message, Unit, group_units
from ctxcore.kit import pinned_prefix_length


class MaxMessagesConfig(BaseModel):
    """Options of the ``max_messages`` filter."""

    model_config = ConfigDict(extra="forbid")

    max_messages: int = Field(ge=0, description="Non-pinned messages to keep, newest first.")
    pinned_roles: tuple[str, ...] = Field(default=("system",), description="Roles of the leading prefix always kept.")


class MaxMessages:
    """Keeps the leading pinned messages and the newest ``max_messages`` others."""

    def __init__(self, max_messages: int, pinned_roles: Sequence[str] = ("system",)) -> None:
        if max_messages < 0:
            raise ValueError("max_messages must be >= 0")
        self.max_messages = max_messages
        self.pinned_roles = tuple(pinned_roles)

    def apply(self, messages: Sequence[Message], ctx: FilterContext | None = None) -> list[Message]:
        """Return the pinned prefix, the protected units and the newest whole units within the message limit."""
        messages = list(messages)
        start = pinned_prefix_length(messages, self.pinned_roles)
        rest = messages[start:]
        units = group_units(rest)
        kept: set[Unit] = set()
        dynamic: list[Unit] = []
        for u in units:
            if any(m.zone == "protected" for m in u.slice(rest)):
                kept.add(u)
            else:
                dynamic.append(u)
        if sum(len(u) for u in dynamic) <= self.max_messages:
            return messages
        taken = 0
        for unit in reversed(dynamic):
            if self.max_messages == 0 or (taken and taken + len(unit) > self.max_messages):
                break
            kept.add(unit)
            taken += len(unit)
            if taken >= self.max_messages:
                break
        return messages[:start] + [m for u in units if u in kept for m in u.slice(rest)]
