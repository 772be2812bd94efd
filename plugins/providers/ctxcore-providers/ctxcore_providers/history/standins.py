"""The fast path's stand-ins: stored items whose message (or id) is made when the item is first read.

Taken only for a run of more than :data:`FAST_RUN` new items (a cold build of a
long history), where converting every item and computing every id would be most
of the build although a budget keeps the newest few. Each stand-in is a
:class:`~ctxcore.model.structure.StructureItem` whose fields equal those of the
message it becomes, and the history's first layer (``History._derive``) turns
it into exactly the message the reference path makes for the item (a
hypothesis property in tests/test_history_paths.py holds the two paths equal).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cached_property
from operator import attrgetter, itemgetter
from typing import Any

from ctxcore import Message, ToolCall
from ctxcore.kit import plain_fields, plain_message
from ctxcore_providers.history.ids import fields_id, stable_id, sub_id

#: More new items than this take the fast path (stand-ins, ids made when read); fewer take the reference path.
FAST_RUN = 1000


class Stored(tuple):  # type: ignore[type-arg]
    """A plain stored chat dict, read once: its structural fields now, its :class:`Message` when it is read.

    The fields, by position (this module is the only place that knows the
    order): the state key, the provider's ``{item index: content}`` store,
    the item's index, the role (the interned name), name, tool_call_id, the calls as one
    flat ``(id, name, arguments, ...)`` tuple, the role's default trust and
    zone, and whether it requests calls. A tuple subclass whose fields are
    read by C-level getters, because a cold build makes one per stored dict and
    a class with a Python ``__init__`` cost about twice as much; the content
    lives in the store, not in the tuple, so the collector's pass over the new
    stand-ins does not read every text. Invariant: the fields were read from a
    dict that passed :func:`~ctxcore.model.plain.plain_fields`, so its
    message can be built later without a check, and a later in-place edit of
    the dict does not reach it.
    """

    # No __slots__: an instance's __dict__ (made only when needed) holds its id once read and the store a rebuild
    # gave it (History._rehome).
    _store: dict[int, str] | None = None  # the store a rebuild gave this stand-in, on its instance (else ``store``)
    key: str
    store: dict[int, str]
    index: int  # type: ignore[assignment]  # shadows tuple.index
    role: str
    name: str | None
    tool_call_id: str | None
    calls: tuple[str, ...]
    trust: str
    zone: str
    has_tool_calls: bool

    priority = 0
    source = None
    has_provider_blocks = False  # a plain dict's content is a string or null
    # A stand-in is one stored item: equal only to itself (a tuple compares by value, and its store is big).
    __eq__ = object.__eq__
    __ne__ = object.__ne__
    __hash__ = object.__hash__

    @property
    def content(self) -> str | None:
        """The dict's content as it was stored."""
        store = self._store
        return (self.store if store is None else store).get(self.index)

    @property
    def tool_call_ids(self) -> tuple[str, ...]:
        """The ids of the calls the dict requests."""
        return self.calls[0::3]

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        """The calls the dict requests, as the message holds them (made on each read: walks read ``has_tool_calls``)."""
        return plain_message("", self.role, None, None, None, self.calls).tool_calls

    @property
    def metadata(self) -> dict[str, Any]:
        """A plain dict's message has no metadata."""
        return {}

    @cached_property
    def id(self) -> str:
        """The dict's id (:func:`~ctxcore_providers.history.ids.fields_id`), made when first read and kept on the instance.

        Kept in the instance's ``__dict__`` (made only for the few stand-ins whose id a build reads).
        """
        return fields_id(self.key, self.index, self.role, self.content, self.name, self.tool_call_id, self.calls)

    def message(self, content: str | None = None, metadata: dict[str, Any] | None = None) -> Message:
        """The dict's message, with ``content`` (default: the dict's) and ``metadata`` set in the same step."""
        return plain_message(self.id, self.role, self.content if content is None else content, self.name,
                             self.tool_call_id, self.calls, metadata)

    def __repr__(self) -> str:
        return f"Stored({self.key}[{self.index}], {self.role})"


for _k, _field in enumerate(("key", "store", "index", "role", "name", "tool_call_id", "calls", "trust", "zone",
                             "has_tool_calls")):
    setattr(Stored, _field, property(itemgetter(_k)))  # itemgetter is C-level: no Python frame per read
del _k, _field


