"""Token budgets, the per-message count cache, and the context filters run in.

The count cache is why a build's cost follows what is kept: a message is
tokenized at most once per counter (keyed by counter identity and what the
model reads of the message, see :func:`count_key`), and the cache lives on the builder, so it survives across builds
of one conversation (a pipeline keeps its builder). Builders may also share one
:class:`CountCache`.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ctxcore.engine.protocols import TokenCounter
from ctxcore.model.messages import Message

if TYPE_CHECKING:  # pragma: no cover
    from ctxcore.engine.report import BuildReport

__all__ = ["ModelBudget", "CountCache", "CachedCounter", "FilterContext", "counter_identity", "count_key"]


@dataclass(frozen=True)
class ModelBudget:
    """The model's window and what must stay free for its reply.

    ``max_input_tokens`` is what a request may fill: the window minus the
    reserved output tokens minus a safety margin (headroom for a counter that
    is not the provider's own tokenizer). The builder further subtracts the
    tool schemas sent with the request before handing the rest to filters.
    """

    context_window: int
    reserve_output_tokens: int = 0
    safety_margin: int = 0
    #: most characters of message text (contents, tool-call names and arguments) a request may hold.
    max_input_chars: int | None = None
    #: most characters of the tool schemas (compact JSON) a request may carry.
    max_schema_chars: int | None = None

    def __post_init__(self) -> None:
        if self.context_window <= 0:
            raise ValueError("context_window must be positive")
        if self.reserve_output_tokens < 0 or self.safety_margin < 0:
            raise ValueError("reserve_output_tokens and safety_margin must be >= 0")
        for name in ("max_input_chars", "max_schema_chars"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                raise ValueError(f"{name} must be a whole number >= 0 or None, got {value!r}")
        if self.reserve_output_tokens + self.safety_margin >= self.context_window:
            raise ValueError("reserve_output_tokens plus safety_margin must be smaller than context_window")

    @property
    def max_input_tokens(self) -> int:
        """Tokens available for the request's input (messages, tool schemas, priming)."""
        return self.context_window - self.reserve_output_tokens - self.safety_margin


#: entries of a CachedCounter's identity memo before it starts over (it holds the messages alive).
OBJECT_MEMO = 50_000


def counter_identity(counter: Any) -> str:
    """The identity a counter's counts are cached under: its class and its ``name``.

    Counters put whatever configuration changes counts into ``name``
    (``tiktoken:o200k_base``, ``approximate:cl100k``), so two counters with the
    same class and name may share cached counts.
    """
    kind = type(counter)
    return f"{kind.__module__}.{kind.__qualname__}:{getattr(counter, 'name', '')}"


def count_key(message: Message) -> tuple[Any, ...]:
    """What a counter reads of ``message``, as an exact, hashable cache key.

    For text (or empty) content the key is the tuple of the strings themselves:
    role, content, name, tool_call_id and each call's id, name and arguments.
    Python caches a string's hash on the string, and equal keys built from the
    same strings compare by pointer, so keying costs a tuple, not a pass over
    the text (a content digest costs about a tenth of tokenizing it, which a
    full count of fresh messages would pay on top of the tokenizer). Block
    content (images, files) falls back to :attr:`Message.fingerprint`. The
    cache holds references to these strings, not copies: they are the
    history's own strings, kept alive at most until evicted.
    """
    content = message.content
    if content is None or isinstance(content, str):
        calls = message.tool_calls
        return (message.role, content, message.name, message.tool_call_id,
                tuple((c.id, c.name, c.arguments) for c in calls) if calls else ())
    return ("#fingerprint", message.fingerprint)


class CountCache:
    """A bounded LRU of message counts keyed by (counter identity, :func:`count_key`).

    One cache may serve several counters and several builders: the counter's
    identity is part of every key, so counts of different tokenizers never mix.
    """

    def __init__(self, max_entries: int = 200_000) -> None:
        if max_entries <= 0:
            raise ValueError("max_entries must be positive")
        self.max_entries = max_entries
        self._entries: OrderedDict[tuple[str, Any], int] = OrderedDict()
        self.evictions = 0

    def get(self, key: tuple[str, Any]) -> int | None:
        """The cached count for ``key`` (marked as recently used), or ``None``."""
        value = self._entries.get(key)
        if value is not None:
            self._entries.move_to_end(key)
        return value

    def peek(self, key: tuple[str, Any]) -> int | None:
        """The cached count for ``key`` without touching its recency."""
        return self._entries.get(key)

    def put(self, key: tuple[str, Any], value: int) -> None:
        """Store a count, evicting the least recently used entry past ``max_entries``."""
        self._entries[key] = value
        self._entries.move_to_end(key)
        if len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)
            self.evictions += 1

    def __len__(self) -> int:
        return len(self._entries)


