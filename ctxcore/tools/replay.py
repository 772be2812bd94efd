"""Replay a recorded session: build the request before every model call and measure it.

A recorded session is a list of OpenAI-format messages (optionally starting
with a system prompt), or the state object ``ctx build`` reads
(``{"messages": [...], "tools": [...], ...}``). Before every assistant message
there was a model call whose input was everything up to that point; a *turn*
is a user message (or a run of them) through the final assistant message, and
each tool-call step inside a turn is its own call.

For every call the request is built (by a ctxcore builder, reused across
calls so its count cache and the compaction memo work as in a live agent, or
by any other request function, e.g. LangChain's ``trim_messages``) and
measured: input tokens, budget fill, reductions, and the *cached prefix*:

    cached_tokens = the tokens of the leading messages of this request that are
    identical (same rendered OpenAI dict: role, content, name, tool calls,
    tool_call_id) to the leading messages of the previous request, plus the
    tool schemas when they are identical too (providers put tools first).

That is what a provider's prompt cache can serve at message granularity, the
same way for every request builder. The reply priming is never counted as
cached. Each call is also billed under each provider's documented rules
(:mod:`ctxcore.tools.cache_rules`: OpenAI's 1,024-token minimum and 128-token
increments, Anthropic's breakpoints with writes and reads and their
lifetimes): ``CallResult.openai_cached_tokens``, ``anthropic_read_tokens`` and
``anthropic_write_tokens``, summed with costs in ``ReplayResult.providers``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from ctxcore.errors import TranscriptError
from ctxcore.model.messages import Message
from ctxcore.render.caching import DEFAULT_MIN_CACHEABLE, min_cacheable_tokens
from ctxcore.tools.cache_rules import (
    LIFETIME_SECONDS,
    PRICES,
    TTL_SECONDS,
    AnthropicCache,
    CacheOutcome,
    OpenAICache,
    Price,
    prefix_units,
)

__all__ = [
    "TranscriptError",
    "CallPoint",
    "RequestStats",
    "CallResult",
    "TurnResult",
    "ReplayResult",
    "PrefixTracker",
    "load_transcript",
    "split_timestamps",
    "call_points",
    "builder_requests",
    "replay_requests",
    "replay",
    "anthropic_minimum",
    "DEFAULT_PRICES",
]

_ROLES = ("system", "user", "assistant", "tool")

#: the prices the provider rules are billed at unless told otherwise (see ``cache_rules.PRICES``).
DEFAULT_PRICES: dict[str, Price] = {"openai": PRICES["gpt-4o"], "anthropic": PRICES["claude-sonnet"]}


@dataclass(frozen=True)
class CallPoint:
    """One model call of the session: ``history`` messages came before it, in turn ``turn`` (1-based)."""

    index: int
    turn: int
    history: int


@dataclass(frozen=True)
class RequestStats:
    """What a request builder produced for one call (the input of the measurement).

    ``rendered`` are the OpenAI dicts sent, ``message_tokens`` their counts (same
    order), ``input_tokens`` the whole request (messages, tool schemas, priming).
    """

    rendered: list[dict[str, Any]]
    message_tokens: list[int]
    input_tokens: int
    budget: int | None = None
    tool_tokens: int = 0
    tools: Any = None
    reductions: tuple[str, ...] = ()  # ids of reductions present in the request
    stages: tuple[str, ...] = ()  # their stages (same order)
    removed: int = 0  # history messages not sent (dropped or replaced)
    warnings: int = 0
    #: Anthropic ``cache_control`` breakpoints: indices into ``rendered`` (a mark after that
    #: message; -1 marks the tools); ``()`` for none.
    cache_breakpoints: tuple[int, ...] = ()
    #: each breakpoint's ``ttl`` (``"5m"`` / ``"1h"``), in the order of ``cache_breakpoints``; ``()``: all 5m.
    cache_ttls: tuple[str, ...] = ()


@dataclass(frozen=True)
class CallResult:
    """The measurement of one call."""

    index: int
    turn: int
    history: int
    messages: int
    input_tokens: int
    cached_tokens: int
    budget: int | None
    fill: float | None
    over_budget: bool
    reductions: int
    new_reductions: int
    new_stages: dict[str, int]
    removed: int
    #: input tokens OpenAI's automatic caching serves (1,024 minimum, 128-token steps).
    openai_cached_tokens: int = 0
    #: input tokens read from Anthropic's cache / written to it at this call's breakpoints.
    anthropic_read_tokens: int = 0
    anthropic_write_tokens: int = 0
    #: the call's timestamp (seconds) when the transcript has them.
    time: float | None = None
    #: the part of ``anthropic_write_tokens`` written at 1-hour breakpoints (billed 2× input).
    anthropic_write_long_tokens: int = 0

    @property
    def cached_share(self) -> float:
        """Share of the input tokens served from the previous request's prefix."""
        return self.cached_tokens / self.input_tokens if self.input_tokens else 0.0


