"""``ContextFilter``: a ``RunConfig.call_model_input_filter`` that builds every model call's input with a ctxcore pipeline.

Before each model call the runner hands the filter its input items and the
agent's instructions. The filter converts the items (once each:
:class:`~ctxcore_openai_agents.cache.ConversionCache`), puts the instructions in
front as the trusted system message (they come from the developer's code), adds
the agent's function tools so the budget counts them, runs the pipeline, and
returns the window as Responses input items. Before it returns, the items of
every window message are compared with the items that message was converted
from; when one differs (an older item edited or replaced since it was
converted), the items are converted by content and the pipeline builds again,
so what is sent is always what was counted:

- an item kept unchanged is returned as the runner's own object (never a copy,
  never changed), so the model receives exactly what the SDK would have sent for it;
- a message the pipeline made or changed (a system prompt, a summary, a
  truncated tool output) is rendered with :func:`ctxcore.to_openai_responses`;
- the instructions go back as ``instructions`` (a trusted system message the
  pipeline added is sent as a ``system`` input item).

Reasoning items are counted by the provider's rule (``count_reasoning``,
:mod:`ctxcore_openai_agents.reasoning`): by default those of the current turn,
which the Responses API keeps, not those of earlier turns, which it drops.

The build report is ``filter.last_report``, is passed to ``on_report``, and is
put on the run context when the context is a mutable mapping
(``context["ctxcore_report"]``) or has a ``ctxcore_report`` attribute.
"""

from __future__ import annotations

import threading
from array import array
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any

from agents.run_config import CallModelData, ModelInputData

from ctxcore import BudgetExceeded, BuildReport, BuiltContext, Message, Pipeline, to_openai_responses
from ctxcore.kit import overflow_cause
from ctxcore_openai_agents.cache import ConversionCache, unchanged
from ctxcore_openai_agents.converters import ITEMS_KEY, items_from_messages, reads_same
from ctxcore_openai_agents.errors import ContextBudgetExceeded
from ctxcore_openai_agents.reasoning import CountReasoning, ReasoningCount, without_reasoning

__all__ = ["INSTRUCTIONS_SOURCE", "REPORT_KEY", "ContextFilter", "FilteredInput", "function_tools"]

#: ``Message.source`` of the system message made from the agent's instructions.
INSTRUCTIONS_SOURCE = "openai-agents:instructions"
#: where the report goes on a run context (a mapping key or an attribute name).
REPORT_KEY = "ctxcore_report"

_Converted = tuple[list[Message], "array[int]"]  # messages, and bounds: message k from items[bounds[k]:bounds[k + 1]]


@dataclass(frozen=True)
class FilteredInput:
    """One filtered model call: the items and instructions to send, and the build behind them."""

    items: list[Any]
    instructions: str | None
    built: BuiltContext
    #: reasoning items counted in this call (by the filter's ``count_reasoning`` rule) and sent in the window.
    reasoning_items: int = 0
    #: their tokens (part of their assistant messages' counts in the report).
    reasoning_tokens: int = 0

    @property
    def report(self) -> BuildReport:
        """The build report of this call."""
        return self.built.report


