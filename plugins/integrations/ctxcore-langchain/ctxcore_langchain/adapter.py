"""Run a ctxcore pipeline before each model call of a LangChain agent or LangGraph graph.

:class:`ContextMiddleware` is a LangChain 1.x agent middleware
(``create_agent(model, tools, middleware=[ContextMiddleware(pipeline)])``). It
wraps the model call (``wrap_model_call``, not ``before_model``: that hook's
return value updates the agent's state, and the state must stay the whole
history): the request's messages, the agent's system prompt and its tools go
into one ctxcore build, and the model is called with the built window in
place of the messages. The agent's ``state["messages"]`` is never touched.

:class:`ContextHook` does the same for a LangGraph graph as a plain callable:
``state -> {"llm_input_messages": window}``, the ``pre_model_hook`` contract of
``langgraph.prebuilt.create_react_agent``.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Optional

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.callbacks.manager import adispatch_custom_event, dispatch_custom_event
from langchain_core.messages import BaseMessage, SystemMessage
from langchain_core.runnables.config import RunnableConfig, ensure_config, get_callback_manager_for_config
from langchain_core.utils.function_calling import convert_to_openai_tool

from ctxcore import BudgetExceeded, Message
from ctxcore.kit import overflow_cause
from ctxcore_langchain.cache import ConversionCache
from ctxcore_langchain.converters import message_from_langchain

__all__ = ["REPORT_EVENT", "ContextBudgetExceeded", "ContextHook", "ContextMiddleware"]

#: name of the LangChain custom callback event carrying each build's report (``on_custom_event``).
REPORT_EVENT = "ctxcore_build"
_MAX_TOOLS = 512  # converted tool schemas kept, by tool object


class ContextBudgetExceeded(BudgetExceeded):
    """The agent's protected context (system prompt, tool schemas, current turn) does not fit the pipeline's budget."""


class _Builder:
    """What the middleware and the hook share: per-thread conversion caches, the build, the way back."""

    def __init__(self, pipeline: Any, *, state_key: str, runtime: Mapping[str, Any] | None, max_threads: int,
                 count_reasoning: bool | str = True) -> None:
        if not callable(getattr(pipeline, "build", None)):
            raise TypeError(f"ctxcore-langchain needs a ctxcore Pipeline or ContextBuilder, not {type(pipeline).__name__}")
        if max_threads < 1:
            raise ValueError("max_threads must be at least 1")
        if count_reasoning not in (True, False, "current_turn"):
            raise ValueError(f"count_reasoning must be True, False or 'current_turn', not {count_reasoning!r}")
        self.pipeline = pipeline
        self.state_key = state_key
        self.runtime = dict(runtime or {})
        self.max_threads = max_threads
        self.count_reasoning = count_reasoning
        self.last_report: Any = None
        self._caches: OrderedDict[Any, ConversionCache] = OrderedDict()
        self._lock = threading.Lock()
        self._system: tuple[SystemMessage, Message] | None = None
        self._tools: dict[int, tuple[Any, dict[str, Any]]] = {}

    def cache(self, thread: Any) -> ConversionCache:
        """The conversion cache of one conversation (LangGraph ``thread_id``), least recently used dropped."""
        with self._lock:
            found = self._caches.get(thread)
            if found is None:
                found = self._caches[thread] = ConversionCache(count_reasoning=self.count_reasoning is not False, source="langchain")
                while len(self._caches) > self.max_threads:
                    self._caches.popitem(last=False)
            else:
                self._caches.move_to_end(thread)
            return found

    def state(self, cache: ConversionCache, messages: Sequence[BaseMessage], system: SystemMessage | None,
              tools: Sequence[Any]) -> dict[str, Any]:
        """The ctxcore state of one model call: the system prompt first, then the converted history, and the tools."""
        history = cache.convert(messages)
        if self.count_reasoning == "current_turn":
            history = cache.current_turn_reasoning(history)
        if system is not None:
            history = [self._system_message(system), *history]
        return {self.state_key: history, "tools": [self._tool(t) for t in tools]}

    def window(self, cache: ConversionCache, built: Any) -> list[BaseMessage]:
        self.last_report = built.report
        known = self._system
        # the system prompt's conversion maps back to the agent's own SystemMessage
        return cache.to_langchain(built.messages, ((known[1], known[0]),) if known is not None else ())

    def _system_message(self, system: SystemMessage) -> Message:
        """The agent's system prompt (developer code: trusted, protected), converted once per prompt object."""
        known = self._system
        if known is None or (known[0] is not system and known[0] != system):
            known = self._system = (system, message_from_langchain(system, source="langchain:system_prompt"))
        return known[1]

    def _tool(self, tool: Any) -> dict[str, Any]:
        known = self._tools.get(id(tool))
        if known is None or known[0] is not tool:
            if len(self._tools) >= _MAX_TOOLS:  # tools made anew per call (dicts) must not grow it forever
                self._tools.clear()
            known = self._tools[id(tool)] = (tool, convert_to_openai_tool(tool))
        return known[1]


