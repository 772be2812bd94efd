"""ContextBuilder: providers -> filters -> BuiltContext.

The builder owns the order of a build: every provider contributes messages
(stamped with its step id as ``source``), every filter transforms the sequence,
the output is checked for tool-call pairing, counted once through the shared
count cache, and returned with a report of every decision. A next turn's
output is checked from the last one's (:mod:`ctxcore.engine.reuse`): only its
new messages get the per-message steps.
"""

from __future__ import annotations

import asyncio
import operator
import re
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import structlog

from ctxcore.engine.budget import CachedCounter, FilterContext, ModelBudget
from ctxcore.engine.char_budget import check_input_chars, check_schema_chars
from ctxcore.engine.lazy import (
    LazyMessages,
    MessageChain,
    PrefixMemo,
    is_lazy,
)
from ctxcore.engine.protocols import TokenCounter
from ctxcore.engine.report import BuildReport, ComponentTiming
from ctxcore.engine.reuse import OutputMemo, Reused, shared_runs
from ctxcore.errors import BudgetExceeded, ComponentError, InvalidHistory
from ctxcore.model.messages import Message, copied_message
from ctxcore.model.transactions import (
    check_tool_pairing,
    legal_start,
    open_calls_after,
    sanitize_tool_call_history,
)
from ctxcore.render import to_anthropic, to_openai_responses, validate_request
from ctxcore.render.caching import CachePlan, min_cacheable_tokens, plan_anthropic_cache
from ctxcore.render.openai import check_openai_message
from ctxcore.render.repair import RepairCache, repair_past
from ctxcore.render.target import TargetSpec

__all__ = ["Step", "BuiltContext", "ContextBuilder", "coerce_messages", "register_preset_factories"]

log = structlog.get_logger("ctxcore.builder")

# Errors that describe the request, not a broken component: never wrapped, never skipped.
_PASS_THROUGH = (BudgetExceeded, InvalidHistory)


# The preset constructors behind ContextBuilder.for_chat & co. They live in the pipeline
# layer (they compile shipped YAML pipelines), which registers them when it is imported
# (``import ctxcore`` does), so the engine never imports a layer above it.
_PRESET_FACTORIES: dict[str, Callable[..., Any]] = {}


def register_preset_factories(**factories: Callable[..., Any]) -> None:
    """Install the constructors behind :meth:`ContextBuilder.for_chat` and its siblings.

    Called once by :mod:`ctxcore.pipeline.presets`; keys are the classmethod names
    (``for_chat``, ``for_react``, ``for_skill``, ``resolve_for_llm``).
    """
    _PRESET_FACTORIES.update(factories)


def _preset_factory(name: str) -> Callable[..., Any]:
    try:
        return _PRESET_FACTORIES[name]
    except KeyError:  # only when the engine is used without the package that owns it
        raise RuntimeError(f"ContextBuilder.{name} needs the pipeline layer: import ctxcore.pipeline.presets first") from None


@dataclass(frozen=True)
class Step:
    """A component placed in a pipeline: its id, the object, and whether failure is fatal."""

    id: str
    component: Any
    optional: bool = False


@dataclass(frozen=True)
class BuiltContext:
    """The result of a build: the messages to send, the tools sent with them, and the report explaining them.

    ``tools`` are the builder's tools plus the state's, as given (OpenAI function
    tools are the usual form); the renderers convert them per provider.
    """

    messages: tuple[Message, ...]
    report: BuildReport = field(repr=False)
    tools: tuple[Mapping[str, Any], ...] = ()
    #: the Anthropic ``cache_control`` breakpoints (``target.cache: auto``), or ``None``.
    cache: CachePlan | None = None

    def to_openai(self) -> list[dict[str, Any]]:
        """The messages as OpenAI chat-completions dicts (send ``tools`` alongside as given)."""
        return [m.to_openai() for m in self.messages]

    def to_openai_responses(self) -> dict[str, Any]:
        """The OpenAI Responses API body: ``input`` items, and ``tools`` when the build has any."""
        return to_openai_responses(self.messages, self.tools)

    def to_anthropic(self) -> dict[str, Any]:
        """The Anthropic Messages API body: ``system`` blocks, alternating ``messages``, and ``tools`` when any."""
        return to_anthropic(self.messages, self.tools, self.cache)