@dataclass(frozen=True)
class TurnResult:
    """The calls of one turn, summed (``fill`` is the largest of the turn)."""

    turn: int
    calls: int
    input_tokens: int
    cached_tokens: int
    fill: float | None
    over_budget: int
    new_reductions: int
    removed: int

    @property
    def cached_share(self) -> float:
        """Share of the turn's input tokens served from cached prefixes."""
        return self.cached_tokens / self.input_tokens if self.input_tokens else 0.0


@dataclass
class ReplayResult:
    """Every call, every turn, and the totals with a cost estimate."""

    calls: list[CallResult]
    price_per_mtok: float
    cached_discount: float
    #: the prices the provider rules are billed at: ``{"openai": Price, "anthropic": Price}``.
    prices: dict[str, Price] = field(default_factory=lambda: dict(DEFAULT_PRICES))
    turns: list[TurnResult] = field(init=False)

    def __post_init__(self) -> None:
        self.turns = _turns(self.calls)

    @property
    def totals(self) -> dict[str, Any]:
        """Input and cached tokens, cached share, cost, mean fill and requests over budget."""
        input_tokens = sum(c.input_tokens for c in self.calls)
        cached = sum(c.cached_tokens for c in self.calls)
        fills = [c.fill for c in self.calls if c.fill is not None]
        price = self.price_per_mtok / 1_000_000
        return {
            "calls": len(self.calls),
            "turns": len(self.turns),
            "input_tokens": input_tokens,
            "cached_tokens": cached,
            "cached_share": cached / input_tokens if input_tokens else 0.0,
            "cost": (input_tokens - cached) * price + cached * price * self.cached_discount,
            "cost_without_cache": input_tokens * price,
            "mean_fill": sum(fills) / len(fills) if fills else None,
            "max_fill": max(fills) if fills else None,
            "over_budget": sum(1 for c in self.calls if c.over_budget),
            "reductions": sum(c.new_reductions for c in self.calls),
            "price_per_mtok": self.price_per_mtok,
            "cached_discount": self.cached_discount,
        }

    @property
    def providers(self) -> dict[str, dict[str, Any]]:
        """Per provider rule: cached (read) and written tokens, cached share, cost and cost without caching."""
        input_tokens = sum(c.input_tokens for c in self.calls)
        out: dict[str, dict[str, Any]] = {}
        for name, outcome_of in (
            ("openai", lambda c: CacheOutcome(c.openai_cached_tokens, 0, c.input_tokens)),
            ("anthropic", lambda c: CacheOutcome(c.anthropic_read_tokens, c.anthropic_write_tokens, c.input_tokens,
                                                 c.anthropic_write_long_tokens)),
        ):
            price = self.prices[name]
            outcomes = [outcome_of(c) for c in self.calls]
            read = sum(o.read for o in outcomes)
            out[name] = {
                "cached_tokens": read,
                "written_tokens": sum(o.written for o in outcomes),
                "written_long_tokens": sum(o.written_long for o in outcomes),
                "cached_share": read / input_tokens if input_tokens else 0.0,
                "cost": sum(o.cost(price) for o in outcomes),
                "cost_without_cache": input_tokens * price.input / 1_000_000,
                "price": asdict(price),
            }
        return out

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: ``totals``, ``providers``, ``turns`` and ``calls`` (each with its cached share)."""
        return {
            "totals": self.totals,
            "providers": self.providers,
            "turns": [{**asdict(t), "cached_share": t.cached_share} for t in self.turns],
            "calls": [{**asdict(c), "cached_share": c.cached_share} for c in self.calls],
        }


# --------------------------------------------------------------- the session
def load_transcript(data: Any, source: str = "<transcript>") -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The messages of a recorded session and the rest of its state.

    ``data`` is a list of OpenAI message dicts or a state object
    ``{"messages": [...], ...}`` (the shape ``ctx build --state`` reads); the
    other keys (``tools``...) are passed to every build.

    Raises:
        TranscriptError: wrong shape, an invalid message (with its index), or no
            assistant message (nothing to replay).
    """
    extra: dict[str, Any] = {}
    if isinstance(data, Mapping):
        if "messages" not in data:
            raise TranscriptError(f'{source}: no "messages" key; a transcript is a JSON list of messages or {{"messages": [...]}}')
        extra = {k: v for k, v in data.items() if k != "messages"}
        data = data["messages"]
    if not isinstance(data, list):
        raise TranscriptError(
            f"{source}: the messages must be a JSON list of OpenAI message objects, not {type(data).__name__}"
        )
    tools = extra.get("tools")
    if tools is not None and (not isinstance(tools, list) or not all(isinstance(t, Mapping) for t in tools)):
        raise TranscriptError(f"{source}: 'tools' must be a list of tool definitions (JSON objects)")
    for i, item in enumerate(data):
        if not isinstance(item, Mapping):
            raise TranscriptError(f"{source}: messages[{i}] is a {type(item).__name__}, not a message object; "
                                  'write it as {"role": "user", "content": "..."}')
        if item.get("role") not in _ROLES:
            raise TranscriptError(f"{source}: messages[{i}] has role {item.get('role')!r}; use one of {', '.join(_ROLES)}")
        try:
            Message.from_openai(item)
        except (ValueError, TypeError, KeyError) as exc:
            detail = " ".join(str(exc).split())
            raise TranscriptError(f"{source}: messages[{i}] is not a valid OpenAI message: {detail}") from exc
    if not any(item["role"] == "assistant" for item in data):
        raise TranscriptError(f"{source}: no assistant message, so no model call to replay; "
                              "a transcript records the model's replies as assistant messages")
    return list(data), extra


