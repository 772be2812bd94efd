"""The reference build: what :meth:`ContextBuilder.build` computes, written plainly, with nothing kept between builds.

:func:`reference_build` runs a builder's steps in the builder's order —
providers, the compaction boundary, history sanitizing, filters, repair of past messages, legal start,
request validation (or the pairing check), counting — on plain lists. Every
provider and filter that offers ``reference()`` is replaced by what that
returns, asked afresh for each build; the counter is a new
:class:`CachedCounter` around the builder's own counter. So no lazy view,
output memo, legality memo, stamp memo or shared count cache takes part, and a
bug in those is a difference between the two builds. The fast builder is held
equal to this one, messages and report, by a stateful property test
(tests/test_reference_equivalence.py); docs/architecture.md ("Build cost")
says why there are two paths.

What the reference does not do, on purpose: it calls no ``on_build_complete``
observer (a debugging build is not a request), it awaits nothing (providers'
``get_messages`` only), and with ``target.cache: auto`` it places Anthropic
breakpoints against the previous build it is given (it remembers none).
Timings and the count-cache traffic in its report are its own.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ctxcore.engine.budget import CachedCounter, FilterContext
from ctxcore.engine.builder import ContextBuilder
from ctxcore.engine.char_budget import check_input_chars, check_schema_chars
from ctxcore.engine.report import BuildReport, ComponentTiming
from ctxcore.engine.steps import BuiltContext, Step
from ctxcore.errors import BudgetExceeded, ComponentError, InvalidHistory
from ctxcore.model.blocks import before_compaction
from ctxcore.model.messages import Message
from ctxcore.model.transactions import check_tool_pairing, legal_start, sanitize_tool_call_history
from ctxcore.render import validate_request
from ctxcore.render.caching import CachePlan
from ctxcore.render.repair import repair_past

__all__ = ["reference_build", "reference_of"]

# Errors that describe the request, not a broken component: never wrapped, never skipped.
_PASS_THROUGH = (BudgetExceeded, InvalidHistory)


def reference_build(
    builder: Any, state: Mapping[str, Any] | None = None, runtime: Mapping[str, Any] | None = None,
    *, previous: BuiltContext | None = None,
) -> BuiltContext:
    """Build ``state`` the plain way with ``builder``'s steps and settings; the builder itself is not touched.

    Args:
        builder: a :class:`ContextBuilder`, or anything with a ``builder()``
            method returning one (a compiled :class:`~ctxcore.Pipeline`).
        state: the state a build reads (``messages``, ``tools``...).
        runtime: runtime values handed to providers and filters.
        previous: the last build of the same thread, which ``target.cache: auto``
            compares with to place its breakpoints (``None``: a first build).

    Returns:
        The messages and the report :meth:`ContextBuilder.build` returns for the
        same input (timings and count-cache traffic aside).

    Raises:
        The errors :meth:`ContextBuilder.build` raises, with the same messages.
    """
    if not isinstance(builder, ContextBuilder):
        make = getattr(builder, "builder", None)
        if not callable(make):
            raise TypeError(f"reference_build needs a ContextBuilder or a Pipeline, got {type(builder).__name__}")
        builder = make()
    return _Build(builder, dict(state or {}), dict(runtime or {}), previous).run()


def reference_of(component: Any) -> Any:
    """``component.reference()`` when the component has one (a new memo-free twin), else the component itself."""
    make = getattr(component, "reference", None)
    return make() if callable(make) else component


@dataclass
class _Build:
    """One reference build: the builder's settings, a fresh counter and the report being filled."""

    builder: ContextBuilder
    state: dict[str, Any]
    runtime: dict[str, Any]
    previous: BuiltContext | None
    counter: CachedCounter = field(init=False)
    report: BuildReport = field(init=False)

    def __post_init__(self) -> None:
        self.counter = CachedCounter(self.builder.counter.counter)
        budget = self.builder.budget
        self.report = BuildReport(budget=budget.max_input_tokens if budget else None, _counter=self.counter)
        self.report.warnings.extend(self.builder.warnings)

    def run(self) -> BuiltContext:
        """Providers, sanitizing, filters, then the output steps; see the module docstring."""
        target = self.builder.target
        provided = self._provide()
        tools = self._tools()
        tool_tokens = self._tool_tokens(tools)
        provided = self._past_compaction(provided)
        sanitized = self._sanitize(provided) if target.sanitize != "off" else provided
        output = self._filter(sanitized, self._filter_budget(tool_tokens))
        if target.sanitize != "off":
            output = self._repair(output)
        if target.legal_start:
            output = self._legal_start(output, sanitized, tool_tokens)
        if target.validate_request:
            validate_request(output, target.provider)
        elif self.builder.check_pairing:
            check_tool_pairing(output)
        tokens = self.counter.count_each(output)
        return self._finish(output, tokens, {m.id for m in provided}, tool_tokens, tuple(tools))

    # -------------------------------------------------------------- providers
    def _provide(self) -> list[Message]:
        """Every provider's messages, ``source`` set to the step id where a message has none."""
        out: list[Message] = []
        for step in self.builder.providers:
            started = time.perf_counter()
            try:
                produced = reference_of(step.component).get_messages(self.state, self.runtime)
            except _PASS_THROUGH:
                raise
            except Exception as exc:
                self._failed(step, "provider", exc, started)
                continue
            items = list(produced) if produced is not None else []
            wrong = next((i for i, m in enumerate(items) if not isinstance(m, Message)), None)
            if wrong is not None:
                wrong_type = TypeError(f"item {wrong} is a {type(items[wrong]).__name__}, not a ctxcore Message")
                self._failed(step, "provider", wrong_type, started)
                continue
            self.report.timings.append(ComponentTiming(step.id, "provider", time.perf_counter() - started, 0, len(items)))
            out.extend(m if m.source is not None else m.model_copy(update={"source": step.id}) for m in items)
        return out

    def _tools(self) -> list[Mapping[str, Any]]:
        tools = list(self.builder.tools)
        extra = self.state.get("tools")
        if extra is not None:
            if not isinstance(extra, (list, tuple)) or not all(isinstance(t, Mapping) for t in extra):
                raise ValueError("state['tools'] must be a list of tool definitions (JSON objects)")
            tools.extend(extra)
        return tools

    def _tool_tokens(self, tools: list[Mapping[str, Any]]) -> int:
        budget = self.builder.budget
        if budget is not None and budget.max_schema_chars is not None:
            check_schema_chars(tools, budget.max_schema_chars, self.report)
        return self.counter.count_tools(tools) if tools else 0

    def _filter_budget(self, tool_tokens: int) -> int | None:
        """The input budget left to the filters once the tool schemas are paid for."""
        model = self.builder.budget
        if model is None:
            return None
        budget = model.max_input_tokens - tool_tokens
        if budget < 0:
            raise BudgetExceeded(
                f"the tool schemas alone need {tool_tokens} tokens but the input budget is "
                f"{model.max_input_tokens}; send fewer tools or raise model.context_window",
                budget=model.max_input_tokens, required=tool_tokens + self.counter.priming, report=self.report,
            )
        return budget

    # ---------------------------------------------------------------- history
    def _past_compaction(self, messages: list[Message]) -> list[Message]:
        kept, dropped = before_compaction(messages)
        if dropped:
            self.report.record_dropped(dropped, by="compaction")
        return list(kept)

    def _sanitize(self, messages: list[Message]) -> list[Message]:
        result = sanitize_tool_call_history(messages, backfill=self.builder.target.sanitize == "backfill")
        if result.removed:
            self.report.record_dropped(result.removed, by="sanitize")
        self.report.warnings.extend(result.notes)
        return list(result.messages)

    def _filter(self, messages: list[Message], budget: int | None) -> list[Message]:
        """Every filter on a plain list; what it returns is checked whole."""
        for step in self.builder.filters:
            before = tuple(messages)
            ctx = FilterContext(counter=self.counter, budget=budget, runtime=self.runtime, report=self.report, step_id=step.id)
            started = time.perf_counter()
            try:
                result = list(reference_of(step.component).apply(list(messages), ctx))
                _check_filter_output(result)
            except _PASS_THROUGH:
                raise
            except Exception as exc:
                self._failed(step, "filter", exc, started)
                continue
            self.report.record_filtered(before, result, by=step.id)
            self.report.timings.append(
                ComponentTiming(step.id, "filter", time.perf_counter() - started, len(before), len(result))
            )
            messages = result
        return messages

    # ----------------------------------------------------------------- output
    def _repair(self, messages: list[Message]) -> list[Message]:
        result = repair_past(messages, self.builder.target.provider)
        if result.dropped:
            self.report.record_dropped(result.dropped, by="sanitize")
        self.report.notes.extend(result.notes)
        return list(result.messages)

    def _legal_start(self, messages: list[Message], history: list[Message], tool_tokens: int) -> list[Message]:
        """The output starting, after its system prefix, with a user message (recovered from history if allowed)."""
        model = self.builder.budget

        def fits(m: Message) -> bool:
            if model is None:
                return True
            used = self.counter.count_messages(messages) + tool_tokens
            return used + self.counter.count_message(m) <= model.max_input_tokens

        recover = self.builder.target.recover_user
        result = legal_start(messages, history=history if recover else None, fits=fits)
        self.report.record_legal_start(result.dropped, result.messages, result.recovered)
        return list(result.messages)

    def _finish(
        self, messages: list[Message], tokens: list[int], provided: set[str], tool_tokens: int,
        tools: tuple[Mapping[str, Any], ...],
    ) -> BuiltContext:
        """Check the character limit, fill in the totals and the output records, plan cache breakpoints."""
        report, model = self.report, self.builder.budget
        if model is not None and model.max_input_chars is not None:
            check_input_chars(messages, model.max_input_chars, report)
        report.tool_tokens = tool_tokens
        report.total_tokens = sum(tokens) + self.counter.priming + tool_tokens
        if report.budget is not None and report.total_tokens > report.budget:
            report.warnings.append(f"the request needs {report.total_tokens} tokens, over the {report.budget}-token input budget")
        report.record_output(messages, tokens, added_ids={m.id for m in messages if m.id not in provided})
        report.cache_hits, report.cache_misses = self.counter.hits, self.counter.misses
        cache = self._cache_plan(messages, tokens, tool_tokens, bool(tools))
        if cache is not None and cache.count:
            report.notes.append(
                f"cache: {cache.count} cache_control breakpoint(s); {cache.reused} leading message(s) as in the previous build"
            )
        report.notes.extend(self.builder.target.server_notes(report.total_tokens))
        return BuiltContext(messages=tuple(messages), report=report, tools=tools, cache=cache, target=self.builder.target,
                            thread=self.runtime.get("thread_id"))

    def _cache_plan(self, messages: list[Message], tokens: list[int], tool_tokens: int, has_tools: bool) -> CachePlan | None:
        """Anthropic breakpoints for ``cache: auto``, reusing the leading messages ``previous`` sent as they are."""
        if self.previous is None:
            return self.builder.target.cache_plan(messages, tokens, tool_tokens, has_tools, 0)
        before = self.previous.messages
        reused = _leading_reused(before, messages)
        extends = reused == sum(m.role != "system" for m in before) and _same_system(before, messages)
        return self.builder.target.cache_plan(messages, tokens, tool_tokens, has_tools, reused, extends)

    def _failed(self, step: Step, kind: str, exc: BaseException, started: float) -> None:
        """Raise for a required component; record an optional one as skipped."""
        if not step.optional:
            if isinstance(exc, ComponentError):
                raise exc
            raise ComponentError(step.id, kind, exc) from exc
        self.report.warnings.append(f"optional {kind} '{step.id}' skipped: {type(exc).__name__}: {exc}")
        self.report.timings.append(ComponentTiming(step.id, kind, time.perf_counter() - started, skipped=True))


def _same_system(before: Sequence[Message], now: Sequence[Message]) -> bool:
    """Whether the system messages of both requests are the same."""
    return [m.fingerprint for m in before if m.role == "system"] == [m.fingerprint for m in now if m.role == "system"]


def _leading_reused(before: Sequence[Message], now: Sequence[Message]) -> int:
    """How many leading non-system messages of ``now`` equal ``before``'s (0 when the system messages differ)."""
    if not _same_system(before, now):
        return 0
    reused = 0
    for a, b in zip((m for m in before if m.role != "system"), (m for m in now if m.role != "system"), strict=False):
        if a.fingerprint != b.fingerprint:
            break
        reused += 1
    return reused


def _check_filter_output(result: Sequence[Any]) -> None:
    """Filters return Messages and never put untrusted content in the system role (``model_copy`` skips validation)."""
    for i, m in enumerate(result):
        if not isinstance(m, Message):
            raise TypeError(f"returned item {i} is a {type(m).__name__}, not a ctxcore Message")
        if m.role == "system" and m.trust == "untrusted":
            raise ValueError(f"returned item {i} puts untrusted content in the system role")