class CachedCounter:
    """Wraps a :class:`TokenCounter` so each distinct message is tokenized once.

    Every counter gets this for free: the builder wraps whatever counter it is
    given. The contract this relies on: ``count_messages(ms) ==
    sum(count_message(m)) + count_messages([])`` (the reply priming). Keys are
    the counter's identity plus :func:`count_key` (what the model reads), so
    two messages with the same text and role share one count. By default the
    wrapper owns a private :class:`CountCache` bounded by ``max_entries``; pass
    ``cache=`` to share one cache between builders (for example one per
    process). ``hits`` and ``misses`` count this wrapper's lookups.
    """

    def __init__(self, counter: TokenCounter, max_entries: int = 200_000, *, cache: CountCache | None = None) -> None:
        self.counter = counter
        self.name: str = getattr(counter, "name", type(counter).__name__)
        self.identity = counter_identity(counter)
        self.cache = cache if cache is not None else CountCache(max_entries)
        self._priming: int | None = None
        self._tools: dict[str, int] = {}
        # id(message) -> (message, count): messages are immutable, so the same object always has
        # the same count; a build reads each kept message's count two or three times.
        self._by_object: dict[int, tuple[Message, int]] = {}
        self.hits = 0
        self.misses = 0

    @property
    def max_entries(self) -> int:
        """The bound of the underlying cache."""
        return self.cache.max_entries

    def count_text(self, text: str) -> int:
        """Tokens of a bare string (not cached: strings have no fingerprint)."""
        return self.counter.count_text(text)

    def count_message(self, message: Message) -> int:
        """Tokens of ``message``, from the cache when its content was seen before.

        The same object is answered from a small identity memo first (no key to
        build); it is cleared when it passes :data:`OBJECT_MEMO` entries.
        """
        seen = self._by_object.get(id(message))
        if seen is not None and seen[0] is message:
            self.hits += 1
            return seen[1]
        key = (self.identity, count_key(message))
        count = self.cache.get(key)
        if count is not None:
            self.hits += 1
        else:
            self.misses += 1
            count = self.counter.count_message(message)
            self.cache.put(key, count)
        if len(self._by_object) >= OBJECT_MEMO:
            self._by_object.clear()
        self._by_object[id(message)] = (message, count)
        return count

    def count_each(self, messages: Sequence[Message]) -> list[int]:
        """``[count_message(m) for m in messages]``, answering messages counted before without a call each.

        The builder's final count of a request: most of its messages were
        counted by a filter moments before (the identity memo answers them).
        """
        memo = self._by_object
        counts: list[int] = []
        known = 0
        for m in messages:
            seen = memo.get(id(m))
            if seen is not None and seen[0] is m:
                counts.append(seen[1])
                known += 1
            else:
                counts.append(self.count_message(m))
        self.hits += known
        return counts

    @property
    def priming(self) -> int:
        """Tokens every request costs beyond its messages (reply priming)."""
        if self._priming is None:
            self._priming = self.counter.count_messages([])
        return self._priming

    def count_messages(self, messages: Sequence[Message]) -> int:
        """Tokens of a request made of ``messages``."""
        return sum(self.count_message(m) for m in messages) + self.priming

    def count_tools(self, tools: Sequence[Mapping[str, Any]]) -> int:
        """Tokens of tool definitions (cached by their canonical JSON; tool lists rarely change)."""
        key = json.dumps(list(tools), sort_keys=True, default=str)
        count = self._tools.get(key)
        if count is None:
            if len(self._tools) >= 64:  # a handful of tool sets per builder; never unbounded
                self._tools.clear()
            count = self._tools[key] = self.counter.count_tools(tools)
        return count

    def peek(self, message: Message) -> int | None:
        """The cached count of ``message`` if known, without counting it."""
        return self.cache.peek((self.identity, count_key(message)))


@dataclass
class FilterContext:
    """What a filter gets besides the messages.

    Attributes:
        counter: the builder's caching counter; use it so counts are shared.
        budget: the input-token budget from the pipeline's model, or ``None``.
        runtime: runtime values passed to ``build`` (channel, user id...).
        report: the build report; filters may add warnings.
        step_id: the id of the filter step being run.
    """

    counter: CachedCounter
    budget: int | None
    runtime: Mapping[str, Any] = field(default_factory=dict)
    report: BuildReport | None = None
    step_id: str = ""