def coerce_messages(items: Iterable[Message | Mapping[str, Any]]) -> list[Message]:
    """Accept :class:`Message` objects or OpenAI dicts; return messages.

    Raises:
        ValueError: an item is neither; the message names its index.
    """
    out: list[Message] = []
    for i, item in enumerate(items):
        if isinstance(item, Message):
            out.append(item)
        elif isinstance(item, Mapping):
            try:
                out.append(Message.from_openai(item))
            except (ValueError, TypeError, KeyError) as exc:
                raise ValueError(f"message {i}: {exc}") from exc
        else:
            raise ValueError(f"message {i}: expected a Message or a dict, got {type(item).__name__}")
    return out


def _as_steps(items: Sequence[Any], kind: str) -> list[Step]:
    steps: list[Step] = []
    seen: set[str] = set()
    for i, item in enumerate(items):
        step = item if isinstance(item, Step) else Step(id=_default_id(item, kind, i), component=item)
        if step.id in seen:
            step = Step(id=f"{step.id}#{i}", component=step.component, optional=step.optional)
        seen.add(step.id)
        steps.append(step)
    return steps


def _default_id(component: Any, kind: str, index: int) -> str:
    """An explicit ``id`` attribute, else the class name in snake case (``StaticPrompt`` -> ``static_prompt``)."""
    name = getattr(component, "id", None)
    if isinstance(name, str) and name:
        return name
    snake = re.sub(r"(?<!^)(?=[A-Z])", "_", type(component).__name__).lower()
    return snake or f"{kind}s[{index}]"


