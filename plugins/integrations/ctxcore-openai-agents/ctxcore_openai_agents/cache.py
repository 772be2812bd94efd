"""A per-item conversion cache: each run of items is converted to a message once.

The runner hands the filter a fresh list of fresh dicts every model call (it
re-dumps its items each turn), so identity cannot be the key. The key is the
items' content: a flat item (every value a string, number or ``None`` — calls,
results with text output, text messages) is keyed by the tuple of its
``(key, value)`` pairs, which costs a tuple and the strings' hashes; an item
with nested parts (output messages, part lists) by its JSON text. An item
edited in place therefore has another key and is converted again: the cache can
never hand back a message for content the item no longer has.

Memory is bounded by the history: after each call only the entries of the
items in that call are kept, so a dropped or edited item's conversion goes.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

from ctxcore import Message
from ctxcore_openai_agents.converters import group_items, message_from_group, plain_item

__all__ = ["ConversionCache"]


class ConversionCache:
    """Convert Responses input items to ctxcore messages, reusing the conversions of items seen in the last call.

    Safe to share between threads (one lock); runs of unrelated conversations
    through one cache evict each other's entries (each call keeps only its own).
    """

    def __init__(self) -> None:
        # Equal items (the user saying "ok" twice) get one message each, by occurrence.
        self._entries: dict[Hashable, list[Message]] = {}
        self._lock = threading.Lock()
        #: conversions done by the last call (misses), for tests and benchmarks.
        self.last_misses = 0

    def __len__(self) -> int:
        return len(self._entries)

    def convert(self, items: Sequence[Any]) -> tuple[list[Message], list[tuple[int, int]]]:
        """The messages of ``items`` and, for each, the ``(start, end)`` span of the items it was made from.

        Raises:
            UnsupportedItem: an item the converters do not take (``.index`` names it).
        """
        plain = [plain_item(item, i) for i, item in enumerate(items)]
        spans = group_items(plain)
        with self._lock:
            old = self._entries
            kept: dict[Hashable, list[Message]] = {}
            messages: list[Message] = []
            misses = 0
            for start, end in spans:
                key = tuple(_key(plain[i]) for i in range(start, end)) if end - start > 1 else _key(plain[start])
                seen = kept.setdefault(key, [])
                earlier = old.get(key)
                if earlier is not None and len(earlier) > len(seen):
                    message = earlier[len(seen)]
                else:
                    message = message_from_group(plain[start:end], start)
                    misses += 1
                seen.append(message)
                messages.append(message)
            self._entries = kept
            self.last_misses = misses
        return messages, spans


def _key(item: Mapping[str, Any]) -> Hashable:
    pairs = tuple(item.items())
    try:
        hash(pairs)
    except TypeError:  # nested parts: lists are not hashable
        return json.dumps(item, ensure_ascii=False, sort_keys=True, default=repr)
    return pairs
