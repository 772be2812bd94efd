"""ctxcore in pydantic-ai's request path: a capability and history processors.

- :class:`ContextCapability` (``Agent(model, capabilities=[ContextCapability(pipeline)])``)
  builds the request in ``before_model_request``: the model gets the ctxcore
  window, the run's history (``result.all_messages()``) stays whole. It also
  counts the request's tool schemas and instructions against the budget.
- :class:`ContextProcessor` / :class:`AsyncContextProcessor` are plain history
  processors (``capabilities=[ProcessHistory(ContextProcessor(pipeline))]``):
  pydantic-ai then writes the window back into the run's history, which is
  what its ``ProcessHistory`` does with any processor.

All three convert through one :class:`~ctxcore_pydantic_ai.cache.ConversionCache`
per conversation, never mutate a message they are given, keep the last build
report on ``last_report`` (and ``last_built``), and raise
:class:`~ctxcore_pydantic_ai.errors.ContextBudgetExceeded` when the budget
cannot be met.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import InstructionPart, ModelMessage
from pydantic_ai.models import ModelRequestContext
from pydantic_ai.tools import RunContext, ToolDefinition

from ctxcore import BudgetExceeded, BuildReport, BuiltContext, ContextBuilder, Message, Pipeline
from ctxcore.kit import overflow_cause
from ctxcore_pydantic_ai.cache import ConversionCache
from ctxcore_pydantic_ai.errors import ContextBudgetExceeded

__all__ = ["AsyncContextProcessor", "ContextCapability", "ContextProcessor", "RuntimeSource"]

#: runtime values for each build: a mapping, or a function of the run context (e.g. reading ``ctx.deps``).
RuntimeSource = Mapping[str, Any] | Callable[[RunContext[Any]], Mapping[str, Any]] | None

#: metadata flag of the instructions message the capability adds for counting (never sent as a part).
INSTRUCTIONS_FLAG = "pydantic_ai_instructions"


class _Adapter:
    """What the three entry points share: the caches, the build and the report."""

    def __init__(self, pipeline: Pipeline | ContextBuilder, *, runtime: RuntimeSource, state_key: str,
                 report_attribute: str | None, max_conversations: int, count_thinking: bool = True) -> None:
        if not hasattr(pipeline, "build"):
            raise TypeError(f"expected a ctxcore Pipeline or ContextBuilder, got {type(pipeline).__name__}")
        if max_conversations < 1:
            raise ValueError("max_conversations must be at least 1")
        self.pipeline = pipeline
        self.runtime = runtime
        self.state_key = state_key
        self.report_attribute = report_attribute
        self.max_conversations = max_conversations
        self.count_thinking = count_thinking
        self.last_built: BuiltContext | None = None
        #: the pydantic-ai messages of the last build (what the model was sent).
        self.last_messages: list[ModelMessage] | None = None
        self._marker: Message | None = None
        self._caches: OrderedDict[str | None, ConversionCache] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def last_report(self) -> BuildReport | None:
        """The report of the last build (``None`` before the first)."""
        return self.last_built.report if self.last_built is not None else None

    def cache_for(self, conversation_id: str | None) -> ConversionCache:
        """The conversion cache of one conversation (the least recently used is dropped past ``max_conversations``)."""
        with self._lock:
            cache = self._caches.pop(conversation_id, None) or ConversionCache(thinking=self.count_thinking)
            self._caches[conversation_id] = cache
            while len(self._caches) > self.max_conversations:
                self._caches.popitem(last=False)
            return cache

    def prepare(self, ctx: RunContext[Any] | None, messages: Sequence[ModelMessage], *,
                instructions: str | None = None, tools: Sequence[Mapping[str, Any]] = ()) -> tuple[dict[str, Any], dict[str, Any]]:
        """The build's state and runtime for ``messages``."""
        cache = self.cache_for(getattr(ctx, "conversation_id", None))
        converted = cache.convert(messages)
        if instructions:
            marker = self._marker
            if marker is None or marker.content != instructions:  # one object while they stay the same
                marker = self._marker = Message(role="system", content=instructions, metadata={INSTRUCTIONS_FLAG: True})
            converted = [marker, *converted]
        state: dict[str, Any] = {self.state_key: converted}
        if tools:
            state["tools"] = list(tools)
        runtime = self.runtime(ctx) if callable(self.runtime) and ctx is not None else self.runtime
        return state, dict(runtime or {}) if not callable(runtime) else {}

    def finish(self, ctx: RunContext[Any] | None, built: BuiltContext) -> list[ModelMessage]:
        """The window as pydantic-ai messages; the report published."""
        self.last_built = built
        if self.report_attribute is not None and ctx is not None and ctx.deps is not None:
            try:
                setattr(ctx.deps, self.report_attribute, built.report)
            except (AttributeError, TypeError) as exc:  # frozen dataclass, slots, a built-in
                raise TypeError(
                    f"report_attribute={self.report_attribute!r}: cannot set it on the run's deps "
                    f"({type(ctx.deps).__name__}: {exc}); give the deps class that attribute, or drop "
                    "report_attribute and read the processor's last_report") from exc
        window: Sequence[Message] = built.messages
        if self._marker is not None:  # only the capability adds the instructions message
            window = [m for m in window if not m.metadata.get(INSTRUCTIONS_FLAG)]
        cache = self.cache_for(getattr(ctx, "conversation_id", None))
        with self._lock:
            # adjacent requests merged as pydantic-ai's normalization before the model call would, so
            # last_messages is what the model receives (the normalization then changes nothing); the
            # conversation's window cache reuses the last call's messages for what did not move
            self.last_messages = cache.window.convert(window)
        return list(self.last_messages)

    def build(self, ctx: RunContext[Any] | None, messages: Sequence[ModelMessage]) -> list[ModelMessage]:
        state, runtime = self.prepare(ctx, messages)
        try:
            built = self.pipeline.build(state, runtime)
        except BudgetExceeded as exc:
            raise ContextBudgetExceeded.from_error(exc, self.cause(state)) from exc
        return self.finish(ctx, built)

    def cause(self, state: Mapping[str, Any]) -> str | None:
        """The largest part of the protected context and its fix (for the error), counted with the pipeline's counter."""
        pipeline: Any = self.pipeline
        builder = pipeline.builder() if callable(getattr(pipeline, "builder", None)) else pipeline
        counter = getattr(builder, "counter", None)
        if counter is None:
            return None
        tools = state.get("tools")
        return overflow_cause(state[self.state_key], counter, counter.count_tools(tools) if tools else 0)

    async def abuild(self, ctx: RunContext[Any] | None, messages: Sequence[ModelMessage], *,
                     instructions: str | None = None, tools: Sequence[Mapping[str, Any]] = ()) -> list[ModelMessage]:
        state, runtime = self.prepare(ctx, messages, instructions=instructions, tools=tools)
        try:
            built = await self.pipeline.abuild(state, runtime)
        except BudgetExceeded as exc:
            raise ContextBudgetExceeded.from_error(exc, self.cause(state)) from exc
        return self.finish(ctx, built)