class ContextBuilder:
    """Assembles one model request from providers and filters.

    Args:
        providers: objects with ``get_messages`` (or :class:`Step` wrappers), in order.
        filters: objects with ``apply`` (or :class:`Step` wrappers), in order.
        counter: the token counter; wrapped in a :class:`CachedCounter` that lives
            as long as the builder, so repeated builds never re-tokenize a message.
        budget: the model budget (or a plain input-token limit) filters default to.
        hooks: a pluggy hook relay; ``on_build_complete`` is called once per build.
        check_pairing: refuse to return a request with unpaired tool calls/results.
        target: the request rules (:class:`TargetSpec`): history sanitizing before
            the filters, legal start and provider validation after them.
        tools: tool schemas (OpenAI function-tool dicts) sent with every request;
            their tokens are taken from the budget before the filters run. A
            state's ``tools`` list is added per build.
        warnings: standing warnings copied into every report (e.g. optional
            components a pipeline could not create).
    """

    def __init__(
        self,
        providers: Sequence[Any],
        filters: Sequence[Any] = (),
        counter: TokenCounter | CachedCounter | None = None,
        *,
        budget: ModelBudget | int | None = None,
        hooks: Any = None,
        check_pairing: bool = True,
        target: TargetSpec | None = None,
        tools: Sequence[Mapping[str, Any]] = (),
        warnings: Sequence[str] = (),
    ) -> None:
        if counter is None:
            raise TypeError("ContextBuilder needs a token counter (for example ctxcore_counters.ApproximateCounter())")
        self.providers = _as_steps(providers, "provider")
        self.filters = _as_steps(filters, "filter")
        self.counter = counter if isinstance(counter, CachedCounter) else CachedCounter(counter)
        if isinstance(budget, int):
            budget = ModelBudget(context_window=budget)
        self.budget: ModelBudget | None = budget
        self.hooks = hooks
        self.check_pairing = check_pairing
        self.target = target or TargetSpec()
        self.tools = list(tools)
        self.warnings = list(warnings)
        # step id -> {id(stored message): (stored, copy with source set)}, kept across builds
        self._stamped: dict[str, dict[int, tuple[Message, Message]]] = {}
        # step id -> (the tuple it returned last build, its stamped part): a provider returning the very
        # same tuple each build (a static prompt) gets the very same part, which the chain's proof reads by identity
        self._stamped_parts: dict[str, tuple[tuple[Message, ...], LazyMessages]] = {}
        self._legality: PrefixMemo[tuple[frozenset[str] | None]] = PrefixMemo()
        self._repairs = RepairCache()  # past-message repair decisions, by message object
        # provider -> {id(message): message} of output messages that passed its per-message rules
        self._valid: dict[str, dict[int, Message]] = {}
        # the last output that every step after the filters left unchanged, with its counts (engine.reuse)
        self._output = OutputMemo()
        # filter step id -> a copy of its last result, which passed _check_filter_output
        self._filter_checked: dict[str, list[Message]] = {}
        # thread id -> (system fingerprints, other fingerprints) of its last build, for cache breakpoints
        self._sent: OrderedDict[Any, tuple[tuple[str, ...], tuple[str, ...]]] = OrderedDict()

    # --------------------------------------------------------------- presets
    # Thin entry points; the logic (and the parameters) live in ctxcore.pipeline.presets,
    # a layer above this one, which registers them (see register_preset_factories).
    @classmethod
    def for_chat(cls, *args: Any, **kwargs: Any) -> ContextBuilder:
        """Chat preset: persona -> bootstrap (optional) -> history (see :func:`ctxcore.pipeline.presets.for_chat`)."""
        return _preset_factory("for_chat")(*args, **kwargs)

    @classmethod
    def for_react(cls, *args: Any, **kwargs: Any) -> ContextBuilder:
        """ReAct preset (see :func:`ctxcore.pipeline.presets.for_react`)."""
        return _preset_factory("for_react")(*args, **kwargs)

    @classmethod
    def for_skill(cls, **kwargs: Any) -> ContextBuilder:
        """Skill preset (see :func:`ctxcore.pipeline.presets.for_skill`)."""
        return _preset_factory("for_skill")(**kwargs)

    @classmethod
    def resolve_for_llm(cls, **kwargs: Any) -> Any:
        """Pick the builder for one LLM call (see :func:`ctxcore.pipeline.presets.resolve_for_llm`)."""
        return _preset_factory("resolve_for_llm")(**kwargs)

    # ------------------------------------------------------------------ build
    def build(self, state: Mapping[str, Any] | None = None, runtime: Mapping[str, Any] | None = None) -> BuiltContext:
        """Run every provider then every filter; return the messages and the report.

        Order: providers, history sanitizing, filters, legal start, pairing check
        and validation for the target provider, counting.

        Raises:
            ComponentError: a non-optional component raised.
            BudgetExceeded: a filter found the protected part alone over budget.
            InvalidHistory: the current turn is a broken tool transaction, or the
                result would break a rule of the target provider (``.index``).
        """
        state, runtime = state or {}, runtime or {}
        report = self._new_report()
        parts: list[Sequence[Message]] = []
        for step in self.providers:
            started = time.perf_counter()
            try:
                produced = step.component.get_messages(state, runtime)
            except _PASS_THROUGH:
                raise
            except Exception as exc:
                self._component_failed(step, "provider", exc, report, started)
                continue
            parts.append(self._stamp(step, produced, report, started))
        return self._finish(MessageChain(parts), state, runtime, report)

    async def abuild(self, state: Mapping[str, Any] | None = None, runtime: Mapping[str, Any] | None = None) -> BuiltContext:
        """Like :meth:`build`, awaiting providers' ``aget_messages`` concurrently."""
        state, runtime = state or {}, runtime or {}
        report = self._new_report()

        async def run(step: Step) -> tuple[Step, float, Any]:
            started = time.perf_counter()
            fn = getattr(step.component, "aget_messages", None)
            try:
                if fn is not None:
                    return step, started, await fn(state, runtime)
                return step, started, step.component.get_messages(state, runtime)
            except _PASS_THROUGH:
                raise
            except Exception as exc:  # collected, handled in order below
                return step, started, exc

        results = await asyncio.gather(*(run(s) for s in self.providers))
        parts: list[Sequence[Message]] = []
        for step, started, produced in results:
            if isinstance(produced, BaseException):
                self._component_failed(step, "provider", produced, report, started)
                continue
            parts.append(self._stamp(step, produced, report, started))
        return self._finish(MessageChain(parts), state, runtime, report)

    def transform(self, messages: Iterable[Message | Mapping[str, Any]], runtime: Mapping[str, Any] | None = None) -> list[Message]:
        """Run only the filters over ``messages`` (Messages or OpenAI dicts)."""
        report = self._new_report()
        return self._run_filters(coerce_messages(messages), runtime or {}, report)

    # ---------------------------------------------------------------- phases
    def _new_report(self) -> BuildReport:
        report = BuildReport(budget=self.budget.max_input_tokens if self.budget else None, _counter=self.counter)
        report.warnings.extend(self.warnings)
        report._cache_start = (self.counter.hits, self.counter.misses)
        return report

    def _stamp(self, step: Step, produced: Any, report: BuildReport, started: float) -> Sequence[Message]:
        """The provider's messages with ``source`` set to the step id, stamped lazily.

        A message is copied the first time it is read, and the copy is remembered
        by the stored object across builds (messages are immutable), so a
        provider returning the same history each turn pays no copy and a build
        copies only what it reads.
        """
        last = self._stamped_parts.get(step.id)
        if last is not None and last[0] is produced:  # the same tuple as last build (a static prompt): same stamped part
            report.timings.append(ComponentTiming(step.id, "provider", time.perf_counter() - started, 0, len(last[1].structure)))
            return last[1]
        memo = self._stamped.setdefault(step.id, {})
        if type(produced) is LazyMessages or (type(produced) is not tuple and isinstance(produced, LazyMessages)):
            out = produced
        else:
            items = list(produced) if produced is not None else []
            for i, m in enumerate(items):
                if not isinstance(m, Message):
                    exc = TypeError(f"item {i} is a {type(m).__name__}, not a ctxcore Message")
                    self._component_failed(step, "provider", exc, report, started)
                    return []
            out = LazyMessages(items)
        size = len(out.structure)
        if len(memo) > 2 * size + 64:  # forget copies of messages the provider no longer returns
            alive = set(map(id, out.structure))
            memo = self._stamped[step.id] = {k: v for k, v in memo.items() if k in alive}
        report.timings.append(ComponentTiming(step.id, "provider", time.perf_counter() - started, 0, size))
        stamped = out.map(_stamper(step.id), memo)
        if type(produced) is tuple:  # immutable: the next build may reuse the stamped part as it is
            self._stamped_parts[step.id] = (produced, stamped)
        else:
            self._stamped_parts.pop(step.id, None)
        return stamped

    def _run_filters(
        self, messages: Sequence[Message], runtime: Mapping[str, Any], report: BuildReport, budget: int | None = None
    ) -> list[Message]:
        if budget is None and self.budget is not None:
            budget = self.budget.max_input_tokens
        for step in self.filters:
            lazy = is_lazy(messages)
            if lazy and not getattr(step.component, "accepts_lazy", False):
                messages, lazy = list(messages), False  # a filter that expects a list gets one
            before = messages if lazy else tuple(messages)  # what the report lists drops from: a filter may change a list
            ctx = FilterContext(counter=self.counter, budget=budget, runtime=runtime, report=report, step_id=step.id)
            started = time.perf_counter()
            try:
                result = list(step.component.apply(messages, ctx))
                self._check_filter_result(step.id, result)
            except _PASS_THROUGH:
                raise
            except Exception as exc:
                self._component_failed(step, "filter", exc, report, started)
                continue
            report.record_filtered(before, result, by=step.id)  # listed when the report is read
            report.timings.append(
                ComponentTiming(step.id, "filter", time.perf_counter() - started, len(messages), len(result))
            )
            messages = result
        return list(messages)

    def _check_filter_result(self, step_id: str, result: list[Message]) -> None:
        """:func:`_check_filter_output` on the messages of ``result`` not in the step's last (checked) result.

        The shared runs are found by pointer (:func:`~ctxcore.engine.reuse.shared_runs`);
        a copy of the result is kept, so a later step mutating the list cannot change what was checked.
        """
        previous = self._filter_checked.pop(step_id, None)
        tail = shared_runs(previous, result)[1] if previous else 0
        _check_filter_output(result, tail)
        self._filter_checked[step_id] = result.copy()

    def _tools(self, state: Mapping[str, Any]) -> list[Mapping[str, Any]]:
        tools = list(self.tools)
        extra = state.get("tools")
        if extra is not None:
            if not isinstance(extra, (list, tuple)) or not all(isinstance(t, Mapping) for t in extra):
                raise ValueError("state['tools'] must be a list of tool definitions (JSON objects)")
            tools.extend(extra)
        return tools

    def _tool_tokens(self, tools: list[Mapping[str, Any]], report: BuildReport | None = None) -> int:
        if self.budget is not None and self.budget.max_schema_chars is not None:
            check_schema_chars(tools, self.budget.max_schema_chars, report)
        return self.counter.count_tools(tools) if tools else 0

    def _sanitize(self, messages: Sequence[Message], report: BuildReport) -> Sequence[Message]:
        if self.target.sanitize == "off":
            return messages
        if is_lazy(messages):
            if self._is_legal(messages.structure):  # type: ignore[attr-defined]
                return messages  # the common case: nothing to repair, nothing materialised
            messages = list(messages)
        result = sanitize_tool_call_history(messages, backfill=self.target.sanitize == "backfill")
        if result.removed:
            report.record_dropped(result.removed, by="sanitize")
        for note in result.notes:
            log.info("history_sanitized", detail=note)
            report.warnings.append(note)
        return result.messages

    def _repair_past(self, messages: list[Message], report: BuildReport) -> list[Message]:
        """Repair or drop past messages the target cannot take (decided once per message, see render.repair)."""
        result = repair_past(messages, self.target.provider, self._repairs)
        if result.dropped:
            report.record_dropped(result.dropped, by="sanitize")
        for note in result.notes:
            log.info("history_repaired", detail=note)
            report.notes.append(note)
        return result.messages

    def _is_legal(self, structure: Sequence[Message]) -> bool:
        """Tool-call legality of ``structure``, walking only what is new since the last build.

        Part by part (PrefixMemo.walk): nothing is open after a system prompt, so
        a prompt whose text changed is walked again and the history resumes.
        """
        return self._legality.walk(structure, (frozenset(),), _legality_step)[0] == frozenset()

    def _legal_start(
        self, messages: list[Message], history: Sequence[Message], tool_tokens: int, report: BuildReport
    ) -> tuple[list[Message], bool]:
        """The output with a legal start, and whether an earlier user message was recovered into it."""
        budget = self.budget.max_input_tokens if self.budget else None

        def fits(m: Message) -> bool:  # only called when a recovery is possible
            if budget is None:
                return True
            used = self.counter.count_messages(messages) + tool_tokens
            return used + self.counter.count_message(m) <= budget

        result = legal_start(messages, history=history if self.target.recover_user else None, fits=fits)
        if result.dropped:
            report.record_dropped(result.dropped, by="legal_start")
        if result.recovered is not None:
            report.record_recovered(result.recovered)
            text = " ".join(result.recovered.text.split())
            text = text if len(text) <= 60 else text[:59] + "…"
            report.notes.append(f"legal_start recovered the earlier user message {text!r} so the request starts with the user")
        return result.messages, result.recovered is not None

    def _finish(
        self, messages: MessageChain, state: Mapping[str, Any], runtime: Mapping[str, Any], report: BuildReport
    ) -> BuiltContext:
        origin = messages
        tools = self._tools(state)
        tool_tokens = self._tool_tokens(tools, report)
        budget = None
        if self.budget is not None:
            budget = self.budget.max_input_tokens - tool_tokens
            if budget < 0:
                raise BudgetExceeded(
                    f"the tool schemas alone need {tool_tokens} tokens but the input budget is "
                    f"{self.budget.max_input_tokens}; send fewer tools or raise model.context_window",
                    budget=self.budget.max_input_tokens, required=tool_tokens + self.counter.priming, report=report,
                )
        sanitized = self._sanitize(messages, report)
        output = self._run_filters(sanitized, runtime, report, budget)
        key = self._reuse_key()
        reused = self._reuse_output(output, key) if key is not None else None
        if reused is not None:
            if reused.dropped:
                report.record_dropped(reused.dropped, by="legal_start")
            output = reused.messages
            tokens = reused.shared_counts + self.counter.count_each(output[reused.tail:])
            self.counter.hits += reused.tail  # as count_each would have answered them
            self._output.save(output, tokens, key)
        else:
            repaired = self._repair_past(output, report) if self.target.sanitize != "off" else output
            clean = len(repaired) == len(output) and all(map(operator.is_, repaired, output))
            output = repaired
            if self.target.legal_start:
                output, recovered = self._legal_start(output, sanitized, tool_tokens, report)
                clean = clean and not recovered
            tokens = self._validated_counts(output, report)
            if key is not None and clean:  # every past message sendable as it is: the next build may reuse it
                self._output.save(output, tokens, key)
            else:
                self._output.forget()
        return self._checked(output, tokens, origin, tool_tokens, report, tuple(tools), runtime.get("thread_id"))

    def _reuse_key(self) -> tuple[Any, ...] | None:
        """The settings an :class:`~ctxcore.engine.reuse.OutputMemo` holds for, or ``None`` when it cannot be used.

        The memo needs an output that passed the pairing walk: OpenAI validation
        or the plain pairing check (Anthropic's validation has rules across
        messages the memo does not track).
        """
        t = self.target
        if t.validate_request and t.provider != "openai":
            return None
        if not t.validate_request and not self.check_pairing:
            return None
        return (t.provider, t.validate_request, t.sanitize, t.legal_start, t.recover_user)

    def _reuse_output(self, output: list[Message], key: tuple[Any, ...]) -> Reused | None:
        """The counts of the messages ``output`` shares with the last output, when only its new tail needed checks."""
        provider = self.target.provider
        valid = self._valid.setdefault(provider, {})
        validate = self.target.validate_request

        def check_new(m: Message, index: int) -> bool:
            if not validate or valid.get(id(m)) is m:
                return True
            try:
                check_openai_message(m, index)
            except InvalidHistory:
                return False  # the full steps raise it, with a fresh build's index and message
            valid[id(m)] = m
            return True

        repairs = self._repairs

        def repaired(m: Message) -> bool:
            fixed, reason = repairs.get(m, provider)
            return fixed is not m or reason is not None

        result = self._output.reuse(output, key, check_new, repaired if self.target.sanitize != "off" else None,
                                    self.target.legal_start, self.target.recover_user)
        if result is not None:
            repairs.forget_all_but(result.messages)
            if len(valid) > 2 * len(result.messages) + 1024:
                self._valid[provider] = {id(m): m for m in result.messages}
        return result

    def _validated_counts(self, messages: list[Message], report: BuildReport) -> list[int]:
        """Validate the output for the target (or check its pairing) and count each message."""
        if self.target.validate_request:
            self._validate(messages)  # includes the pairing check
        elif self.check_pairing:
            check_tool_pairing(messages)
        return self.counter.count_each(messages)

    def _checked(
        self, messages: list[Message], tokens: list[int], origin: MessageChain, tool_tokens: int, report: BuildReport,
        tools: tuple[Mapping[str, Any], ...] = (), thread: Any = None,
    ) -> BuiltContext:
        """Check the character limit, record the counted output; notify observers."""
        if self.budget is not None and self.budget.max_input_chars is not None:
            check_input_chars(messages, self.budget.max_input_chars, report)
        report.tool_tokens = tool_tokens
        report.total_tokens = sum(tokens) + self.counter.priming + tool_tokens
        if report.budget is not None and report.total_tokens > report.budget:
            report.warnings.append(
                f"the request needs {report.total_tokens} tokens, over the {report.budget}-token input budget"
            )
        report.record_output(messages, tokens, added_ids=lambda: {m.id for m in messages if not origin.has_id(m.id)})
        # This build's share of the cache traffic (the cache outlives builds).
        report.cache_hits = self.counter.hits - report._cache_start[0]
        report.cache_misses = self.counter.misses - report._cache_start[1]
        cache = self._cache_plan(messages, tokens, tool_tokens, bool(tools), thread)
        if cache is not None and cache.count:
            report.notes.append(
                f"cache: {cache.count} cache_control breakpoint(s); {cache.reused} leading message(s) as in the previous build"
            )
        built = BuiltContext(messages=tuple(messages), report=report, tools=tools, cache=cache)
        self._notify(built)
        return built

    def _validate(self, messages: list[Message]) -> None:
        """``validate_request`` on the output, OpenAI's per-message rules only for messages not validated before.

        The output holds ``Message`` objects only (filter outputs are checked),
        which are frozen, so a message that passed OpenAI's per-message rules in
        an earlier build passes them again; the pairing walk sees the whole
        output every build. Errors (and their order) are validate_request's.
        """
        provider = self.target.provider
        if provider != "openai":
            validate_request(messages, provider)
            return
        check_tool_pairing(messages)
        valid = self._valid.setdefault(provider, {})
        for index, m in enumerate(messages):
            if valid.get(id(m)) is not m:
                check_openai_message(m, index)
                valid[id(m)] = m
        if len(valid) > 2 * len(messages) + 1024:  # remember only what the last output holds
            self._valid[provider] = {id(m): m for m in messages}

    def _cache_plan(
        self, messages: list[Message], tokens: list[int], tool_tokens: int, has_tools: bool, thread: Any
    ) -> CachePlan | None:
        """Anthropic breakpoints for ``cache: auto``: one pass over the output's fingerprints (cached per message)."""
        target = self.target
        if target.provider != "anthropic" or target.cache != "auto":
            return None
        system = tuple(m.fingerprint for m in messages if m.role == "system")
        rest = tuple(m.fingerprint for m in messages if m.role != "system")
        previous = self._sent.pop(thread, None)
        reused = 0
        if previous is not None and previous[0] == system:
            for a, b in zip(previous[1], rest, strict=False):
                if a != b:
                    break
                reused += 1
        self._sent[thread] = (system, rest)
        if len(self._sent) > 1024:  # remember the most recent threads only
            self._sent.popitem(last=False)
        minimum = target.cache_min_tokens or min_cacheable_tokens(target.model)
        return plan_anthropic_cache([m.role for m in messages], tokens, tool_tokens, has_tools, reused, minimum)

    def _component_failed(self, step: Step, kind: str, exc: BaseException, report: BuildReport, started: float) -> None:
        if not step.optional:
            if isinstance(exc, ComponentError):
                raise exc
            raise ComponentError(step.id, kind, exc) from exc
        message = f"optional {kind} '{step.id}' skipped: {type(exc).__name__}: {exc}"
        log.warning("component_skipped", component=step.id, kind=kind, error=f"{type(exc).__name__}: {exc}")
        report.warnings.append(message)
        report.timings.append(ComponentTiming(step.id, kind, time.perf_counter() - started, skipped=True))

    def _notify(self, built: BuiltContext) -> None:
        """Call ``on_build_complete`` observers; a pluggy hook without implementations is not called at all.

        Checked every build (``get_hookimpls()``: a plugin registered after the
        builder was made is called from its next build on), which costs a
        fraction of a no-op hook call.
        """
        if self.hooks is None:
            return
        try:
            caller = self.hooks.on_build_complete
            impls = getattr(caller, "get_hookimpls", None)
            if impls is not None and not impls():
                return
            caller(context=built)
        except Exception as exc:  # an observer (or a relay without the hook) must not lose the caller's request
            log.error("observer_failed", hook="on_build_complete", error=f"{type(exc).__name__}: {exc}")
            built.report.warnings.append(f"on_build_complete observer failed: {type(exc).__name__}: {exc}")