def split_timestamps(messages: Sequence[Mapping[str, Any]], source: str = "<transcript>") -> tuple[list[dict[str, Any]], list[float | None] | None]:
    """The messages without their ``timestamp`` keys, and the timestamps in seconds (``None`` when no message has one).

    A timestamp is epoch seconds or an ISO 8601 string; it is the time of the
    message (for an assistant message: when the model call before it ran).

    Raises:
        TranscriptError: a timestamp that is neither; names the message.
    """
    from datetime import datetime

    times: list[float | None] = []
    out: list[dict[str, Any]] = []
    for i, m in enumerate(messages):
        value = m.get("timestamp")
        if value is None:
            times.append(None)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            times.append(float(value))
        elif isinstance(value, str):
            try:
                times.append(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp())
            except ValueError:
                raise TranscriptError(f"{source}: messages[{i}].timestamp {value!r} is not ISO 8601 or epoch seconds") from None
        else:
            raise TranscriptError(f"{source}: messages[{i}].timestamp must be ISO 8601 text or epoch seconds")
        out.append({k: v for k, v in m.items() if k != "timestamp"})
    return out, (times if any(t is not None for t in times) else None)


def call_points(messages: Sequence[Mapping[str, Any]]) -> list[CallPoint]:
    """A call before every assistant message; a new turn at each user message that follows a non-user one."""
    points: list[CallPoint] = []
    turn = 0
    previous_role: str | None = None
    for i, m in enumerate(messages):
        role = m.get("role")
        if role == "user" and previous_role != "user":
            turn += 1
        elif role == "assistant":
            points.append(CallPoint(index=len(points), turn=max(turn, 1), history=i))
        previous_role = role
    return points


# ------------------------------------------------------------------ measuring
class PrefixTracker:
    """Tokens of a request's leading messages identical to the previous request's (see the module doc)."""

    def __init__(self) -> None:
        self._previous: list[dict[str, Any]] = []
        self._tools: Any = None
        self._started = False

    def observe(self, request: RequestStats) -> int:
        """The cached tokens of ``request``; it becomes the previous request."""
        cached = 0
        if self._started and request.tools == self._tools:
            cached = request.tool_tokens
            previous = self._previous
            for k, (rendered, tokens) in enumerate(zip(request.rendered, request.message_tokens, strict=True)):
                if k >= len(previous) or previous[k] != rendered:
                    break
                cached += tokens
        self._previous, self._tools, self._started = request.rendered, request.tools, True
        return cached


