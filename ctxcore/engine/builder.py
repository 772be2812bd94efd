"""ContextBuilder: providers -> filters -> BuiltContext.

The builder owns the order of a build: every provider contributes messages
(stamped with its step id as ``source``), every filter transforms the sequence,
the steps after the filters (:mod:`ctxcore.engine.output`) repair, start,
validate and count the output once through the shared count cache, and it is
returned with a report of every decision.

Invariant: what a build returns depends only on its components and inputs,
never on the builds before it; the memos a builder keeps across builds
(stamped copies, the legality walk, the checked filter results, the last
output) only skip work whose answer they prove unchanged. Why: a next turn
is the last one plus a message, and ``ContextBuilder(reuse=False)`` gives the
same result without them, for comparison.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any

import structlog

from ctxcore.engine.budget import CachedCounter, FilterContext, ModelBudget
from ctxcore.engine.char_budget import check_input_chars, check_schema_chars
from ctxcore.engine.lazy import LazyMessages, MessageChain, PrefixMemo, is_lazy
from ctxcore.engine.output import OutputSteps
from ctxcore.engine.protocols import TokenCounter
from ctxcore.engine.report import BuildReport, ComponentTiming
from ctxcore.engine.reuse import shared_runs
from ctxcore.engine.steps import (
    BuiltContext,
    Step,
    as_steps,
    coerce_messages,
    preset_factory,
    register_preset_factories,
)
from ctxcore.engine.telemetry import build_span, component_span, get_tracer, record_build
from ctxcore.errors import BudgetExceeded, ComponentError, InvalidHistory
from ctxcore.model.blocks import CompactionState, before_compaction, compaction_boundary_of, compaction_fold
from ctxcore.model.messages import Message, copied_message
from ctxcore.model.transactions import open_calls_after, sanitize_tool_call_history
from ctxcore.render.target import TargetSpec

__all__ = ["Step", "BuiltContext", "ContextBuilder", "coerce_messages", "register_preset_factories"]

log = structlog.get_logger("ctxcore.builder")

# Errors that describe the request, not a broken component: never wrapped, never skipped.
_PASS_THROUGH = (BudgetExceeded, InvalidHistory)


class ContextBuilder(OutputSteps):
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
        reuse: check a next turn's output from the last one's (the default);
            ``False`` runs every step after the filters in full each build, with
            the same result (for comparing against the fast path).
        name: the pipeline's name, recorded on the build's trace span.
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
        reuse: bool = True,
        name: str | None = None,
    ) -> None:
        if counter is None:
            raise TypeError("ContextBuilder needs a token counter (for example ctxcore_counters.ApproximateCounter())")
        self.providers = as_steps(providers, "provider")
        self.filters = as_steps(filters, "filter")
        self.counter = counter if isinstance(counter, CachedCounter) else CachedCounter(counter)
        if isinstance(budget, int):
            budget = ModelBudget(context_window=budget)
        self.budget: ModelBudget | None = budget
        self.hooks = hooks
        self.check_pairing = check_pairing
        self.target = target or TargetSpec()
        self.tools = list(tools)
        self.warnings = list(warnings)
        self.reuse = reuse
        #: the pipeline's name, on the build's trace span (``ctxcore.pipeline``).
        self.name = name
        # step id -> {id(stored message): (stored, copy with source set)}, kept across builds
        self._stamped: dict[str, dict[int, tuple[Message, Message]]] = {}
        # step id -> (the tuple it returned last build, its stamped part): a provider returning the very
        # same tuple each build (a static prompt) gets the very same part, which the chain's proof reads by identity
        self._stamped_parts: dict[str, tuple[tuple[Message, ...], LazyMessages]] = {}
        self._history_walk: PrefixMemo[_Walked] = PrefixMemo()
        # filter step id -> a copy of its last result, which passed _check_filter_output
        self._filter_checked: dict[str, list[Message]] = {}
        self._init_output_steps()

    # --------------------------------------------------------------- presets
    # Thin entry points; the logic (and the parameters) live in ctxcore.pipeline.presets,
    # a layer above this one, which registers them (see register_preset_factories).
    @classmethod
    def for_chat(cls, *args: Any, **kwargs: Any) -> ContextBuilder:
        """Chat preset: persona -> bootstrap (optional) -> history (see :func:`ctxcore.pipeline.presets.for_chat`)."""
        return preset_factory("for_chat")(*args, **kwargs)

    @classmethod
    def for_react(cls, *args: Any, **kwargs: Any) -> ContextBuilder:
        """ReAct preset (see :func:`ctxcore.pipeline.presets.for_react`)."""
        return preset_factory("for_react")(*args, **kwargs)

    @classmethod
    def for_skill(cls, **kwargs: Any) -> ContextBuilder:
        """Skill preset (see :func:`ctxcore.pipeline.presets.for_skill`)."""
        return preset_factory("for_skill")(**kwargs)

    @classmethod
    def resolve_for_llm(cls, **kwargs: Any) -> Any:
        """Pick the builder for one LLM call (see :func:`ctxcore.pipeline.presets.resolve_for_llm`)."""
        return preset_factory("resolve_for_llm")(**kwargs)

    # ------------------------------------------------------------------ build
    def build(self, state: Mapping[str, Any] | None = None, runtime: Mapping[str, Any] | None = None) -> BuiltContext:
        """Run every provider then every filter; return the messages and the report.

        Order: providers, the compaction boundary (docs/blocks.md), history sanitizing, filters, legal start, pairing check
        and validation for the target provider, counting. With opentelemetry
        installed the build is a ``ctxcore.build`` span (docs/observability.md).

        Raises:
            ComponentError: a non-optional component raised.
            BudgetExceeded: a filter found the protected part alone over budget.
            InvalidHistory: the current turn is a broken tool transaction, or the
                result would break a rule of the target provider (``.index``).
        """
        state, runtime = state or {}, runtime or {}
        tracer = get_tracer()
        if tracer is None:
            return self._build(state, runtime)
        with build_span(tracer, self._span_attributes(runtime)) as span:
            built = self._build(state, runtime)
            if span is not None:
                record_build(span, built)
            return built

    def _build(self, state: Mapping[str, Any], runtime: Mapping[str, Any]) -> BuiltContext:
        report = self._new_report()
        parts: list[Sequence[Message]] = []
        for step in self.providers:
            with component_span(step.id, "provider", report):
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
        tracer = get_tracer()
        if tracer is None:
            return await self._abuild(state, runtime)
        with build_span(tracer, self._span_attributes(runtime)) as span:
            built = await self._abuild(state, runtime)
            if span is not None:
                record_build(span, built)
            return built

    async def _abuild(self, state: Mapping[str, Any], runtime: Mapping[str, Any]) -> BuiltContext:
        report = self._new_report()

        async def run(step: Step) -> tuple[Step, float, Any]:
            with component_span(step.id, "provider", report):
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

    def _span_attributes(self, runtime: Mapping[str, Any]) -> dict[str, Any]:
        """The ``ctxcore.build`` span's opening attributes: pipeline, target, budget, conversation."""
        thread = runtime.get("thread_id")
        return {
            "ctxcore.pipeline": self.name,
            "ctxcore.target": self.target.provider,
            "ctxcore.budget": self.budget.max_input_tokens if self.budget is not None else None,
            "gen_ai.conversation.id": thread if isinstance(thread, str) else None,
        }

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
            with component_span(step.id, "filter", report):
                started = time.perf_counter()
                try:
                    out = step.component.apply(messages, ctx)
                    if out is messages and lazy:  # passed through as it came: nothing to check or list, and the
                        report.timings.append(  # next filter keeps the lazy view (and its fast path)
                            ComponentTiming(step.id, "filter", time.perf_counter() - started, len(messages), len(messages)))
                        continue
                    result = list(out)
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
        tail = shared_runs(previous, result)[1] if previous and self.reuse else 0
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

    def _sanitize(self, messages: Sequence[Message], walked: _Walked | None, report: BuildReport) -> Sequence[Message]:
        """History sanitizing; a lazy ``messages`` is the whole chain ``walked`` read, legal when no call is left open."""
        if self.target.sanitize == "off":
            return messages
        if is_lazy(messages):
            if walked is not None:
                legal = walked[0] == frozenset()
            else:
                legal = open_calls_after(messages.structure, frozenset()) == frozenset()  # type: ignore[attr-defined]
            if legal:
                return messages  # the common case: nothing to repair, nothing materialised
            messages = list(messages)
        result = sanitize_tool_call_history(messages, backfill=self.target.sanitize == "backfill")
        if result.removed:
            report.record_dropped(result.removed, by="sanitize")
        for note in result.notes:
            log.info("history_sanitized", detail=note)
            report.warnings.append(note)
        return result.messages

    def _walk_history(self, messages: MessageChain) -> _Walked | None:
        """The tool calls left open after the chain and its compaction boundary, walking only what is new.

        One left fold (PrefixMemo.walk, part by part): nothing is open and no
        compaction seen after a system prompt, so a prompt whose text changed is
        walked again and the history resumes. ``None`` without ``reuse`` (the
        steps then scan in full).
        """
        if not self.reuse:
            return None
        return self._history_walk.walk(messages.structure, (frozenset(), None), _history_step)

    def _past_compaction(self, messages: MessageChain, walked: _Walked | None, report: BuildReport) -> Sequence[Message]:
        """What the provider reads: nothing before the newest compaction block/item but system messages (docs/blocks.md)."""
        start = None if walked is None else compaction_boundary_of(walked[1], messages.structure)
        kept, dropped = before_compaction(messages, start)
        if dropped:
            report.record_dropped(dropped, by="compaction")
        return kept

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
        walked = self._walk_history(messages)
        sanitized = self._sanitize(self._past_compaction(messages, walked, report), walked, report)
        output, tokens = self._final_output(self._run_filters(sanitized, runtime, report, budget), sanitized,
                                            tool_tokens, report)
        return self._checked(output, tokens, origin, tool_tokens, report, tuple(tools), runtime.get("thread_id"))

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
        report.notes.extend(self.target.server_notes(report.total_tokens))
        built = BuiltContext(messages=tuple(messages), report=report, tools=tools, cache=cache, target=self.target, thread=thread)
        self._notify(built)
        return built

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

    Invariant: the copy equals ``model_copy(update={"source": source})``; it is
    made by :func:`~ctxcore.model.messages.copied_message`, without pydantic's
    copy machinery, because every new message of every build is stamped. One
    update mapping serves every copy (it is read, never kept).
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


#: The history walk's state: the tool calls still open (``None``: already illegal) and the compaction fold's state.
_Walked = tuple[frozenset[str] | None, CompactionState]


def _history_step(state: _Walked, messages: Sequence[Message]) -> _Walked:
    """One leg of the history walk (PrefixMemo.walk): legality and the compaction boundary, one left fold each."""
    pending = state[0]
    return open_calls_after(messages, pending) if pending is not None else None, compaction_fold(state[1], messages)