def _thread_of(config: Any) -> Any:
    configurable = (config or {}).get("configurable") or {}
    return configurable.get("thread_id")


def _counter(pipeline: Any) -> Any:
    """The pipeline's token counter (a ``Pipeline``'s compiled builder's, or a ``ContextBuilder``'s), else ``None``."""
    builder = pipeline.builder() if callable(getattr(pipeline, "builder", None)) else pipeline
    return getattr(builder, "counter", None)


def _over_budget(exc: BudgetExceeded, pipeline: Any, state: dict[str, Any], state_key: str) -> ContextBudgetExceeded:
    """The build's error with the largest part of the protected context (and its fix) named first."""
    counter = _counter(pipeline)
    cause = None
    if counter is not None:
        tool_tokens = counter.count_tools(state["tools"]) if state.get("tools") else 0
        cause = overflow_cause(state[state_key], counter, tool_tokens)
    lead = f"{cause}. " if cause else ""
    return ContextBudgetExceeded(
        f"{lead}{exc} (ctxcore-langchain: the agent's system prompt, tool schemas and newest turn must fit; "
        "raise model.context_window in the pipeline, shorten the system prompt, or make tools return less)",
        budget=exc.budget, required=exc.required, report=exc.report, unit=exc.unit)


def _build(pipeline: Any, state: dict[str, Any], runtime: Mapping[str, Any], state_key: str) -> Any:
    try:
        return pipeline.build(state, runtime)
    except ContextBudgetExceeded:
        raise
    except BudgetExceeded as exc:
        raise _over_budget(exc, pipeline, state, state_key) from exc


async def _abuild(pipeline: Any, state: dict[str, Any], runtime: Mapping[str, Any], state_key: str) -> Any:
    build = getattr(pipeline, "abuild", None)
    try:
        return await build(state, runtime) if build is not None else pipeline.build(state, runtime)
    except ContextBudgetExceeded:
        raise
    except BudgetExceeded as exc:
        raise _over_budget(exc, pipeline, state, state_key) from exc


def _in_run(config: Any) -> bool:
    """Whether a LangChain run is active (a custom event needs a parent run)."""
    return get_callback_manager_for_config(ensure_config(config)).parent_run_id is not None


