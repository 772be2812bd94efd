"""A per-item conversion cache: each run of items is converted to a message once.

The runner hands the filter a fresh list of fresh dicts every model call (it
rebuilds every dict and list of every item each turn, sharing only the strings),
so object identity cannot be the key. Two paths:

- **Growth** (every next turn of a run): the new list is the last call's items,
  perhaps without some oldest ones (a session ``limit``), plus new items. The
  cache checks that the new list's first item starts one of the last call's
  messages, that the list is long enough, and compares the items of the newest
  :data:`GUARD` reused messages in full with the private JSON copies kept in
  each message (``metadata["openai_agents_items"]``); then it reuses the
  conversions and converts only the new items. The items in between are *not*
  read: that is what makes a warm turn cost about the window, not the history.
- **Anything else** (an item inserted, removed or replaced near the end,
  another conversation): every item is keyed by its content — a flat item by
  its ``(key, value)`` pairs, one with nested parts by its JSON text — and only
  items whose key was not seen in the last call are converted.

Why not an exact proof of every item: any proof must read each of the runner's
fresh dicts, and one C-level pass reading one key of each item of a
2,000-message history (2,962 items) already costs about half of ctxcore's build
(bench/integration_openai_agents.py; a full comparison of the lists costs about
three builds), so the cache trusts
the runner's growth and checks what is sent instead: :func:`unchanged`
compares the items of every window message with the copies it was converted
from, and :class:`~ctxcore_openai_agents.ContextFilter` converts anew and builds
again when one differs. So the model never receives an item other than the one
ctxcore counted.

Not noticed (a documented limit, docs/integrations.md): an item older than the
newest :data:`GUARD` messages that was replaced or edited in place without
changing how many items the history has, while the window does not keep it;
the build then counts its old conversion among the dropped messages (the report
and a summarizing filter see the old text). Memory is bounded by the history:
only the last call's messages are kept.
"""

from __future__ import annotations

import json
import threading
from array import array
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

from ctxcore import Message
from ctxcore_openai_agents.converters import (
    ITEMS_KEY,
    group_items,
    is_assistant_side,
    json_copy,
    message_from_group,
    plain_item,
)
from ctxcore_openai_agents.errors import UnsupportedItem

__all__ = ["GUARD", "ConversionCache", "unchanged"]

#: how many of the newest reused messages have their items compared with the private copies on the growth path.
GUARD = 8

Span = tuple[int, int]


