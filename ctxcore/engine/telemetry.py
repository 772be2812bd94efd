"""OpenTelemetry spans for builds, their components and memory operations (``ctxcore-llm[otel]``).

When ``opentelemetry-api`` is importable, every build is a ``ctxcore.build``
span with one child span per provider and per filter, and memory searches and
records are GenAI memory spans (``search_memory`` / ``create_memory``); they
nest under whatever span is current, so a build made inside the user's agent or
model-call span appears inside it. Message text, memory queries and memory
content are recorded only when the user opts in, as the GenAI semantic
conventions require (``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``),
and pass through :mod:`ctxcore.redaction` first.

Invariant: without opentelemetry nothing is imported or emitted and a build
pays one cached lookup; with the API but no tracer provider set, a build starts
no span; with a provider that does not record, the component spans are skipped. Why: tracing is how agent teams read why a call
saw what it saw, and it must cost nothing to the users who do not trace.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from ctxcore.redaction import redact_text

if TYPE_CHECKING:  # pragma: no cover
    from ctxcore.engine.report import BuildReport
    from ctxcore.engine.steps import BuiltContext
    from ctxcore.model.messages import Message

__all__ = [
    "CAPTURE_CONTENT_ENV",
    "TRACER_NAME",
    "MemorySpan",
    "build_span",
    "capture_content",
    "component_span",
    "get_tracer",
    "memory_span",
    "record_build",
    "use_tracer_provider",
]

#: the instrumentation scope name of every ctxcore span.
TRACER_NAME = "ctxcore"
#: the GenAI instrumentations' opt-in for message content; ctxcore honours the same variable.
CAPTURE_CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
#: ``metadata["context_kind"]`` of the messages a build counts as recalled.
RECALL_KINDS = frozenset({"memory_recall"})
_MAX_EVENTS = 16  # warnings recorded as span events per build (a report's warnings are few; the cap bounds it)

_UNSET: Any = object()
_trace: Any = _UNSET  # the opentelemetry.trace module, or None when it is not installed (looked up once)
_own: Any = None  # the tracer of the provider given to use_tracer_provider, which wins over the global one
_global: tuple[Any, Any] = (None, None)  # (the global tracer provider last seen, its tracer or None)
# The tracer while a recording build span is current (per thread and task): component spans read it.
_ACTIVE: ContextVar[Any] = ContextVar("ctxcore_build_tracer", default=None)
_NULL: AbstractContextManager[None] = nullcontext()


def get_tracer() -> Any | None:
    """ctxcore's tracer, or ``None`` when nothing would record its spans.

    ``None`` without opentelemetry, and while the global tracer provider is
    the API's proxy or no-op provider (the API installed as a dependency,
    tracing never set up): a build then starts no span and switches no
    context. The global provider is read on every call, so a provider set
    after ctxcore's first build is used from the next build on.
    """
    global _trace, _global
    if _own is not None:
        return _own
    if _trace is _UNSET:
        _trace = _trace_api()
    if _trace is None:
        return None
    provider = _trace.get_tracer_provider()
    if provider is not _global[0]:
        silent = isinstance(provider, (_trace.ProxyTracerProvider, _trace.NoOpTracerProvider))
        _global = (provider, None if silent else provider.get_tracer(TRACER_NAME))
    return _global[1]


def _trace_api() -> Any:
    """The ``opentelemetry.trace`` module, or ``None`` when it is not installed."""
    try:
        from opentelemetry import trace
    except ImportError:
        return None
    return trace


def use_tracer_provider(provider: Any | None) -> None:
    """Send ctxcore's spans to ``provider`` rather than the global tracer provider; ``None`` goes back to the global one.

    For an application (or a test) that keeps its own ``TracerProvider``
    instead of installing it with ``trace.set_tracer_provider``, which can be
    done once per process; the spans still nest under the current span.
    """
    global _own
    _own = None if provider is None else provider.get_tracer(TRACER_NAME)


def capture_content() -> bool:
    """Whether the user opted in to message content on spans (:data:`CAPTURE_CONTENT_ENV` is ``true``)."""
    return os.environ.get(CAPTURE_CONTENT_ENV, "").strip().lower() in ("1", "true", "yes")


@contextmanager
def build_span(tracer: Any, attributes: Mapping[str, Any]) -> Iterator[Any]:
    """The ``ctxcore.build`` span, current while the build runs; yields it when recording, else ``None``.

    An exception leaving the build is recorded on the span and sets its status
    to error (the API's default for ``start_as_current_span``).
    """
    attrs = {"gen_ai.operation.name": "build_context", **{k: v for k, v in attributes.items() if v is not None}}
    with tracer.start_as_current_span("ctxcore.build", attributes=attrs) as span:
        if not span.is_recording():
            yield None
            return
        token = _ACTIVE.set(tracer)
        started = time.perf_counter()
        try:
            yield span
        finally:
            _ACTIVE.reset(token)
            span.set_attribute("ctxcore.duration_ms", round((time.perf_counter() - started) * 1000, 3))


def component_span(step_id: str, kind: str, report: BuildReport) -> AbstractContextManager[Any]:
    """A child span for one provider or filter of a recording build; a no-op context otherwise.

    One span per component per build (never per message); its message counts
    come from the timing the builder records for the step.
    """
    tracer = _ACTIVE.get()
    if tracer is None:
        return _NULL
    return _component_span(tracer, step_id, kind, report)


@contextmanager
def _component_span(tracer: Any, step_id: str, kind: str, report: BuildReport) -> Iterator[Any]:
    first = len(report.timings)
    attrs = {"ctxcore.component.id": step_id, "ctxcore.component.kind": kind}
    with tracer.start_as_current_span(f"ctxcore.{kind} {step_id}", attributes=attrs) as span:
        yield span
        for timing in report.timings[first:]:
            if timing.id != step_id:
                continue
            span.set_attribute("ctxcore.messages.input", timing.messages_in)
            span.set_attribute("ctxcore.messages.output", timing.messages_out)
            if timing.skipped:
                _skipped(span, report)


def _skipped(span: Any, report: BuildReport) -> None:
    from opentelemetry.trace import Status, StatusCode

    detail = report.warnings[-1] if report.warnings else "skipped"
    span.set_attribute("ctxcore.component.skipped", True)
    span.set_status(Status(StatusCode.ERROR, redact_text(detail)))


def record_build(span: Any, built: BuiltContext) -> None:
    """Set the outcome of a build on its span: tokens, message fates, cache breakpoints, warnings.

    Counts only: message text is added when :func:`capture_content` is on.
    """
    report = built.report
    compacted = sum(len(c.original_ids) for c in report.compressions if c.stage != "trim")
    recalled = sum(1 for m in built.messages if m.metadata and m.metadata.get("context_kind") in RECALL_KINDS)
    contributed = sum(t.messages_out for t in report.timings if t.kind == "provider" and not t.skipped)
    summaries = sum(1 for c in report.compressions if c.stage != "trim")
    # What the providers gave and is neither sent nor summarised was dropped, counted from the totals:
    # the report's own lists (removed_count, added ids) walk the whole history, and a traced build
    # should cost what an untraced one does. A message a filter adds besides summaries offsets one.
    dropped = contributed - (len(built.messages) - summaries) - compacted
    span.set_attributes({
        "ctxcore.tokens.input": _input_tokens(report),
        "ctxcore.tokens.output": report.total_tokens,
        "ctxcore.tokens.tools": report.tool_tokens,
        "ctxcore.messages.input": contributed,
        "ctxcore.messages.kept": len(built.messages),
        "ctxcore.messages.dropped": max(dropped, 0),
        "ctxcore.messages.compacted": compacted,
        "ctxcore.messages.recalled": recalled,
        "ctxcore.compressions": len(report.compressions),
        "ctxcore.cache.breakpoints": built.cache.count if built.cache is not None else 0,
        "ctxcore.count_cache.hits": report.cache_hits,
        "ctxcore.count_cache.misses": report.cache_misses,
        "ctxcore.warnings": len(report.warnings),
    })
    for warning in report.warnings[:_MAX_EVENTS]:
        span.add_event("ctxcore.warning", {"message": redact_text(warning)})
    if capture_content():
        system, rest = _gen_ai_messages(built.messages)
        span.set_attribute("gen_ai.system_instructions", json.dumps(system, ensure_ascii=False))
        span.set_attribute("gen_ai.input.messages", json.dumps(rest, ensure_ascii=False))


def _input_tokens(report: BuildReport) -> int:
    """Tokens before compaction: the output's plus what the compressions saved.

    Read from the compressions and the output, never by counting dropped
    messages (a build's cost follows what is kept; their number is on the span).
    """
    saved = sum(c.tokens_before - c.tokens_after for c in report.compressions)
    return report.total_tokens + max(saved, 0)


def _gen_ai_messages(messages: Sequence[Message]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The output as GenAI ``system_instructions`` parts and ``input.messages`` (text parts), redacted."""
    system: list[dict[str, Any]] = []
    rest: list[dict[str, Any]] = []
    for m in messages:
        text = redact_text(m.text)
        if m.role == "system":
            system.append({"type": "text", "content": text})
            continue
        parts: list[dict[str, Any]] = [{"type": "text", "content": text}] if text else []
        for call in m.tool_calls:
            parts.append({"type": "tool_call", "id": call.id, "name": call.name, "arguments": redact_text(call.arguments)})
        if m.role == "tool":
            parts = [{"type": "tool_call_response", "id": m.tool_call_id, "response": text}]
        rest.append({"role": m.role, "parts": parts})
    return system, rest


class MemorySpan:
    """What a memory operation reports on its span: :meth:`result` with the items it stored or found."""

    def __init__(self, span: Any) -> None:
        self.span = span

    def result(self, items: Sequence[Any]) -> None:
        """Record how many items the operation returned (their ids and text only with content capture on)."""
        if self.span is None:
            return
        self.span.set_attribute("ctxcore.memory.result_count", len(items))
        if capture_content():
            records = [{"id": str(getattr(i, "id", "")), "content": redact_text(str(getattr(i, "text", i)))} for i in items]
            self.span.set_attribute("gen_ai.memory.records", json.dumps(records, ensure_ascii=False))


@contextmanager
def memory_span(operation: str, store: Any, namespace: Any = None, *, query: str | None = None) -> Iterator[MemorySpan]:
    """A GenAI memory span (``search_memory`` or ``create_memory``) around one store call.

    Attributes: ``gen_ai.operation.name``, ``gen_ai.memory.store.name`` (the
    store's class), ``gen_ai.memory.store.id`` (its ``store_id`` attribute, when
    it has one) and ``gen_ai.memory.namespace`` (a list of segments joined with
    ``/``); the query text only with content capture on. Without opentelemetry
    it yields an inert recorder. Plugins use it as ``ctxcore.kit.memory_span``.
    """
    tracer = get_tracer()
    if tracer is None:
        yield MemorySpan(None)
        return
    from opentelemetry.trace import SpanKind

    name = type(store).__name__
    attrs: dict[str, Any] = {"gen_ai.operation.name": operation, "gen_ai.memory.store.name": name}
    store_id = getattr(store, "store_id", None)
    if isinstance(store_id, str):
        attrs["gen_ai.memory.store.id"] = store_id
    if namespace is not None:
        attrs["gen_ai.memory.namespace"] = namespace if isinstance(namespace, str) else "/".join(map(str, namespace))
    if query is not None and capture_content():
        attrs["gen_ai.memory.query.text"] = redact_text(query)
    with tracer.start_as_current_span(f"{operation} {name}", kind=SpanKind.CLIENT, attributes=attrs) as span:
        yield MemorySpan(span if span.is_recording() else None)