class ContextFilter:
    """Trim the runner's input with a ctxcore pipeline: ``RunConfig(call_model_input_filter=ContextFilter(pipeline))``.

    Args:
        pipeline: a :class:`ctxcore.Pipeline` whose history provider reads
            ``state[state_key]`` (``providers: [{type: history}]``) and whose
            filters keep it within ``model.context_window``.
        state_key: the state key the pipeline's history provider reads.
        count_tools: send the agent's function tools to the build, so their
            definitions count against the budget (the SDK sends its own tools).
        count_reasoning: which reasoning items count against the budget:
            ``"current_turn"`` (those after the last user message: the
            Responses API drops earlier turns' reasoning), ``"all"`` (a
            provider that reads every one) or ``"none"`` (the chat-completions
            model, to which the SDK sends none).
        on_report: called with each build report.

    Raises:
        ValueError: an unknown ``count_reasoning``.
    """

    def __init__(self, pipeline: Pipeline, *, state_key: str = "messages", count_tools: bool = True,
                 count_reasoning: CountReasoning = "current_turn",
                 on_report: Callable[[BuildReport], None] | None = None) -> None:
        self.pipeline = pipeline
        self.state_key = state_key
        self.count_tools = count_tools
        self.reasoning = ReasoningCount(count_reasoning)
        self.on_report = on_report
        self.cache = ConversionCache()
        #: the report of the last build (``None`` before the first).
        self.last_report: BuildReport | None = None
        #: how many calls had to convert again and build twice because a window item had changed (tests, benchmarks).
        self.rebuilds = 0
        self._instructions: tuple[str, Message] | None = None
        self._lock = threading.Lock()

    async def __call__(self, data: CallModelData[Any]) -> ModelInputData:
        """The filter the runner calls before each model call (``await``-ed by the SDK)."""
        instructions = data.model_data.instructions
        tools = function_tools(data.agent) if self.count_tools else ()
        state, head, spans, items = self._prepare(data.model_data.input, instructions, tools)
        try:
            result = self._finish(await self.pipeline.abuild(state), head, spans, items)
            if result is None:  # a window item changed since its conversion: convert by content, build again
                state, head, spans, items = self._prepare(items, instructions, tools, exact=True)
                result = self._finish(await self.pipeline.abuild(state), head, spans, items, verify=False)
        except BudgetExceeded as exc:
            raise _budget_error(exc, self.pipeline, state, self.state_key) from exc
        assert result is not None
        self._publish(result.report, data.context)
        return ModelInputData(input=result.items, instructions=result.instructions)

    def apply(self, items: Sequence[Any], instructions: str | None = None,
              tools: Sequence[Mapping[str, Any]] = ()) -> FilteredInput:
        """The same as a call by the runner, synchronously, for items given directly (tests, scripts, benchmarks).

        Raises:
            ContextBudgetExceeded: the instructions, tools and protected messages alone are over budget.
            UnsupportedItem: an input item the converters do not take.
        """
        state, head, spans, listed = self._prepare(items, instructions, tools)
        try:
            result = self._finish(self.pipeline.build(state), head, spans, listed)
            if result is None:  # a window item changed since its conversion: convert by content, build again
                state, head, spans, listed = self._prepare(listed, instructions, tools, exact=True)
                result = self._finish(self.pipeline.build(state), head, spans, listed, verify=False)
        except BudgetExceeded as exc:
            raise _budget_error(exc, self.pipeline, state, self.state_key) from exc
        assert result is not None
        self._publish(result.report, None)
        return result

    # ------------------------------------------------------------ internals
    def _prepare(self, items: Sequence[Any], instructions: str | None, tools: Sequence[Mapping[str, Any]],
                 exact: bool = False) -> tuple[dict[str, Any], Message | None, _Converted, list[Any]]:
        listed = list(items)
        if exact:
            self.rebuilds += 1
        messages, bounds = self.cache.convert_bounds(listed, exact=exact)
        with self._lock:
            messages, _ = self.reasoning.apply(messages)
        head = self._instruction_message(instructions)
        state: dict[str, Any] = {self.state_key: [head, *messages] if head is not None else messages}
        if tools:
            state["tools"] = list(tools)
        return state, head, (messages, bounds), listed

    def _instruction_message(self, instructions: str | None) -> Message | None:
        if not instructions:
            return None
        with self._lock:
            if self._instructions is None or self._instructions[0] != instructions:
                self._instructions = (instructions, Message(role="system", content=instructions, source=INSTRUCTIONS_SOURCE))
            return self._instructions[1]

    def _finish(self, built: BuiltContext, head: Message | None, converted: _Converted,
                items: Sequence[Any], verify: bool = True) -> FilteredInput | None:
        """The items to send for ``built``; ``None`` when ``verify`` finds a window message whose items changed."""
        messages, bounds = converted
        window = built.messages
        out: list[Any] = []
        instructions: str | None = None
        reasoning = reasoning_tokens = 0
        count_text = self.pipeline.builder().counter.count_text
        for m, k in zip(window, _origins(window, messages), strict=True):
            if k < 0:  # not one of the converted messages
                if head is not None and m.id == head.id:
                    instructions = m.text  # the pipeline may have changed it (neutralised markers); send what it built
                else:
                    out.extend(items_from_messages([m]))  # made by the pipeline
                continue
            converted_from = messages[k]
            mine = items[bounds[k]:bounds[k + 1]]
            if verify and not unchanged(mine, converted_from):
                return None  # counted from other items than the runner's now: convert and build again
            if reads_same(m, converted_from):
                out.extend(mine)  # unchanged: the runner's own objects
                n, tokens = self.reasoning.counted_in(converted_from, count_text)
                reasoning, reasoning_tokens = reasoning + n, reasoning_tokens + tokens
            else:  # changed by a filter (truncated, ...): rendered, without reasoning (it needs its following item)
                out.extend(to_openai_responses([without_reasoning(m, converted_from)])["input"])
        if reasoning:
            built.report.notes.append(f"openai-agents: {reasoning} reasoning item(s) sent and counted, {reasoning_tokens} "
                                      f"tokens of their assistant messages (count_reasoning={self.reasoning.mode!r})")
        return FilteredInput(items=out, instructions=instructions, built=built, reasoning_items=reasoning,
                             reasoning_tokens=reasoning_tokens)

    def _publish(self, report: BuildReport, context: Any) -> None:
        self.last_report = report
        if self.on_report is not None:
            self.on_report(report)
        if isinstance(context, MutableMapping):
            context[REPORT_KEY] = report
        elif context is not None and hasattr(context, REPORT_KEY):
            setattr(context, REPORT_KEY, report)