class ConversionCache:
    """Convert Responses input items to ctxcore messages, reusing the conversions of the last call.

    Safe to share between threads (one lock). Unrelated conversations through
    one cache take the keyed path and evict each other's entries.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._messages: list[Message] = []
        # message k was made from items[bounds[k]:bounds[k + 1]]: an array, so a slice copies memory, not objects
        self._bounds = array("q", [0])
        #: conversions done by the last call (misses), and whether it took the growth path; for tests and benchmarks.
        self.last_misses = 0
        self.last_path = "cold"

    def __len__(self) -> int:
        return len(self._messages)

    def convert(self, items: Sequence[Any], *, exact: bool = False) -> tuple[list[Message], list[Span]]:
        """The messages of ``items`` and, for each, the ``(start, end)`` span of the items it was made from.

        ``exact=True`` skips the growth path: every item is compared by its
        content key (slower; the filter's way when a window item changed, see :func:`unchanged`).

        Raises:
            UnsupportedItem: an item the converters do not take (``.index`` names it).
        """
        messages, bounds = self.convert_bounds(items, exact=exact)
        return messages, list(zip(bounds[:-1], bounds[1:], strict=True))

    def convert_bounds(self, items: Sequence[Any], *, exact: bool = False) -> tuple[list[Message], array[int]]:
        """:meth:`convert` with the spans as bounds: message ``k`` is ``items[bounds[k]:bounds[k + 1]]`` (the filter's form).

        The lists are new every call and kept by the cache: do not change them.
        """
        items = items if isinstance(items, list) else list(items)  # read, never kept
        with self._lock:
            grown = None if exact else self._grown(items)
            if grown is not None:
                messages, bounds, misses = grown
                self.last_path = "growth"
            else:
                messages, spans, misses = self._keyed(items)
                bounds = array("q", [0])
                bounds.extend(e for _, e in spans)
                self.last_path = "keyed"
            self._messages, self._bounds, self.last_misses = messages, bounds, misses
            return messages, bounds

    # ------------------------------------------------------------ growth
    def _grown(self, items: list[Any]) -> tuple[list[Message], array[int], int] | None:
        if not self._messages or not items:
            return None
        first = self._start_of(_plain(items[0]))
        if first is None:
            return None
        bounds = self._bounds
        off = bounds[first]
        shared = bounds[-1] - off
        if len(items) < shared:
            return None
        # reuse the old groups from the offset on (slices: no per-message work);
        # the last one is redone when the new items continue it (its calls arriving after its text)
        keep = len(self._messages) - first
        if keep and len(items) > shared and is_assistant_side(_plain(items[shared])) and _assistant(self._messages[-1]):
            keep -= 1
        end = first + keep
        for k in range(max(first, end - GUARD), end):
            if not _same(items[bounds[k] - off:bounds[k + 1] - off], self._messages[k].metadata.get(ITEMS_KEY)):
                return None  # changed since it was converted (in place, replaced, or the list shifted)
        restart = bounds[end] - off
        tail, tail_spans, misses = _convert(items, restart, {})
        messages = self._messages[first:end]
        messages.extend(tail)
        kept = bounds[first:end + 1] if off == 0 else array("q", [b - off for b in bounds[first:end + 1]])
        kept.extend(e for _, e in tail_spans)
        return messages, kept, misses

    def _start_of(self, item: Mapping[str, Any]) -> int | None:
        """The index of the last call's message whose first item equals ``item``; ``None`` when none does."""
        for k, m in enumerate(self._messages):
            stash = m.metadata.get(ITEMS_KEY)
            if stash and stash[0] == item:
                return k
        return None

    # ------------------------------------------------------------ keyed
    def _keyed(self, items: list[Any]) -> tuple[list[Message], list[Span], int]:
        entries: dict[Hashable, list[Message]] = {}
        for m in self._messages:  # keyed by the private copies: what the item was when converted
            stash = m.metadata[ITEMS_KEY]
            entries.setdefault(_group_key(stash, 0, len(stash)), []).append(m)
        return _convert(items, 0, entries)


def _convert(items: list[Any], start: int, entries: Mapping[Hashable, list[Message]]
             ) -> tuple[list[Message], list[Span], int]:
    """Convert ``items[start:]``, reusing ``entries`` (content key -> messages, by occurrence)."""
    plain = [plain_item(item, start + i) for i, item in enumerate(items[start:])]
    messages: list[Message] = []
    spans: list[Span] = []
    used: dict[Hashable, int] = {}
    misses = 0
    for s, e in group_items(plain):
        message = None
        if entries:
            key = _group_key(plain, s, e)
            n = used.get(key, 0)
            earlier = entries.get(key)
            if earlier is not None and n < len(earlier):
                message = earlier[n]
            used[key] = n + 1
        if message is None:
            message = message_from_group(plain[s:e], start + s)
            misses += 1
        messages.append(message)
        spans.append((start + s, start + e))
    return messages, spans, misses


def unchanged(items: Sequence[Any], message: Message) -> bool:
    """Whether ``items`` are exactly the items ``message`` was converted from (its private copies).

    One C-level comparison (dicts and lists compared by value; the runner's
    strings are the very objects of the copies, so they compare by pointer).
    The filter checks every window message with it before sending.
    """
    return _same(items, message.metadata.get(ITEMS_KEY))


def _same(items: Sequence[Any], stash: Any) -> bool:
    """Whether ``items`` are the JSON values ``stash`` holds (C-level first; normalised only when that fails)."""
    if items == stash:
        return True
    try:
        return [json_copy(plain_item(i)) for i in items] == stash
    except (TypeError, UnsupportedItem):
        return False


def _assistant(m: Message) -> bool:
    return m.role == "assistant"


def _plain(item: Any) -> Mapping[str, Any]:
    return item if isinstance(item, Mapping) else plain_item(item)


def _group_key(items: Sequence[Any], start: int, end: int) -> Hashable:
    if end - start == 1:
        return _key(_plain(items[start]))
    return tuple(_key(_plain(items[i])) for i in range(start, end))


def _key(item: Mapping[str, Any]) -> Hashable:
    pairs = tuple(item.items())
    try:
        hash(pairs)
    except TypeError:  # nested parts: lists are not hashable
        return json.dumps(item, ensure_ascii=False, sort_keys=True, default=repr)
    return pairs
