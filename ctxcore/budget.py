"""Token budgets, the per-message count cache, and the context filters run in.

The count cache is why a build's cost follows what is kept: a message is
tokenized at most once per counter (keyed by its content fingerprint), and the
cache lives on the builder, so it survives across builds of one conversation.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from ctxcore.messages import Message
from ctxcore.protocols import TokenCounter

if TYPE_CHECKING:  # pragma: no cover
    from ctxcore.report import BuildReport

__all__ = ["ModelBudget", "CachedCounter", "FilterContext"]


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

    def __post_init__(self) -> None:
        if self.context_window <= 0:
            raise ValueError("context_window must be positive")
        if self.reserve_output_tokens < 0 or self.safety_margin < 0:
            raise ValueError("reserve_output_tokens and safety_margin must be >= 0")
        if self.reserve_output_tokens + self.safety_margin >= self.context_window:
            raise ValueError("reserve_output_tokens plus safety_margin must be smaller than context_window")

    @property
    def max_input_tokens(self) -> int:
        """Tokens available for the request's input (messages, tool schemas, priming)."""
        return self.context_window - self.reserve_output_tokens - self.safety_margin


class CachedCounter:
    """Wraps a :class:`TokenCounter` so each distinct message is tokenized once.

    The contract this relies on: ``count_messages(ms) == sum(count_message(m)) +
    count_messages([])`` (the reply priming). Keys are content fingerprints, so
    two messages with the same text and role share one count. The cache is an LRU
    bounded by ``max_entries``.
    """

    def __init__(self, counter: TokenCounter, max_entries: int = 200_000) -> None:
        self.counter = counter
        self.name: str = getattr(counter, "name", type(counter).__name__)
        self.max_entries = max_entries
        self._cache: OrderedDict[str, int] = OrderedDict()
        self._priming: int | None = None
        self.hits = 0
        self.misses = 0

    def count_text(self, text: str) -> int:
        """Tokens of a bare string (not cached: strings have no fingerprint)."""
        return self.counter.count_text(text)

    def count_message(self, message: Message) -> int:
        """Tokens of ``message``, from the cache when its content was seen before."""
        key = message.fingerprint
        cached = self._cache.get(key)
        if cached is not None:
            self.hits += 1
            self._cache.move_to_end(key)
            return cached
        self.misses += 1
        count = self.counter.count_message(message)
        self._cache[key] = count
        if len(self._cache) > self.max_entries:
            self._cache.popitem(last=False)
        return count

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
        """Tokens of tool definitions (delegated, not cached)."""
        return self.counter.count_tools(tools)

    def peek(self, message: Message) -> int | None:
        """The cached count of ``message`` if known, without counting it."""
        return self._cache.get(message.fingerprint)


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