@lru_cache(maxsize=256)
def _stamper(source: str) -> Callable[[Message], Message]:
    """The transform that sets ``source`` on messages that have none.

    The copy is :func:`~ctxcore.model.messages.copied_message` (what
    ``model_copy(update={"source": source})`` gives, without pydantic's copy
    machinery: every new message of a next turn is stamped, after a garbage
    collection in the bench, where each extra call is a cache miss). One update
    mapping serves every copy (it is read, never kept).
    """
    update = {"source": source}

    def stamp(m: Message) -> Message:
        if m.source is not None:
            return m
        return copied_message(m, update) if type(m) is Message else m.model_copy(update=update)

    return stamp


def _check_filter_output(result: list[Any], start: int = 0) -> None:
    """Filters return Messages and never promote untrusted content to the system role.

    The Message validator already forbids untrusted system messages, but
    ``model_copy`` skips validation, so the builder checks what filters return
    (from ``start``: the items before it passed this check in the last build).
    """
    for i in range(start, len(result)):
        m = result[i]
        if not isinstance(m, Message):
            raise TypeError(f"returned item {i} is a {type(m).__name__}, not a ctxcore Message")
        if m.role == "system" and m.trust == "untrusted":
            raise ValueError(f"returned item {i} puts untrusted content in the system role")


def _legality_step(state: tuple[frozenset[str] | None], messages: Sequence[Message]) -> tuple[frozenset[str] | None]:
    """One leg of the legality walk (PrefixMemo.walk): the calls still open after ``messages``, or ``None``."""
    pending = state[0]
    return (open_calls_after(messages, pending) if pending is not None else None,)