def replay_requests(
    messages: Sequence[Mapping[str, Any]],
    request: Callable[[int], RequestStats],
    *,
    price_per_mtok: float = 3.0,
    cached_discount: float = 0.1,
    on_call: Callable[[int, int], None] | None = None,
    times: Sequence[float | None] | None = None,
    prices: Mapping[str, Price] | None = None,
    anthropic_min_tokens: int = DEFAULT_MIN_CACHEABLE,
    openai_lifetime: float = LIFETIME_SECONDS,
) -> ReplayResult:
    """Measure ``request(history_length)`` before every model call of ``messages``.

    ``request`` builds the request for the first ``history_length`` messages;
    ``on_call(done, total)`` reports progress after each call. ``times`` (one
    per message, see :func:`split_timestamps`) make cache entries expire;
    ``prices`` (``{"openai": Price, "anthropic": Price}``) price the provider rules;
    ``openai_lifetime`` is how long OpenAI keeps an unused prefix (seconds).
    """
    if price_per_mtok < 0 or not 0 <= cached_discount <= 1:
        raise ValueError("price_per_mtok must be >= 0 and cached_discount between 0 and 1")
    points = call_points(messages)
    tracker = PrefixTracker()
    openai, anthropic = OpenAICache(openai_lifetime), AnthropicCache(anthropic_min_tokens)
    results: list[CallResult] = []
    seen: set[str] = set()
    for point in points:
        stats = request(point.history)
        cached = tracker.observe(stats)
        new = [(r, s) for r, s in zip(stats.reductions, stats.stages, strict=True) if r not in seen]
        seen = set(stats.reductions)
        stages: dict[str, int] = {}
        for _, stage in new:
            stages[stage] = stages.get(stage, 0) + 1
        fill = stats.input_tokens / stats.budget if stats.budget else None
        now = times[point.history] if times is not None and point.history < len(times) else None
        hashes, totals, position = prefix_units(stats.rendered, stats.message_tokens, stats.tools, stats.tool_tokens)
        kept = [k for k, b in enumerate(stats.cache_breakpoints) if b >= 0 or stats.tools]
        marks = [position[stats.cache_breakpoints[k]] if stats.cache_breakpoints[k] >= 0 else 0 for k in kept]
        ttls = [stats.cache_ttls[k] for k in kept] if stats.cache_ttls else None
        by_openai = openai.observe(hashes, totals, stats.input_tokens, now)
        by_anthropic = anthropic.observe(hashes, totals, marks, stats.input_tokens, now, ttls)
        results.append(CallResult(
            index=point.index, turn=point.turn, history=point.history, messages=len(stats.rendered),
            input_tokens=stats.input_tokens, cached_tokens=cached, budget=stats.budget, fill=fill,
            over_budget=stats.budget is not None and stats.input_tokens > stats.budget,
            reductions=len(stats.reductions), new_reductions=len(new), new_stages=stages, removed=stats.removed,
            openai_cached_tokens=by_openai.read, anthropic_read_tokens=by_anthropic.read,
            anthropic_write_tokens=by_anthropic.written, anthropic_write_long_tokens=by_anthropic.written_long, time=now,
        ))
        if on_call is not None:
            on_call(len(results), len(points))
    return ReplayResult(results, price_per_mtok, cached_discount, dict(prices or DEFAULT_PRICES))


def builder_requests(
    builder: Any, messages: Sequence[Mapping[str, Any]], state: Mapping[str, Any] | None = None,
    runtime: Mapping[str, Any] | None = None, on_build: Callable[[int, Any], None] | None = None,
) -> Callable[[int], RequestStats]:
    """A request function for :func:`replay_requests` that builds with ``builder`` (one builder for every call).

    ``state`` holds the other state keys (``tools``...); ``state["messages"]``
    is the history so far. Rendered dicts of unchanged messages are reused
    from the previous call, so a call costs what its build costs.
    ``on_build(history_length, built)`` sees every :class:`BuiltContext`
    (the replay page keeps each call's report, ``ctx diff`` compares two).
    """
    base = dict(state or {})
    run = dict(runtime or {})
    counter = builder.counter
    rendered_by_id: dict[int, tuple[Message, dict[str, Any]]] = {}

    def request(history: int) -> RequestStats:
        nonlocal rendered_by_id
        built = builder.build({**base, "messages": messages[:history]}, run)
        if on_build is not None:
            on_build(history, built)
        report = built.report
        memo: dict[int, tuple[Message, dict[str, Any]]] = {}
        rendered = []
        for m in built.messages:
            hit = rendered_by_id.get(id(m))
            d = hit[1] if hit is not None and hit[0] is m else m.to_openai()
            memo[id(m)] = (m, d)
            rendered.append(d)
        rendered_by_id = memo
        compressions = report.compressions
        marks = _breakpoints(built)
        return RequestStats(
            cache_breakpoints=tuple(b for b, _ in marks),
            cache_ttls=tuple(t for _, t in marks),
            rendered=rendered,
            message_tokens=[counter.count_message(m) for m in built.messages],
            input_tokens=report.total_tokens,
            budget=report.budget,
            tool_tokens=report.tool_tokens,
            tools=base.get("tools"),
            reductions=tuple(c.new_id for c in compressions),
            stages=tuple(c.stage for c in compressions),
            removed=report.removed_count,
            warnings=len(report.warnings),
        )

    return request


