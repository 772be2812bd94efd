"""Anthropic prompt caching: where ``cache: auto`` puts the ``cache_control`` breakpoints.

Anthropic caches a request's prefix up to a block marked ``cache_control``, in
the order tools -> system -> messages, and only when that prefix is at least
the model's minimum cacheable length; a request may mark at most 4 blocks
(docs/caching.md has the rules and their sources). ``auto`` places, in order
of value:

1. the end of the whole request, so the next turn (which extends it) can read it;
2. the end of the longest message prefix identical to the previous build of the
   same thread, which is what this request can read from the cache;
3. the end of the system prompt (tools included), which survives any trimming
   of the history;
4. the end of the tools, which survives a changed system prompt;

leaving out any whose prefix is below the minimum, merging those that fall on
the same place, and keeping at most :data:`MAX_BREAKPOINTS`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "ANTHROPIC_MIN_CACHEABLE",
    "DEFAULT_MIN_CACHEABLE",
    "MAX_BREAKPOINTS",
    "CachePlan",
    "min_cacheable_tokens",
    "plan_anthropic_cache",
]

#: the most blocks one Messages API request may mark with ``cache_control``.
MAX_BREAKPOINTS = 4

#: minimum cacheable prompt length (tokens of the prefix up to a breakpoint) by model-name prefix;
#: the longest matching prefix wins. From Anthropic's prompt-caching documentation (docs/caching.md).
ANTHROPIC_MIN_CACHEABLE: dict[str, int] = {
    "claude-opus-5": 512,
    "claude-sonnet-5": 1024,
    "claude-opus-4-8": 1024,
    "claude-opus-4-7": 4096,
    "claude-opus-4-6": 4096,
    "claude-opus-4-5": 4096,
    "claude-haiku-4-5": 4096,
    "claude-sonnet-4-6": 2048,
    "claude-3-5-haiku": 2048,
    "claude-3-haiku": 2048,
    "claude-sonnet-4-5": 1024,
    "claude-sonnet-4": 1024,
    "claude-opus-4-1": 1024,
    "claude-opus-4": 1024,
    "claude-3-7-sonnet": 1024,
}
#: the minimum assumed for a model the table does not name (set ``target.cache_min_tokens`` to override).
DEFAULT_MIN_CACHEABLE = 1024


def min_cacheable_tokens(model: str | None) -> int:
    """The minimum cacheable prefix for ``model`` (the longest matching name prefix in the table, else 1,024)."""
    if model:
        matches = [k for k in ANTHROPIC_MIN_CACHEABLE if model.startswith(k)]
        if matches:
            return ANTHROPIC_MIN_CACHEABLE[max(matches, key=len)]
    return DEFAULT_MIN_CACHEABLE


@dataclass(frozen=True)
class CachePlan:
    """The breakpoints of one request and why.

    Attributes:
        messages: indices (into the built messages) of the non-system messages
            whose last block gets ``cache_control``, in order.
        system: mark the last system block.
        tools: mark the last tool definition.
        reused: leading non-system messages identical to the previous build of the thread.
        min_tokens: the minimum cacheable length that was applied.
    """

    messages: tuple[int, ...] = ()
    system: bool = False
    tools: bool = False
    reused: int = 0
    min_tokens: int = DEFAULT_MIN_CACHEABLE

    @property
    def count(self) -> int:
        """How many ``cache_control`` blocks the request carries."""
        return len(self.messages) + self.system + self.tools


def plan_anthropic_cache(
    roles: Sequence[str],
    tokens: Sequence[int],
    tool_tokens: int,
    has_tools: bool,
    reused: int,
    min_tokens: int,
) -> CachePlan:
    """The breakpoints for a request of messages with ``roles`` and ``tokens`` (see the module doc).

    ``reused`` is how many leading non-system messages equal the previous
    build's (0 when the system prompt changed or there is none).
    """
    system_tokens = sum(t for r, t in zip(roles, tokens, strict=True) if r == "system")
    has_system = any(r == "system" for r in roles)
    rest = [i for i, r in enumerate(roles) if r != "system"]
    prefix = tool_tokens + system_tokens
    cumulative: list[int] = []
    for i in rest:
        prefix += tokens[i]
        cumulative.append(prefix)
    chosen: list[int] = []
    if rest and cumulative[-1] >= min_tokens:
        chosen.append(len(rest) - 1)
    if 0 < reused <= len(rest) and cumulative[reused - 1] >= min_tokens and reused - 1 not in chosen:
        chosen.append(reused - 1)
    system = has_system and tool_tokens + system_tokens >= min_tokens
    tools = has_tools and tool_tokens >= min_tokens  # at most 2 + 1 + 1 = MAX_BREAKPOINTS in all
    return CachePlan(
        messages=tuple(sorted(rest[k] for k in chosen)), system=system, tools=tools, reused=reused, min_tokens=min_tokens,
    )
