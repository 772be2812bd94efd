"""Tool-call units: the indivisible pieces filters keep or drop.

An assistant message that requests tool calls, together with the tool results
that answer it, is one unit; every other message is a unit of one. Providers
reject a tool result whose call is missing and (OpenAI) a call whose results are
missing, so filters work on units and never split one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ctxcore.errors import InvalidHistory
from ctxcore.messages import Message

__all__ = ["Unit", "group_units", "check_tool_pairing", "pinned_prefix_length"]


@dataclass(frozen=True, slots=True)
class Unit:
    """A contiguous run ``messages[start:end]`` that must be kept or dropped whole."""

    start: int
    end: int

    def __len__(self) -> int:
        return self.end - self.start

    def slice(self, messages: Sequence[Message]) -> Sequence[Message]:
        """Return the messages of this unit."""
        return messages[self.start:self.end]


def group_units(messages: Sequence[Message]) -> list[Unit]:
    """Split ``messages`` into units in one pass.

    Tool messages directly after an assistant message join its unit while they
    answer one of its calls (parallel calls may be answered in any order). A tool
    message that answers nothing open is a unit of its own (an orphan); legality
    checks decide what to do with it.
    """
    units: list[Unit] = []
    i, n = 0, len(messages)
    while i < n:
        m = messages[i]
        j = i + 1
        if m.role == "assistant" and m.tool_calls:
            pending = set(m.tool_call_ids)
            while j < n and pending and messages[j].role == "tool" and messages[j].tool_call_id in pending:
                pending.discard(messages[j].tool_call_id)
                j += 1
        units.append(Unit(i, j))
        i = j
    return units


def pinned_prefix_length(messages: Sequence[Message], pinned_roles: Sequence[str]) -> int:
    """Length of the leading run of messages whose role is in ``pinned_roles``.

    Budget filters always keep this prefix (the system prompt) and trim after it.
    """
    roles = set(pinned_roles)
    n = 0
    for m in messages:
        if m.role not in roles:
            break
        n += 1
    return n


def check_tool_pairing(messages: Sequence[Message]) -> None:
    """Raise :class:`InvalidHistory` unless every call is answered and every result has its call.

    A request that breaks this rule is rejected by OpenAI and Anthropic alike, so
    the builder checks its output before returning it.
    """
    pending: dict[str, int] = {}
    for index, m in enumerate(messages):
        if m.role == "tool":
            if m.tool_call_id not in pending:
                raise InvalidHistory(
                    f"tool result for call {m.tool_call_id!r} has no assistant call before it",
                    index=index,
                )
            del pending[m.tool_call_id]
            continue
        if pending:
            call_id, at = next(iter(pending.items()))
            raise InvalidHistory(f"tool call {call_id!r} is never answered", index=at)
        if m.role == "assistant":
            for call_id in m.tool_call_ids:
                pending[call_id] = index
    if pending:
        call_id, at = next(iter(pending.items()))
        raise InvalidHistory(f"tool call {call_id!r} is never answered", index=at)