class ContextProcessor(_Adapter):
    """A synchronous pydantic-ai history processor running a ctxcore pipeline.

    Args:
        pipeline: a :class:`ctxcore.Pipeline` (or ``ContextBuilder``) whose
            ``history`` provider reads ``state[state_key]``.
        runtime: runtime values for each build, or a function of the ``RunContext``.
        state_key: the state key the pipeline's ``history`` provider reads (``messages``).
        report_attribute: when set, each build's report is also set as this
            attribute of ``ctx.deps`` (the deps object must allow it).
        max_conversations: conversion caches kept (one per ``ctx.conversation_id``).
        count_thinking: count a response's ``ThinkingPart`` text (the inline ``<think>`` form) against the
            budget, as the OpenAI chat model sends it back; false for a model profile that does not send it
            (``openai_chat_send_back_thinking_parts=False``).
    """

    def __init__(self, pipeline: Pipeline | ContextBuilder, *, runtime: RuntimeSource = None, state_key: str = "messages",
                 report_attribute: str | None = None, max_conversations: int = 32, count_thinking: bool = True) -> None:
        super().__init__(pipeline, runtime=runtime, state_key=state_key, report_attribute=report_attribute,
                         max_conversations=max_conversations, count_thinking=count_thinking)

    def __call__(self, ctx: RunContext[Any], messages: list[ModelMessage]) -> list[ModelMessage]:
        """The messages the model is sent: the ctxcore window of ``messages`` (a new list)."""
        return self.build(ctx, messages)


