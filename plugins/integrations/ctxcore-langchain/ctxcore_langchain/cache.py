"""The per-message conversion cache: each LangChain message is converted to ctxcore once.

An agent's history only grows between model calls, so a turn should cost the new
messages, not the history. :class:`ConversionCache` proves growth the way
ctxcore's ``history`` provider does:

- the same prefix: the incoming list's first ``n`` items are the ``n`` seen last
  time, the very objects, checked by pointer at C level (within one agent run
  LangGraph hands the same message objects on);
- a guard on the last :data:`GUARD` items seen: each still has the content and
  tool-call objects (and lengths) it had when converted, which catches an
  in-place edit there (``msg.content = ...``, ``msg.content.append(...)``);
- then only the new tail is converted, and the ctxcore list returned is the same
  list object, grown, so the ``history`` provider's own fast path applies.

A history loaded again (a LangGraph checkpointer hands every turn freshly
deserialized objects) fails the pointer compare; then the prefix is compared by
value: the same classes and equal ``__dict__`` (every field; C-level compares,
no pydantic ``__eq__`` call), which proves it unchanged, so the conversions are
kept, the same ctxcore list grows, and only the new messages are converted (the
compare reads the whole history: at 2,000 messages far less than converting it
again, but many times the build; see docs/performance.md).

Anything else (an edited, removed or reordered message) falls back to a
per-message lookup: by the LangChain message
``id`` (or the object, when it has none), hit when the entry's message is the
same object with an unchanged guard or compares equal. Entries of messages no
longer in the history are dropped then, so memory is bounded by the history.

Not noticed: an in-place edit of a message older than the last eight that keeps
its content object (``msg.content[0]["text"] = ...`` deep in the history).
Replace the message (a new object) for such an edit.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import repeat
from operator import is_
from typing import Any

from langchain_core.messages import BaseMessage

from ctxcore import Message
from ctxcore_langchain.converters import LANGCHAIN_KEY, message_from_langchain, message_to_langchain

__all__ = ["GUARD", "ConversionCache"]

#: How many of the newest messages are checked for in-place edits on every turn.
GUARD = 8


def _signature(message: BaseMessage) -> tuple[Any, ...]:
    """What an in-place edit changes: the content and tool-call objects (by identity) and their lengths."""
    content = message.content
    calls = getattr(message, "tool_calls", None)
    return (content, len(content), calls, len(calls) if calls is not None else 0)


def _same(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    return a[0] is b[0] and a[1] == b[1] and a[2] is b[2] and a[3] == b[3]


def _reads_as(m: Message, original: Message) -> bool:
    """Whether ``m`` (same ctxcore id as ``original``) reads as ``original``: content and calls the same objects."""
    return (m.content is original.content and m.tool_calls is original.tool_calls and m.role == original.role
            and m.name == original.name and m.tool_call_id == original.tool_call_id)


class ConversionCache:
    """Converts a LangChain history to ctxcore messages, reusing earlier conversions.

    Args:
        count_reasoning: count an assistant message's reasoning and thinking as sent
            (see :func:`~ctxcore_langchain.from_langchain`).
        provenance: given to every message converted (``source``, ``priority``...).
    """

    def __init__(self, *, count_reasoning: bool = True, **provenance: Any) -> None:
        self.count_reasoning = count_reasoning
        self.provenance = provenance
        self._seen: list[BaseMessage] = []  # the LangChain messages of the last call, by reference
        self._converted: list[Message] = []  # their conversions, in order (handed to the build)
        self._signatures: list[tuple[Any, ...]] = []
        # key (LangChain id, or id() of a message without one) -> (message, signature, conversion)
        self._entries: dict[Any, tuple[BaseMessage, tuple[Any, ...], Message]] = {}
        # ctxcore message id -> (conversion, LangChain message): the way back for unchanged messages
        self._back: dict[str, tuple[Message, BaseMessage]] = {}
        # id() of a conversion held in ``_converted`` or of a message held in ``_memo`` -> its LangChain
        # message: the C-level way back
        self._lookup: dict[int, BaseMessage] = {}
        # id() -> window message the pipeline derived or made, kept alive while its id() is a key of _lookup
        self._memo: dict[int, Message] = {}
        # id() of a conversion -> (it, its variant with the reasoning uncounted): see ``current_turn_reasoning``
        self._uncounted: dict[int, tuple[Message, Message]] = {}
        self.conversions = 0  # messages converted so far (a test and bench counter)

    def convert(self, messages: Sequence[BaseMessage]) -> list[Message]:
        """The ctxcore messages of ``messages``; treat the list returned as read-only.

        Raises:
            ValueError: a message ctxcore cannot represent (names its index).
        """
        n = len(self._seen)
        if n and len(messages) >= n and (self._grew(messages, n) or self._reloaded(messages, n)):
            for index in range(n, len(messages)):
                self._append(index, messages[index], None)
        else:
            self._rebuild(messages)
        return self._converted

    def to_langchain(self, messages: Sequence[Message],
                     known: Sequence[tuple[Message, BaseMessage]] = ()) -> list[BaseMessage]:
        """The LangChain messages of a built window: the original object for every message the build left unchanged.

        ctxcore messages are frozen, so a window message that *is* (by identity) a
        conversion this cache holds maps straight back to its LangChain message: one
        C-level dict lookup per message, by ``id()``, safe because the cache keeps every
        object it keys alive (an ``id()`` names one live object). ``known`` adds pairs
        the caller has (the agent's system prompt and its ``SystemMessage``). A message
        the build derived from a conversion (same ctxcore id, same content and calls:
        the ``history`` provider's annotated copy) maps back to the original too; one a
        filter changed or the pipeline made is converted. Both are remembered by
        identity for the next call, for as long as they keep coming back: the memo is
        cut to the current window when it outgrows it, so memory stays bounded.
        """
        lookup, memo = self._lookup, self._memo
        for m, given in known:
            if lookup.get(id(m)) is not given:
                lookup[id(m)] = given
                memo[id(m)] = m
        out: list[BaseMessage | None] = list(map(lookup.get, map(id, messages)))
        if any(map(is_, out, repeat(None))):  # not ``None in out``: that calls BaseMessage.__eq__ on each
            back = self._back
            for index, found in enumerate(out):
                if found is not None:
                    continue
                m = messages[index]
                hit = back.get(m.id)
                lc = hit[1] if hit is not None and self._derived(m, hit[0]) else message_to_langchain(m)
                out[index] = lookup[id(m)] = lc
                memo[id(m)] = m
        if len(memo) > 2 * len(messages) + 16:
            current = set(map(id, messages))
            for key in [k for k in memo if k not in current]:
                del memo[key], lookup[key]
        return out  # type: ignore[return-value]  # no None left

    def _derived(self, m: Message, conversion: Message) -> bool:
        """Whether ``m`` reads as ``conversion`` or as its variant with the reasoning uncounted."""
        if _reads_as(m, conversion):
            return True
        variant = self._uncounted.get(id(conversion))
        return variant is not None and variant[0] is conversion and _reads_as(m, variant[1])

    def current_turn_reasoning(self, converted: list[Message]) -> list[Message]:
        """``converted`` with the reasoning of assistant messages before the last user message uncounted.

        For providers that strip earlier turns' reasoning from the context (Anthropic before Claude
        Opus 4.5, OpenAI's Responses API by default). Each variant is made once and maps back to the
        framework's message, which still sends its reasoning. Gives ``converted`` itself when no
        earlier message has counted reasoning.
        """
        last = next((i for i in range(len(converted) - 1, -1, -1) if converted[i].role == "user"), 0)
        out: list[Message] | None = None
        for index in range(last):
            m = converted[index]
            if m.role != "assistant" or not any(it[2] for it in m.metadata[LANGCHAIN_KEY].get("reasoning") or ()):
                continue
            known = self._uncounted.get(id(m))
            original = self._lookup[id(m)]
            if known is None or known[0] is not m:
                variant = message_from_langchain(original, count_reasoning=False, id=m.id, **self.provenance)
                known = self._uncounted[id(m)] = (m, variant)
            self._lookup[id(known[1])], self._memo[id(known[1])] = original, known[1]
            out = out if out is not None else list(converted)
            out[index] = known[1]
        return out if out is not None else converted

    def __len__(self) -> int:
        return len(self._entries)

    # ---------------------------------------------------------------- internals
    def _grew(self, messages: Sequence[BaseMessage], n: int) -> bool:
        """Whether ``messages`` starts with the very objects of the last call, the newest unedited (pointer compares)."""
        if not all(map(is_, messages[:n], self._seen)):  # not ``!=``: that calls the pydantic __eq__ of each message
            return False
        seen, signatures = self._seen, self._signatures
        for index in range(max(0, n - GUARD), n):
            if messages[index] is not seen[index] or not _same(_signature(messages[index]), signatures[index]):
                return False
        return True

    def _reloaded(self, messages: Sequence[BaseMessage], n: int) -> bool:
        """Whether ``messages`` starts with messages *equal* to the last call's (a checkpointer loaded them again).

        Only when every object is new (a kept object may have been edited in place, which a compare with
        itself cannot see). Equal is every field the same (class and ``__dict__``, compared at C level, so a message replaced under its
        id by LangGraph's ``add_messages`` is noticed anywhere in the history). Then the conversions are kept, and
        the new objects take the old ones' place (the way back gives the framework its new objects).
        """
        prefix = list(messages[:n])
        seen = self._seen
        if any(map(is_, prefix, seen)):  # not all loaded again: one may be an edited old object (the guard said so)
            return False
        if list(map(type, prefix)) != list(map(type, seen)) or list(map(vars, prefix)) != list(map(vars, seen)):
            return False
        self._seen = prefix
        self._lookup.update(zip(map(id, self._converted), prefix, strict=True))
        self._signatures[max(0, n - GUARD):] = map(_signature, prefix[max(0, n - GUARD):])
        return True

    def _append(self, index: int, message: BaseMessage, old: dict[Any, Any] | None) -> None:
        key = message.id if message.id is not None else id(message)
        signature = _signature(message)
        entry = (old if old is not None else self._entries).get(key)
        if entry is not None and (entry[0] is message and _same(entry[1], signature)
                                  or entry[0] is not message and entry[0] == message):
            converted = entry[2]
        else:
            # The LangChain id names the ctxcore message too (stable across processes, and no uuid4 to
            # draw); a duplicate within this history gets a fresh id.
            named = {"id": f"lc-{message.id}"} if message.id is not None and key not in self._entries else {}
            try:
                converted = message_from_langchain(message, count_reasoning=self.count_reasoning, **named,
                                                   **self.provenance)
            except ValueError as exc:
                raise ValueError(f"message {index}: {exc}") from None
            self.conversions += 1
        self._entries[key] = (message, signature, converted)
        self._back[converted.id] = (converted, message)
        self._lookup[id(converted)] = message
        self._seen.append(message)
        self._signatures.append(signature)
        self._converted.append(converted)

    def _rebuild(self, messages: Sequence[BaseMessage]) -> None:
        """Start over from ``messages``, reusing entries that still match; drop the rest."""
        old = self._entries
        self._entries, self._back, self._lookup, self._memo, self._uncounted = {}, {}, {}, {}, {}
        self._seen, self._signatures, self._converted = [], [], []
        for index, message in enumerate(messages):
            self._append(index, message, old)
