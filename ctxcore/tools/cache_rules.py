"""Each provider's documented prompt caching, applied to a replayed session (``ctx replay``).

The replay's own ``cached_tokens`` counts the leading messages identical to the
previous request. The models here follow the providers' rules instead
(docs/caching.md), one request at a time, in order, with state:

- :class:`OpenAICache`: automatic. A request reads the longest prefix (whole
  messages, tools first) identical to a prefix of any earlier request still
  alive, but only when the prompt is at least 1,024 tokens, and the cached part
  is 1,024 tokens plus whole 128-token increments. Cached tokens are billed at
  the model's cached-input price; nothing is billed for writing.
- :class:`AnthropicCache`: only up to ``cache_control`` breakpoints. A
  breakpoint reads the longest prefix, among the block boundaries from it to 20
  blocks back, that an earlier breakpoint wrote and that has not expired; the
  prefix up to the request's last breakpoint that was not read is written
  (1.25× the input price for a 5-minute breakpoint, 2× up to the last 1-hour
  one), reads cost 0.1×, and a breakpoint whose prefix is below the model's
  minimum neither reads nor writes. An entry lives as long as the breakpoint
  that wrote it said: a 1-hour breakpoint on a prefix read from a 5-minute
  entry is billed no write and leaves the entry at 5 minutes. Blocks are whole messages in the order
  tools -> system -> other messages.

Lifetimes (5 minutes, or 1 hour for a ``ttl: 1h`` breakpoint, refreshed by
every read; OpenAI's ``prompt_cache_options.ttl`` of 30 minutes or 12 hours as
the OpenAI cache's lifetime) apply when the calls have timestamps; without
them nothing expires. Prices come from :data:`PRICES`, a
small table of list prices per million input tokens that the CLI can override.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ctxcore.render.caching import ANTHROPIC_LOOKBACK

__all__ = [
    "PRICES",
    "LIFETIME_SECONDS",
    "TTL_SECONDS",
    "OPENAI_MIN_PROMPT",
    "OPENAI_INCREMENT",
    "ANTHROPIC_LOOKBACK",
    "Price",
    "CacheOutcome",
    "OpenAICache",
    "AnthropicCache",
    "price_for",
    "prefix_units",
]

#: how long an unused cache entry lives (both providers document about 5 minutes).
LIFETIME_SECONDS = 300.0
#: the lifetime of each ``ttl``: Anthropic's breakpoints and OpenAI's ``prompt_cache_options.ttl``.
TTL_SECONDS: dict[str, float] = {"5m": 300.0, "1h": 3600.0, "30m": 1800.0, "12h": 43200.0}
#: OpenAI caches only prompts of at least this many tokens ...
OPENAI_MIN_PROMPT = 1024
#: ... and the cached part grows in steps of this many tokens beyond the first 1,024.
OPENAI_INCREMENT = 128


@dataclass(frozen=True)
class Price:
    """Prices per million input tokens: ``input``, a cache ``read``, a cache ``write`` (``input`` when free).

    ``write_long`` is a 1-hour write (Anthropic: 2× input); ``None`` prices it as ``write``.
    """

    provider: str
    input: float
    read: float
    write: float
    write_long: float | None = None


#: list prices per million input tokens (USD) at the time of writing; override them with the CLI options.
#: OpenAI: the cached-input price of the model, writes free. Anthropic: writes 1.25×, reads 0.1× of input.
PRICES: dict[str, Price] = {
    "gpt-4o": Price("openai", 2.50, 1.25, 2.50),
    "gpt-4.1": Price("openai", 2.00, 0.50, 2.00),
    "gpt-5": Price("openai", 1.25, 0.125, 1.25),
    "claude-sonnet": Price("anthropic", 3.00, 0.30, 3.75, 6.00),
    "claude-haiku": Price("anthropic", 1.00, 0.10, 1.25, 2.00),
    "claude-opus": Price("anthropic", 5.00, 0.50, 6.25, 10.00),
}


def price_for(model: str, *, input_price: float | None = None, cached_price: float | None = None) -> Price:
    """The table's price of ``model``, with the input price (and for OpenAI the cached price) overridden.

    Anthropic's read and write prices follow its multipliers of the input price
    (0.1×, 1.25× and 2× for a 1-hour write), so overriding the input price moves them too.

    Raises:
        ValueError: ``model`` is not in :data:`PRICES`; the message lists the names.
    """
    try:
        base = PRICES[model]
    except KeyError:
        raise ValueError(f"no price for {model!r}; known: {', '.join(sorted(PRICES))} (or give the prices explicitly)") from None
    price = base.input if input_price is None else input_price
    if base.provider == "anthropic":
        return Price("anthropic", price, price * 0.1, price * 1.25, price * 2.0)
    read = cached_price if cached_price is not None else base.read * (price / base.input if base.input else 1.0)
    return Price("openai", price, read, price)


@dataclass(frozen=True)
class CacheOutcome:
    """How one request's input tokens were billed: read from the cache, written to it, or neither.

    ``written`` counts every written token; ``written_long`` the part written
    at a 1-hour breakpoint (billed at ``Price.write_long``).
    """

    read: int
    written: int
    input_tokens: int
    written_long: int = 0

    def cost(self, price: Price) -> float:
        """The request's input cost in dollars."""
        plain = self.input_tokens - self.read - self.written
        long_price = price.write if price.write_long is None else price.write_long
        short = self.written - self.written_long
        return (plain * price.input + self.read * price.read + short * price.write
                + self.written_long * long_price) / 1_000_000