class AsyncContextProcessor(_Adapter):
    """The asynchronous form of :class:`ContextProcessor` (``await pipeline.abuild``); same arguments."""

    def __init__(self, pipeline: Pipeline | ContextBuilder, *, runtime: RuntimeSource = None, state_key: str = "messages",
                 report_attribute: str | None = None, max_conversations: int = 32, count_thinking: bool = True) -> None:
        super().__init__(pipeline, runtime=runtime, state_key=state_key, report_attribute=report_attribute,
                         max_conversations=max_conversations, count_thinking=count_thinking)

    async def __call__(self, ctx: RunContext[Any], messages: list[ModelMessage]) -> list[ModelMessage]:
        """The messages the model is sent: the ctxcore window of ``messages`` (a new list)."""
        return await self.abuild(ctx, messages)


def _openai_tool(tool: ToolDefinition) -> dict[str, Any]:
    function: dict[str, Any] = {"name": tool.name, "parameters": tool.parameters_json_schema}
    if tool.description:
        function["description"] = tool.description
    return {"type": "function", "function": function}


@dataclass(init=False)
class ContextCapability(AbstractCapability[Any]):
    """A pydantic-ai capability that sends the model the ctxcore window and leaves the run's history whole.

    Same arguments as :class:`ContextProcessor`; ``count_tools`` (default true)
    passes the request's tool definitions to the build, so their schemas count
    against the budget, and the request's instructions are counted as a
    protected system message (sent by pydantic-ai as usual, not as a part).
    """

    adapter: _Adapter = field(repr=False)
    count_tools: bool = True

    def __init__(self, pipeline: Pipeline | ContextBuilder, *, runtime: RuntimeSource = None, state_key: str = "messages",
                 report_attribute: str | None = None, max_conversations: int = 32, count_tools: bool = True,
                 count_thinking: bool = True) -> None:
        self.adapter = _Adapter(pipeline, runtime=runtime, state_key=state_key, report_attribute=report_attribute,
                                max_conversations=max_conversations, count_thinking=count_thinking)
        self.count_tools = count_tools

    @property
    def last_report(self) -> BuildReport | None:
        """The report of the last build (``None`` before the first)."""
        return self.adapter.last_report

    @property
    def last_built(self) -> BuiltContext | None:
        """The last build: its messages (ctxcore's view of the request), tools and report."""
        return self.adapter.last_built

    @property
    def last_messages(self) -> list[ModelMessage] | None:
        """The pydantic-ai messages the model was sent by the last build."""
        return self.adapter.last_messages

    @classmethod
    def get_serialization_name(cls) -> str | None:
        return None  # built from a Pipeline object, not from an agent spec

    async def before_model_request(self, ctx: RunContext[Any], request_context: ModelRequestContext) -> ModelRequestContext:
        """Replace this request's messages (only) with the ctxcore window."""
        params = request_context.model_request_parameters
        instructions = InstructionPart.join(params.instruction_parts) if params.instruction_parts else None
        tools = [_openai_tool(t) for t in (*params.function_tools, *params.output_tools)] if self.count_tools else []
        request_context.messages = await self.adapter.abuild(
            ctx, list(request_context.messages), instructions=instructions, tools=tools)
        return request_context
