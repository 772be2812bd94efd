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
5. with a ``turn_ttl``, the last user message: the pauses that expire a cache
   come between turns, so a long-lived mark there keeps the conversation up to
   the current turn cached while the calls inside the turn use short-lived ones;

leaving out any whose prefix is below the minimum, merging those that fall on
the same place, and keeping the four most valuable. :func:`mark_anthropic` then
puts them on the rendered body within the API's rules: at most
:data:`MAX_BREAKPOINTS` marks counting the caller's own (beyond the cap the
oldest of them are left out) and the top-level automatic one (the plan's least
valuable are left out), and no ``1h`` breakpoint after a ``5m`` one. Placement depends only on the
request and the previous build of the thread, so a breakpoint stays on the same
block from turn to turn while the prefix before it is unchanged (the previous
end becomes this request's reused-prefix mark).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

__all__ = [
    "ANTHROPIC_MIN_CACHEABLE",
    "DEFAULT_MIN_CACHEABLE",
    "MAX_BREAKPOINTS",
    "NOT_CACHEABLE",
    "TTL_ORDER",
    "CachePlan",
    "CacheTTL",
    "cache_marks",
    "mark_anthropic",
    "min_cacheable_tokens",
    "plan_anthropic_cache",
    "ttl_problem",
]

#: the most blocks one Messages API request may mark with ``cache_control`` (the top-level one included).
MAX_BREAKPOINTS = 4
#: how many blocks before a breakpoint Anthropic looks for an earlier cached prefix.
ANTHROPIC_LOOKBACK = 20
#: a breakpoint's lifetime: Anthropic's ``ttl`` values.
CacheTTL = Literal["5m", "1h"]
#: longer lifetimes rank higher; a breakpoint may not outlive one before it.
TTL_ORDER: dict[str, int] = {"5m": 0, "1h": 1}
#: block types Anthropic refuses ``cache_control`` on (they are cached as part of the prefix).
NOT_CACHEABLE = frozenset({"thinking", "redacted_thinking"})

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
        ttl: the lifetime of the message breakpoints (``"5m"`` or ``"1h"``).
        prefix_ttl: the lifetime of the system and tools breakpoints; never
            shorter than ``ttl`` (Anthropic wants 1h breakpoints before 5m ones).
        top_level: the end of the request is cached by the top-level automatic
            ``cache_control`` instead of an explicit mark (it takes one of the 4 slots).
        end: the message index of the end-of-request breakpoint, or ``None``.
        reused_near: the reused-prefix breakpoint is within the 20-block lookback
            of the end breakpoint, so the end breakpoint alone would also read it.
        reused_at: the message index of the reused-prefix breakpoint, or ``None``.
        turn: the message index of the turn breakpoint (the last user message), or ``None``.
        turn_ttl: the lifetime of the turn breakpoint and of every breakpoint before it.
    """

    messages: tuple[int, ...] = ()
    system: bool = False
    tools: bool = False
    reused: int = 0
    min_tokens: int = DEFAULT_MIN_CACHEABLE
    ttl: CacheTTL = "5m"
    prefix_ttl: CacheTTL = "5m"
    top_level: bool = False
    end: int | None = None
    reused_near: bool = False
    reused_at: int | None = None
    turn: int | None = None
    turn_ttl: CacheTTL = "5m"

    @property
    def count(self) -> int:
        """How many breakpoints the request carries (the top-level one included)."""
        return len(self.messages) + self.system + self.tools + self.top_level

    def by_value(self) -> list[tuple[str, int]]:
        """The explicit breakpoints from most to least valuable: ``("messages", index)``, ``("system", -1)``, ``("tools", -1)``.

        The end of the request first (the next turn reads it), then the reused
        prefix when the end cannot reach it through the 20-block lookback, the
        system prompt, the tools, the turn breakpoint, and last a reused prefix
        the end already reaches. A mark that is both the end (or the reused
        prefix) and the turn ranks as the former.
        """
        end = [self.end] if self.end in self.messages else []
        reused = [i for i in self.messages if i not in end and (i != self.turn or i == self.reused_at)]
        turn = [i for i in self.messages if i == self.turn and i not in end + reused]
        order = [("messages", i) for i in end + ([] if self.reused_near else reused)]
        order += [("system", -1)] * self.system + [("tools", -1)] * self.tools
        return order + [("messages", i) for i in turn + (reused if self.reused_near else [])]

    def ttl_of(self, part: str, index: int, turn_marked: bool = True) -> CacheTTL:
        """The lifetime of the breakpoint on ``part`` (``messages`` index, or ``system`` / ``tools``).

        Breakpoints up to the turn breakpoint take ``turn_ttl`` when it is
        longer (Anthropic wants 1h breakpoints before 5m ones), the prefix ones
        at least ``prefix_ttl``, the others ``ttl``. ``turn_marked`` says
        whether the turn breakpoint made it onto the body.
        """
        own = self.prefix_ttl if part != "messages" else self.ttl
        before_turn = turn_marked and self.turn is not None and (part != "messages" or index <= self.turn)
        return _longest(own, self.turn_ttl) if before_turn else own


def _longest(a: CacheTTL, b: CacheTTL) -> CacheTTL:
    return a if TTL_ORDER[a] >= TTL_ORDER[b] else b


def plan_anthropic_cache(
    roles: Sequence[str],
    tokens: Sequence[int],
    tool_tokens: int,
    has_tools: bool,
    reused: int,
    min_tokens: int,
    *,
    blocks: Sequence[int] | None = None,
    ttl: CacheTTL = "5m",
    prefix_ttl: CacheTTL | None = None,
    top_level: bool = False,
    turn_ttl: CacheTTL | None = None,
    extends: bool = False,
) -> CachePlan:
    """The breakpoints for a request of messages with ``roles`` and ``tokens`` (see the module doc).

    ``reused`` is how many leading non-system messages equal the previous
    build's (0 when the system prompt changed or there is none). ``blocks``
    gives how many content blocks each message renders to (1 each when not
    given), for the 20-block lookback. With ``top_level`` the end of the
    request is left to the top-level ``cache_control``. With ``turn_ttl`` the
    last user message is marked too, with that lifetime, when the request
    ``extends`` the previous build (a first or changed request writes its
    prefix at the short lifetime: a long one would bill most of the request
    at 2x). At most :data:`MAX_BREAKPOINTS` are planned, the least valuable
    left out.
    """
    prefix_ttl = prefix_ttl or ttl
    if TTL_ORDER[prefix_ttl] < TTL_ORDER[ttl]:
        raise ValueError(f"cache breakpoints: a {ttl} breakpoint cannot follow a {prefix_ttl} one (1h breakpoints come first)")
    system_tokens = sum(t for r, t in zip(roles, tokens, strict=True) if r == "system")
    has_system = any(r == "system" for r in roles)
    rest = [i for i, r in enumerate(roles) if r != "system"]
    prefix = tool_tokens + system_tokens
    cumulative: list[int] = []
    for i in rest:
        prefix += tokens[i]
        cumulative.append(prefix)
    chosen: list[int] = []
    end = None
    if rest and cumulative[-1] >= min_tokens and not top_level:
        chosen.append(len(rest) - 1)
        end = rest[-1]
    if 0 < reused <= len(rest) and cumulative[reused - 1] >= min_tokens and reused - 1 not in chosen and (
        not top_level or reused < len(rest)
    ):
        chosen.append(reused - 1)
    near = False
    if 0 < reused < len(rest):
        counts = blocks if blocks is not None else [1] * len(roles)
        near = sum(counts[i] for i in rest[reused:]) <= ANTHROPIC_LOOKBACK
    turn = max((k for k, i in enumerate(rest) if roles[i] == "user"), default=None) if turn_ttl and extends else None
    if turn is not None and (cumulative[turn] < min_tokens or (top_level and turn == len(rest) - 1)):
        turn = None
    if turn is not None and turn not in chosen:
        chosen.append(turn)
    system = has_system and tool_tokens + system_tokens >= min_tokens
    tools = has_tools and tool_tokens >= min_tokens
    plan = CachePlan(
        messages=tuple(sorted(rest[k] for k in chosen)), system=system, tools=tools, reused=reused, min_tokens=min_tokens,
        ttl=ttl, prefix_ttl=prefix_ttl, top_level=top_level, end=end, reused_near=near,
        reused_at=rest[reused - 1] if reused - 1 in chosen else None,
        turn=None if turn is None else rest[turn], turn_ttl=turn_ttl or ttl,
    )
    return _capped(plan)


def _capped(plan: CachePlan) -> CachePlan:
    """``plan`` without its least valuable breakpoints beyond :data:`MAX_BREAKPOINTS`."""
    if plan.count <= MAX_BREAKPOINTS:
        return plan
    kept = plan.by_value()[: MAX_BREAKPOINTS - plan.top_level]
    messages = tuple(sorted(i for part, i in kept if part == "messages"))
    return replace(plan, messages=messages, system=("system", -1) in kept, tools=("tools", -1) in kept,
                   turn=plan.turn if plan.turn in messages else None)


def cache_marks(body: Mapping[str, Any]) -> list[tuple[str, int, int, Mapping[str, Any]]]:
    """Every ``cache_control`` of an Anthropic body in the provider's order (tools, system, messages).

    Each is ``(part, index, block, cache_control)``: ``("tools", i, -1, ...)``,
    ``("system", i, -1, ...)``, ``("messages", turn, block, ...)``; the
    top-level automatic one, which marks the last cacheable block, comes last
    as ``("top_level", -1, -1, ...)``.
    """
    out: list[tuple[str, int, int, Mapping[str, Any]]] = []
    for part in ("tools", "system"):
        items = body.get(part)
        if isinstance(items, list):
            out += [(part, i, -1, b["cache_control"]) for i, b in enumerate(items) if _marked(b)]
    for k, m in enumerate(body.get("messages") or []):
        content = m.get("content") if isinstance(m, dict) else None
        if isinstance(content, list):
            out += [("messages", k, j, b["cache_control"]) for j, b in enumerate(content) if "cache_control" in b and _marked(b)]
    if isinstance(body.get("cache_control"), dict):
        out.append(("top_level", -1, -1, body["cache_control"]))
    return out


def _marked(block: Any) -> bool:
    return isinstance(block, dict) and isinstance(block.get("cache_control"), dict)


def ttl_problem(body: Mapping[str, Any]) -> str | None:
    """Anthropic's ordering rule on a body: a ``1h`` breakpoint after a ``5m`` one is refused (the message says where)."""
    seen_short: tuple[str, int, int] | None = None
    for part, index, block, control in cache_marks(body):
        ttl = control.get("ttl", "5m")
        if ttl == "5m" and seen_short is None:
            seen_short = (part, index, block)
        elif ttl == "1h" and seen_short is not None:
            return (f"cache_control: a ttl='1h' breakpoint ({_where(part, index, block)}) must not come after "
                    f"a ttl='5m' one ({_where(*seen_short)})")
    return None


def _where(part: str, index: int, block: int) -> str:
    if part == "messages":
        return f"messages.{index}.content.{block}"
    return part if part == "top_level" else f"{part}.{index}"


def mark_anthropic(body: dict[str, Any], plan: CachePlan, ends: Mapping[int, tuple[int, int]]) -> list[str]:
    """Put the plan's ``cache_control`` marks on a rendered body, within Anthropic's rules.

    Invariant: the body ends with at most :data:`MAX_BREAKPOINTS` marks and no
    ``1h`` breakpoint after a ``5m`` one, whatever the caller's own marks (on
    tools, on user blocks read by ``from_anthropic``, on raw blocks). The
    caller's marks come first: beyond the cap the oldest are left out (a later
    breakpoint covers the longer prefix). The top-level automatic mark and the
    plan's marks (by :meth:`CachePlan.by_value`) take the slots left. For the
    order, every mark before the caller's last ``1h`` mark is raised to ``1h``
    (the caller asked for that prefix to live an hour), and a plan mark after a
    caller's ``5m`` mark is lowered to ``5m``. Why here: only the rendered body
    shows every mark the API counts.

    Returns one report sentence per change made to the caller's own marks (none when they were sent as given).
    """
    caller = cache_marks(body)
    dropped = caller[: max(0, len(caller) - MAX_BREAKPOINTS)]
    for part, index, block, _ in dropped:
        del _block_at(body, (part, index, block))["cache_control"]
    notes = [f"cache: {len(dropped)} of the caller's {len(caller)} cache_control marks left out (Anthropic takes at most "
             f"{MAX_BREAKPOINTS}; the newest are kept): {', '.join(_where(*m[:3]) for m in dropped)}"] if dropped else []
    caller_count = min(len(caller), MAX_BREAKPOINTS)
    top_level = plan.top_level and caller_count < MAX_BREAKPOINTS
    if top_level:
        body["cache_control"] = _control(plan.ttl)
    slots = MAX_BREAKPOINTS - caller_count - top_level
    planned: dict[tuple[str, int], tuple[str, int, int]] = {}
    for part, index in plan.by_value():
        if len(planned) >= slots:
            break
        where = _target_block(body, part, index, ends)
        if where is not None and where not in planned.values() and not _marked(_block_at(body, where)):
            planned[(part, index)] = where
    placed = list(planned.values())
    turn_marked = plan.turn is not None and ("messages", plan.turn) in planned
    for (part, index), where in planned.items():
        _block_at(body, where)["cache_control"] = _control(plan.ttl_of(part, index, turn_marked))
    if caller:  # the plan's own marks are in order by construction (prefix_ttl >= ttl)
        raised = _order_ttls(body, set(placed) | ({("top_level", -1, -1)} if top_level else set()))
        notes += [f"cache: the caller's 5m cache_control marks before a 1h one raised to 1h (Anthropic wants 1h "
                  f"breakpoints first): {', '.join(_where(*m) for m in raised)}"] if raised else []
    return notes


def _control(ttl: str) -> dict[str, Any]:
    """A ``cache_control`` value; ``5m`` is Anthropic's default and is left implicit."""
    return {"type": "ephemeral", "ttl": "1h"} if ttl == "1h" else {"type": "ephemeral"}


def _block_at(body: Mapping[str, Any], where: tuple[str, int, int]) -> dict[str, Any]:
    part, index, block = where
    if part == "top_level":
        return body  # type: ignore[return-value]
    if part == "messages":
        return body["messages"][index]["content"][block]  # type: ignore[no-any-return]
    return body[part][index]  # type: ignore[no-any-return]


def _target_block(
    body: Mapping[str, Any], part: str, index: int, ends: Mapping[int, tuple[int, int]]
) -> tuple[str, int, int] | None:
    """The block a planned breakpoint goes on: the last tool / system block, or a message's last cacheable block."""
    if part != "messages":
        items = body.get(part)
        return (part, len(items) - 1, -1) if isinstance(items, list) and items else None
    where = max((k for k in ends if k <= index), default=None)
    if where is None:
        return None
    turn, block = ends[where]
    rendered = body["messages"]
    if turn >= len(rendered):  # the final assistant turn was stripped
        return None
    content = rendered[turn]["content"]
    if not isinstance(content, list):
        return None
    block = min(block, len(content) - 1)
    while block >= 0 and content[block].get("type") in NOT_CACHEABLE:
        block -= 1
    return ("messages", turn, block) if block >= 0 else None


def _order_ttls(body: dict[str, Any], ours: set[tuple[str, int, int]]) -> list[tuple[str, int, int]]:
    """Make the marks obey 1h-before-5m: ``1h`` up to the caller's last ``1h`` mark, plan marks ``5m`` after a caller's ``5m``.

    Returns where the caller's own marks were raised to ``1h``.
    """
    raised: list[tuple[str, int, int]] = []
    marks = cache_marks(body)
    last_long = max((k for k, m in enumerate(marks) if m[3].get("ttl") == "1h" and m[:3] not in ours), default=-1)
    seen_short = False
    for k, (part, index, block, control) in enumerate(marks):
        where = (part, index, block)
        if k < last_long:
            if control.get("ttl") != "1h":
                _block_at(body, where)["cache_control"] = {**control, "ttl": "1h"}
                raised += [] if where in ours else [where]
            continue
        if where in ours and seen_short and control.get("ttl") == "1h":
            _block_at(body, where)["cache_control"] = _control("5m")
        elif control.get("ttl", "5m") == "5m":
            seen_short = True
    return raised