def replay(
    builder: Any,
    messages: Sequence[Mapping[str, Any]],
    *,
    state: Mapping[str, Any] | None = None,
    runtime: Mapping[str, Any] | None = None,
    price_per_mtok: float = 3.0,
    cached_discount: float = 0.1,
    on_call: Callable[[int, int], None] | None = None,
    times: Sequence[float | None] | None = None,
    prices: Mapping[str, Price] | None = None,
) -> ReplayResult:
    """Replay ``messages`` through ``builder`` (a :class:`~ctxcore.engine.builder.ContextBuilder`).

    ``cached_discount`` is the fraction of the price a cached input token costs
    (0.1: cached tokens cost 10% of ``price_per_mtok``). Anthropic's minimum
    cacheable length is the builder target's (``cache_min_tokens`` or its model's).
    """
    return replay_requests(
        messages, builder_requests(builder, messages, state, runtime),
        price_per_mtok=price_per_mtok, cached_discount=cached_discount, on_call=on_call,
        times=times, prices=prices, anthropic_min_tokens=anthropic_minimum(builder),
        openai_lifetime=openai_lifetime(builder),
    )


def openai_lifetime(builder: Any) -> float:
    """How long OpenAI keeps a prefix for ``builder``'s target: its ``prompt_cache_options.ttl``, else 5 minutes."""
    options = getattr(getattr(builder, "target", None), "prompt_cache_options", None)
    ttl = getattr(options, "ttl", None)
    return TTL_SECONDS[ttl] if ttl else LIFETIME_SECONDS


def anthropic_minimum(builder: Any) -> int:
    """The minimum cacheable length ``builder``'s target applies (1,024 without a target)."""
    target = getattr(builder, "target", None)
    if target is None:
        return DEFAULT_MIN_CACHEABLE
    return target.cache_min_tokens or min_cacheable_tokens(target.model)


def _breakpoints(built: Any) -> tuple[tuple[int, str], ...]:
    """The build's Anthropic cache plan as (index into its messages, ttl) pairs (-1: the tools).

    The top-level automatic breakpoint counts as a mark on the last message.
    """
    plan = getattr(built, "cache", None)
    if plan is None:
        return ()
    marks = [(i, plan.ttl_of("messages", i)) for i in plan.messages]
    if plan.top_level and built.messages:
        marks.append((len(built.messages) - 1, plan.ttl))
    if plan.system:
        marks.append((max(i for i, m in enumerate(built.messages) if m.role == "system"), plan.ttl_of("system", -1)))
    if plan.tools:
        marks.append((-1, plan.ttl_of("tools", -1)))
    return tuple(sorted(set(marks)))


def _turns(calls: Sequence[CallResult]) -> list[TurnResult]:
    out: list[TurnResult] = []
    group: list[CallResult] = []

    def close() -> None:
        fills = [c.fill for c in group if c.fill is not None]
        out.append(TurnResult(
            turn=group[0].turn, calls=len(group), input_tokens=sum(c.input_tokens for c in group),
            cached_tokens=sum(c.cached_tokens for c in group), fill=max(fills) if fills else None,
            over_budget=sum(1 for c in group if c.over_budget), new_reductions=sum(c.new_reductions for c in group),
            removed=group[-1].removed,
        ))

    for c in calls:
        if group and c.turn != group[0].turn:
            close()
            group = []
        group.append(c)
    if group:
        close()
    return out
