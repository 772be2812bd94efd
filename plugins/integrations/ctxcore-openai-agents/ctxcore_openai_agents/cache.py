"""A per-item conversion cache: each run of items is converted to a message once.

The runner hands the filter a fresh list of fresh dicts every model call (it
copies each item every turn), so object identity cannot be the key. Two paths:

- **Growth** (every next turn of a run): the new list is the last call's items,
  perhaps without some oldest ones (a session ``limit``), plus new items. This is
  proven with one C-level list comparison against shallow copies of the last
  call's items (their values are the same string objects, so it compares
  pointers, not text; a value reassigned in place differs), and
  the newest :data:`GUARD` reused messages' items are compared with the private
  JSON copies kept in each message (``metadata["openai_agents_items"]``), so an
  item edited in place there is noticed. Only the new items are converted.
- **Anything else** (an item inserted or replaced in the middle, another
  conversation): every item is keyed by its content — a flat item by its
  ``(key, value)`` pairs, one with nested parts by its JSON text — and only
  items whose key was not seen in the last call are converted.

Not noticed, as with ctxcore's ``history`` provider: an item *older than the
newest* :data:`GUARD` *messages* whose nested parts (a ``content`` list) were
edited in place between two calls; give such an item a new list. Memory is bounded by the history: only the last call's items and
messages are kept.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

from ctxcore import Message
from ctxcore_openai_agents.converters import ITEMS_KEY, group_items, is_assistant_side, message_from_group, plain_item

__all__ = ["GUARD", "ConversionCache"]

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
        # shallow copies of the last call's items: a value the runner reassigns in place differs from them
        self._items: list[Any] = []
        self._messages: list[Message] = []
        self._spans: list[Span] = []
        #: conversions done by the last call (misses), and whether it took the growth path; for tests and benchmarks.
        self.last_misses = 0
        self.last_path = "cold"

    def __len__(self) -> int:
        return len(self._messages)

    def convert(self, items: Sequence[Any]) -> tuple[list[Message], list[Span]]:
        """The messages of ``items`` and, for each, the ``(start, end)`` span of the items it was made from.

        Raises:
            UnsupportedItem: an item the converters do not take (``.index`` names it).
        """
        items = list(items)
        with self._lock:
            grown = self._grown(items)
            if grown is not None:
                messages, spans, misses, copies = grown
                self.last_path = "growth"
            else:
                messages, spans, misses = self._keyed(items)
                copies = _copies(items)
                self.last_path = "keyed"
            self._items, self._messages, self._spans, self.last_misses = copies, messages, spans, misses
            return list(messages), list(spans)

    # ------------------------------------------------------------ growth
    def _grown(self, items: list[Any]) -> tuple[list[Message], list[Span], int, list[Any]] | None:
        old = self._items
        if not old or not items:
            return None
        off = _offset(old, items[0], self._spans)
        if off is None:
            return None
        shared = len(old) - off
        if len(items) < shared or items[:shared] != old[off:]:
            return None
        # reuse the old groups that start at or after the offset (slices: no per-message work);
        # the last one is redone when the new items continue it (its calls arriving after its text)
        first = 0 if off == 0 else next(k for k, (s, _) in enumerate(self._spans) if s == off)
        keep = len(self._spans) - first
        if keep and len(items) > shared and is_assistant_side(_plain(items[shared])) and _assistant(self._messages[-1]):
            keep -= 1
        messages = self._messages[first:first + keep]
        spans = self._spans[first:first + keep] if off == 0 else [(s - off, e - off) for s, e in self._spans[first:first + keep]]
        restart = spans[-1][1] if spans else 0
        for m, (s, e) in zip(messages[-GUARD:], spans[-GUARD:], strict=True):
            if [dict(_plain(i)) for i in items[s:e]] != m.metadata.get(ITEMS_KEY):
                return None  # edited in place since it was converted
        tail, tail_spans, misses = _convert(items, restart, {})
        return messages + tail, spans + tail_spans, misses, old[off:] + _copies(items[shared:])

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


def _copies(items: Sequence[Any]) -> list[Any]:
    return [dict(i) if isinstance(i, Mapping) else i for i in items]


def _offset(old: list[Any], first: Any, spans: list[Span]) -> int | None:
    """Where ``first`` (the new list's first item) starts a group of the old list; ``None`` when nowhere."""
    if old[0] == first:
        return 0
    for s, _ in spans:
        if old[s] == first:
            return s
    return None


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