def _origins(window: Sequence[Message], messages: Sequence[Message]) -> list[int]:
    """For each window message, the index of the converted message it is or replaces (same id); ``-1`` for none.

    The window mostly ends with the newest converted messages themselves, so
    those are matched by identity, newest first, with no per-message lookup;
    only what is left (a message a filter replaced, one the pipeline made) is
    looked up by id, from the newest back: about as many messages as the
    window holds, not the whole history.
    """
    found = [-1] * len(window)
    j, k = len(window) - 1, len(messages) - 1
    while j >= 0 and k >= 0 and window[j] is messages[k]:
        found[j] = k
        j, k = j - 1, k - 1
    wanted: dict[str, list[int]] = {}
    for i in range(j + 1):
        m = window[i]
        if ITEMS_KEY in m.metadata:  # pipeline-made messages were never items
            wanted.setdefault(m.id, []).append(i)
    for k in range(len(messages) - 1, -1, -1):
        if not wanted:
            break
        at = wanted.pop(messages[k].id, None)
        if at is not None:
            for i in at:
                found[i] = k
    return found


def function_tools(agent: Any) -> list[dict[str, Any]]:
    """The agent's function tools as chat function definitions (what the budget counts); other tool kinds are skipped."""
    out = []
    for t in getattr(agent, "tools", None) or ():
        schema = getattr(t, "params_json_schema", None)
        name = getattr(t, "name", None)
        if isinstance(schema, Mapping) and isinstance(name, str):
            out.append({"type": "function", "function": {"name": name, "description": getattr(t, "description", "") or "",
                                                         "parameters": dict(schema)}})
    return out


def _budget_error(exc: BudgetExceeded, pipeline: Any, state: Mapping[str, Any], state_key: str) -> ContextBudgetExceeded:
    """The build's error with the largest part of the protected context (a huge tool output, the instructions) first."""
    builder = pipeline.builder() if callable(getattr(pipeline, "builder", None)) else pipeline
    counter = getattr(builder, "counter", None)
    cause = None
    if counter is not None:
        tools = state.get("tools")
        cause = overflow_cause(state[state_key], counter, counter.count_tools(tools) if tools else 0)
    lead = f"{cause}. " if cause else ""
    return ContextBudgetExceeded(
        f"{lead}The agent's instructions, tool definitions and protected messages need {exc.required} {exc.unit} "
        f"but the pipeline's budget is {exc.budget}: raise model.context_window (or lower reserve_output_tokens) in "
        f"the pipeline, or shorten the agent's instructions or tools ({exc})",
        budget=exc.budget, required=exc.required, report=exc.report, unit=exc.unit,
    )