def prefix_units(rendered: Sequence[Mapping[str, Any]], tokens: Sequence[int], tools: Any, tool_tokens: int) -> tuple[list[str], list[int], list[int]]:
    """The request as cache blocks in the providers' order (tools, system, the rest).

    Returns the cumulative hash after each block, the cumulative tokens after
    each block, and for each rendered message its block index.
    """
    order = [i for i, m in enumerate(rendered) if m.get("role") == "system"]
    order += [i for i, m in enumerate(rendered) if m.get("role") != "system"]
    digest = hashlib.blake2b(digest_size=16)
    hashes: list[str] = []
    totals: list[int] = []
    position = [0] * len(rendered)
    total = 0
    if tools:
        digest.update(json.dumps(tools, sort_keys=True, default=str).encode())
        total += tool_tokens
        hashes.append(digest.copy().hexdigest())
        totals.append(total)
    for i in order:
        digest.update(json.dumps(rendered[i], sort_keys=True, default=str).encode())
        total += tokens[i]
        position[i] = len(hashes)
        hashes.append(digest.copy().hexdigest())
        totals.append(total)
    return hashes, totals, position


class _Entries:
    """Cached prefixes by hash with the time they expire (never, without timestamps)."""

    def __init__(self, lifetime: float = LIFETIME_SECONDS) -> None:
        self.lifetime = lifetime
        self._until: dict[str, float | None] = {}
        self._life: dict[str, float] = {}

    def alive(self, key: str, now: float | None) -> bool:
        if key not in self._until:
            return False
        until = self._until[key]
        return until is None or now is None or now <= until

    def touch(self, key: str, now: float | None, lifetime: float | None = None) -> None:
        """Refresh ``key`` for its own lifetime when alive, else write it to live ``lifetime`` (default: the cache's).

        A live entry keeps the lifetime it was written with: a longer-lived
        breakpoint on a prefix read from a shorter-lived entry bills no write,
        so it does not extend the entry either.
        """
        if not self.alive(key, now):
            self._life[key] = lifetime or self.lifetime
        self._until[key] = None if now is None else now + self._life[key]


class OpenAICache:
    """OpenAI's automatic prompt caching over a sequence of requests (see the module doc).

    ``lifetime`` is how long an unused prefix lives (``TTL_SECONDS["30m"]`` or
    ``["12h"]`` with ``prompt_cache_options.ttl``; 5 minutes without).
    """

    def __init__(self, lifetime: float = LIFETIME_SECONDS) -> None:
        self._entries = _Entries(lifetime)

    def observe(self, hashes: Sequence[str], totals: Sequence[int], input_tokens: int, now: float | None = None) -> CacheOutcome:
        """Bill one request (its blocks' cumulative hashes and tokens); it then becomes cacheable."""
        hit = 0
        for k in range(len(hashes) - 1, -1, -1):
            if self._entries.alive(hashes[k], now):
                hit = totals[k]
                break
        for key in hashes:
            self._entries.touch(key, now)
        if input_tokens < OPENAI_MIN_PROMPT or hit < OPENAI_MIN_PROMPT:
            return CacheOutcome(0, 0, input_tokens)
        cached = OPENAI_MIN_PROMPT + (hit - OPENAI_MIN_PROMPT) // OPENAI_INCREMENT * OPENAI_INCREMENT
        return CacheOutcome(min(cached, input_tokens), 0, input_tokens)


class AnthropicCache:
    """Anthropic's breakpoint caching over a sequence of requests (see the module doc)."""

    def __init__(self, min_tokens: int = 1024) -> None:
        self.min_tokens = min_tokens
        self._entries = _Entries()

    def observe(
        self, hashes: Sequence[str], totals: Sequence[int], breakpoints: Sequence[int], input_tokens: int,
        now: float | None = None, ttls: Sequence[str] | None = None,
    ) -> CacheOutcome:
        """Bill one request whose ``breakpoints`` are block indices (``cache_control`` after that block).

        ``ttls`` gives each breakpoint's ``ttl`` (``"5m"`` for all when not
        given); the prefix up to the last ``1h`` breakpoint is written at the
        1-hour price and lives an hour.
        """
        life = dict(zip(breakpoints, ttls or (), strict=False))
        marks = sorted(b for b in set(breakpoints) if 0 <= b < len(hashes) and totals[b] >= self.min_tokens)
        read = 0
        for b in marks:
            for q in range(b, max(b - ANTHROPIC_LOOKBACK - 1, -1), -1):  # its block and the 20 before
                if totals[q] >= self.min_tokens and self._entries.alive(hashes[q], now):
                    read = max(read, totals[q])
                    self._entries.touch(hashes[q], now)  # a read refreshes the entry's lifetime
                    break
        written = max(totals[marks[-1]] - read, 0) if marks else 0
        long_end = max((totals[b] for b in marks if life.get(b) == "1h"), default=0)
        for b in marks:
            if totals[b] > read:  # written now, billed at its ttl's price; a prefix read is not written again
                self._entries.touch(hashes[b], now, TTL_SECONDS[life.get(b, "5m")])
        return CacheOutcome(read, written, input_tokens, written_long=max(long_end - read, 0))
