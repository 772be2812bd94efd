"""The structure contract: what a whole-history walk may read from a stored item without making its message.

A long history reaches the filters as a lazy sequence whose ``structure`` holds
the stored items: :class:`~ctxcore.model.messages.Message` objects or a
provider's light stand-ins for them (the ``history`` provider keeps a plain chat
dict that way until it is read). Legality, unit grouping and the budget's shape
read only the fields of :class:`StructureItem`, so they never make a message
they do not keep; everything else (text, call names) comes from indexing the
lazy sequence, which gives messages only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ctxcore.model.messages import Message

__all__ = ["StructureItem", "structure_of"]


class StructureItem(Protocol):
    """A stored history item as a walk reads it: a :class:`Message` or a stand-in for one.

    Invariant: every field equals the same field of the message the item
    becomes when it is read (``has_tool_calls`` is ``bool(message.tool_calls)``,
    ``has_provider_blocks`` whether its content holds a provider block), so a
    walk over items decides exactly what a walk over messages would. The flags
    let a walk skip an item without reading its content (a stand-in's content
    is a lookup; a plain chat dict's never holds a block).
    Identity is stable across builds, as for a message.
    """

    @property
    def id(self) -> str: ...
    @property
    def role(self) -> str: ...
    @property
    def zone(self) -> str: ...
    @property
    def trust(self) -> str: ...
    @property
    def priority(self) -> int: ...
    @property
    def content(self) -> Any: ...
    @property
    def tool_call_id(self) -> str | None: ...
    @property
    def tool_call_ids(self) -> tuple[str, ...]: ...
    @property
    def has_tool_calls(self) -> bool: ...
    @property
    def has_provider_blocks(self) -> bool: ...
    @property
    def metadata(self) -> dict[str, Any]: ...


def structure_of(messages: Sequence[Message]) -> Sequence[Message]:
    """What to read ids, roles, zones, priorities and tool-call ids from, without transforming anything.

    A lazy sequence's ``structure`` (its stored items, each a
    :class:`StructureItem`), else ``messages`` itself. Typed as messages
    because a :class:`Message` is the structure item every caller may also
    hand in; code reading the result relies on :class:`StructureItem`'s
    fields only.
    """
    if type(messages) is list:
        return messages
    structure = getattr(messages, "structure", None)
    return structure if isinstance(structure, Sequence) else messages