class ContextMiddleware(AgentMiddleware):  # type: ignore[misc]
    """A ``create_agent`` middleware that sends the model a ctxcore-built window instead of the whole history.

    Args:
        pipeline: a ctxcore :class:`~ctxcore.Pipeline` or ``ContextBuilder`` whose
            ``history`` provider reads ``state[state_key]``.
        state_key: the state key the pipeline's history provider reads (``messages``).
        runtime: runtime values given to every build (``ctx`` runtime, not LangGraph's).
        max_threads: conversations (LangGraph ``thread_id``) whose conversion cache is kept.
        count_reasoning: count the reasoning and thinking of assistant messages as the chat model sends
            them back (the safe over-count); ``"current_turn"`` counts only those after the last user
            message, for a provider that strips earlier turns' (Anthropic before Claude Opus 4.5, OpenAI's
            Responses API by default); ``False`` carries them uncounted, for a chat model that does not
            send them (``ChatOpenAI`` on Chat Completions drops them).

    The report of the newest build is ``last_report``; each build also sends a
    ``ctxcore_build`` custom event (``on_custom_event``) to the run's callbacks,
    with ``{"report": report, "thread_id": ...}``.

    Raises (from the model call):
        ContextBudgetExceeded: the protected part does not fit the budget.
        InvalidHistory: the history cannot be sent (a tool result without its call in the current turn).
    """

    def __init__(self, pipeline: Any, *, state_key: str = "messages", runtime: Mapping[str, Any] | None = None,
                 max_threads: int = 64, count_reasoning: bool | str = True) -> None:
        super().__init__()
        self._builder = _Builder(pipeline, state_key=state_key, runtime=runtime, max_threads=max_threads,
                                 count_reasoning=count_reasoning)

    @property
    def last_report(self) -> Any:
        """The :class:`~ctxcore.BuildReport` of the newest build (``None`` before the first)."""
        return self._builder.last_report

    @property
    def pipeline(self) -> Any:
        return self._builder.pipeline

    def _prepare(self, request: ModelRequest) -> tuple[ConversionCache, dict[str, Any], Any]:
        from langgraph.config import get_config

        try:
            config = get_config()
        except RuntimeError:  # called outside a graph (a test of the middleware alone)
            config = None
        cache = self._builder.cache(_thread_of(config))
        state = self._builder.state(cache, request.messages, request.system_message, request.tools)
        return cache, state, config

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]) -> Any:
        """Build the window from the request, then call the model with it (and no separate system message)."""
        cache, state, config = self._prepare(request)
        built = _build(self._builder.pipeline, state, self._builder.runtime, self._builder.state_key)
        window = self._builder.window(cache, built)
        if _in_run(config):
            dispatch_custom_event(REPORT_EVENT, {"report": built.report, "thread_id": _thread_of(config)}, config=config)
        return handler(request.override(messages=window, system_message=None))

    async def awrap_model_call(self, request: ModelRequest,
                               handler: Callable[[ModelRequest], Awaitable[ModelResponse]]) -> Any:
        """Async form of :meth:`wrap_model_call` (the pipeline's ``abuild``)."""
        cache, state, config = self._prepare(request)
        built = await _abuild(self._builder.pipeline, state, self._builder.runtime, self._builder.state_key)
        window = self._builder.window(cache, built)
        if _in_run(config):
            await adispatch_custom_event(REPORT_EVENT, {"report": built.report, "thread_id": _thread_of(config)},
                                         config=config)
        return await handler(request.override(messages=window, system_message=None))


class ContextHook:
    """A LangGraph ``pre_model_hook``: ``state -> {"llm_input_messages": window}``; the state is not changed.

    Give the system prompt through the pipeline (a ``static_prompt`` provider),
    not ``create_react_agent(prompt=...)``, which would be added outside the build.

    Args: as :class:`ContextMiddleware`; ``messages_key`` is the graph state's message list.
    """

    def __init__(self, pipeline: Any, *, messages_key: str = "messages", state_key: str = "messages",
                 runtime: Mapping[str, Any] | None = None, max_threads: int = 64, count_reasoning: bool | str = True) -> None:
        self.messages_key = messages_key
        self._builder = _Builder(pipeline, state_key=state_key, runtime=runtime, max_threads=max_threads,
                                 count_reasoning=count_reasoning)

    @property
    def last_report(self) -> Any:
        """The :class:`~ctxcore.BuildReport` of the newest build (``None`` before the first)."""
        return self._builder.last_report

    # LangGraph passes ``config`` only to a parameter annotated with one of the spellings it lists
    # (as a string here, because of ``from __future__ import annotations``): "Optional[RunnableConfig]" is one.
    def __call__(self, state: Mapping[str, Any], config: Optional[RunnableConfig] = None) -> dict[str, Any]:  # noqa: UP045
        """Build the window of ``state[messages_key]`` (one conversion cache per LangGraph ``thread_id``)."""
        cache = self._builder.cache(_thread_of(config))
        built = _build(self._builder.pipeline, self._builder.state(cache, state[self.messages_key], None, ()),
                       self._builder.runtime, self._builder.state_key)
        return {"llm_input_messages": self._builder.window(cache, built)}