def stand_in_run(items: Sequence[Any], i: int, append: Callable[[Any], Any], contents: dict[int, str], key: str) -> int:
    """Append a :class:`Stored` for each plain chat dict from ``items[i]`` on; returns the index of the first other item.

    Plain is :func:`~ctxcore.model.plain.plain_fields`, the one check the
    validating path is held equal to; the content goes to ``contents``.
    """
    check, make, n = plain_fields, Stored, len(items)
    while i < n:
        item = items[i]
        fields = check(item)
        if fields is None:
            return i
        defaults, name, call_id, calls = fields
        content = item["content"]
        if content is not None:
            contents[i] = content
        append(make((key, contents, i, defaults[3], name, call_id, calls, defaults[0], defaults[1], bool(calls))))
        i += 1
    return i


class Pending:
    """A converted Anthropic, Responses or content-part item's message whose id is made when first asked for.

    The id of such an item dumps the whole dict as JSON (most of a cold build's
    cost for those forms) and a build reads the ids of the few messages it
    keeps. ``material`` is a JSON copy of the dict as it was stored, so the id
    is the one the dict had then, whatever happens to it later. Invariant: the
    first layer gives ``message.model_copy(update={"id": self.id})``, exactly
    the reference path's message.
    """

    __slots__ = ("message", "material", "key", "index", "sub", "_id")

    def __init__(self, message: Message, material: Any, key: str, index: int, sub: int) -> None:
        self.message, self.material, self.key, self.index, self.sub = message, material, key, index, sub
        self._id: str | None = None

    @property
    def id(self) -> str:
        """The id of the stored dict (``.<k>`` for the item's ``k``-th message after the first), kept once made."""
        made = self._id
        if made is None:
            made = self._id = sub_id(stable_id(self.key, self.index, self.material), self.sub)
        return made

    @property
    def has_tool_calls(self) -> bool:
        """Whether the message requests tool calls."""
        return bool(self.message.tool_calls)

    @property
    def has_provider_blocks(self) -> bool:
        """Whether the message's content holds a provider block."""
        return self.message.has_provider_blocks

    role: str
    zone: str
    trust: str
    priority: int
    source: str | None
    tool_call_id: str | None
    tool_calls: tuple[ToolCall, ...]
    tool_call_ids: tuple[str, ...]
    metadata: dict[str, Any]
    content: Any

    def __repr__(self) -> str:
        return f"Pending({self.key}[{self.index}].{self.sub}, {self.message.role})"


for _field in ("role", "zone", "trust", "priority", "source", "tool_call_id", "tool_calls", "tool_call_ids", "metadata",
               "content"):
    setattr(Pending, _field, property(attrgetter(f"message.{_field}")))
del _field


class IdsBefore:
    """The ids of the first ``length`` stored messages, without making a stand-in's id.

    An eagerly converted message's id is in the id -> first position map
    (``positions``; entries never change, so a snapshot's ids stay its own).
    A :class:`Stored` id names its position, so a lookup parses it and compares
    with that one stand-in's id; a :class:`Pending` one is found by its item
    index (``firsts``): one id made per lookup, not one per stored message.
    """

    __slots__ = ("positions", "length", "raw", "prefix", "firsts")

    def __init__(self, positions: dict[str, int], length: int, raw: list[Any], key: str, firsts: dict[int, int]) -> None:
        self.positions, self.length, self.raw, self.prefix, self.firsts = positions, length, raw, f"{key}:", firsts

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, str):
            return False
        at = self.positions.get(key)
        if at is not None:
            return at < self.length
        index, end = self._position(key)
        if index < 0:
            return False
        if index < self.length:
            m = self.raw[index]
            if type(m) is Stored and m.index == index:
                return m.id == key
        return self._pending(key, index, end)

    def _position(self, key: str) -> tuple[int, int]:
        """The item index an id of this history names, and where its index ends; ``(-1, -1)`` for another id."""
        prefix = self.prefix
        end = key.find(":", len(prefix))
        digits = key[len(prefix):end]
        if not key.startswith(prefix) or end < 0 or not digits.isdigit() or not digits.isascii():
            return -1, -1
        return int(digits), end

    def _pending(self, key: str, index: int, end: int) -> bool:
        """Whether ``key`` is the id of a :class:`Pending` message of item ``index`` (``"...:<crc>[.<k>]"``)."""
        first = self.firsts.get(index)
        if first is None:
            return False
        dot = key.find(".", end)
        sub = key[dot + 1:] if dot >= 0 else "0"
        if not sub.isdigit() or not sub.isascii():
            return False
        at = first + int(sub)
        if at >= self.length:
            return False
        m = self.raw[at]
        return type(m) is Pending and m.index == index and m.id == key
