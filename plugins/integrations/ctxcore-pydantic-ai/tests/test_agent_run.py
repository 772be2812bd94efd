"""A real pydantic-ai agent, several turns of tool calls, with its requests built by a ctxcore pipeline.

The model is pydantic-ai's ``FunctionModel``: it receives exactly the messages
the model would, so each call checks them against the pipeline's build.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Any

import pytest
from ctxcore_counters.encodings import load_encoding
from ctxcore_pydantic_ai import (
    AsyncContextProcessor,
    ContextBudgetExceeded,
    ContextCapability,
    ContextProcessor,
    from_pydantic_ai,
    to_pydantic_ai,
)
from ctxcore_pydantic_ai.processor import INSTRUCTIONS_FLAG
from pydantic_ai import Agent
from pydantic_ai.capabilities import ProcessHistory
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ToolAvailabilityDeltaPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
    repair_messages,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from ctxcore import BudgetExceeded, Pipeline, check_tool_pairing

PIPELINE = """
version: 1
model: {context_window: 1800, reserve_output_tokens: 300}
counter: {type: tiktoken, encoding: o200k_base}
providers:
  - {type: history}
filters:
  - {type: token_budget}
"""
ENC = load_encoding("o200k_base")
TOOL_ROUND_TRIPS = 3


def _tokens(text: str) -> int:
    return len(ENC.encode_ordinary(text))


def independent_count(messages: list[ModelMessage], info: AgentInfo) -> int:
    """Tokens of the request as the model is sent it, counted here from the parts (not by ctxcore).

    OpenAI's rule: 3 per message plus its role, text, tool-call ids, names and
    arguments; 3 for the reply; the instructions as one more system message;
    each tool's name, description and JSON schema as text.
    """
    total = 3
    if info.instructions:
        total += 4 + _tokens(info.instructions)
    for message in messages:
        for part in message.parts if isinstance(message, ModelRequest) else []:
            if isinstance(part, SystemPromptPart | UserPromptPart):
                total += 4 + _tokens(part.content if isinstance(part.content, str) else "".join(map(str, part.content)))
            elif isinstance(part, ToolReturnPart):
                total += 4 + _tokens(part.model_response_str()) + _tokens(part.tool_call_id) + 1 + _tokens(part.tool_name)
        if isinstance(message, ModelResponse):
            total += 4 + sum(_tokens(p.content) for p in message.parts if isinstance(p, TextPart))
            total += sum(_tokens(p.tool_call_id) + _tokens(p.tool_name) + _tokens(p.args_as_json_str()) + 3
                         for p in message.parts if isinstance(p, ToolCallPart))
    for tool in info.function_tools:
        total += _tokens(tool.name) + _tokens(tool.description or "") + _tokens(json.dumps(tool.parameters_json_schema))
    return total


@dataclass
class Deps:
    """The run's dependencies; the capability sets ``report`` on it (``report_attribute``)."""

    report: Any = None


class ScriptedModel:
    """Calls ``lookup`` TOOL_ROUND_TRIPS times per user turn, then answers; checks every request it receives."""

    def __init__(self, capability: ContextCapability | None = None) -> None:
        self.capability = capability
        self.requests: list[list[ModelMessage]] = []
        self.counts: list[int] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.requests.append(messages)
        if self.capability is not None:
            self.check(messages, info)
        last = messages[-1]
        assert isinstance(last, ModelRequest)
        done = sum(isinstance(p, ToolReturnPart) for p in last.parts)
        if any(isinstance(p, UserPromptPart) for p in last.parts):
            self.round = 0
        if done and self.round >= TOOL_ROUND_TRIPS:
            return ModelResponse(parts=[TextPart("The answer is 42. " + "detail " * 40)])
        self.round += 1
        n = len(self.requests)
        return ModelResponse(parts=[TextPart(f"Looking up {n}."), ToolCallPart("lookup", {"query": f"q{n} ünï"}, f"call_{n}")])

    def check(self, messages: list[ModelMessage], info: AgentInfo) -> None:
        built = self.capability.last_built  # type: ignore[union-attr]
        assert built is not None
        window = [m for m in built.messages if not m.metadata.get(INSTRUCTIONS_FLAG)]
        assert messages == self.capability.last_messages  # exactly what the adapter made of the build
        assert repair_messages(messages, repair_last_response=True) == messages  # already in pydantic-ai's normal form
        # the window cache's reuse changes no value (its fresh parts: the same made part, timestamp and all)
        window_cache = next(reversed(self.capability.adapter._caches.values())).window
        assert messages == to_pydantic_ai(window, fresh=dict(window_cache.fresh), merge=True)
        received = from_pydantic_ai(messages)
        assert [(m.role, m.text, m.tool_call_id, m.tool_call_ids) for m in received] == [
            (m.role, m.text, m.tool_call_id, m.tool_call_ids) for m in window]
        check_tool_pairing(received)
        count = independent_count(messages, info)
        self.counts.append(count)
        assert count <= built.report.budget
        assert built.report.total_tokens <= built.report.budget


def _agent(model: ScriptedModel, capabilities: list[Any]) -> Agent[Deps, str]:
    agent = Agent(FunctionModel(model), deps_type=Deps, capabilities=capabilities,
                  system_prompt="You are a careful research assistant.", instructions="Answer in one sentence.")

    @agent.tool_plain
    def lookup(query: str) -> str:
        """Look a query up in the archive."""
        return f"archive entry for {query}: " + "fact " * 60

    return agent


def _run_turns(agent: Agent[Deps, str], deps: Deps, turns: int) -> list[ModelMessage]:
    history: list[ModelMessage] | None = None
    for turn in range(turns):
        before = copy.deepcopy(history)
        result = agent.run_sync(f"Question {turn}: what does the archive say? " + "context " * 30,
                                message_history=history, deps=deps)
        assert history == before  # the history handed in is never mutated
        history = result.all_messages()
    assert history is not None
    return history


class TestCapability:
    def test_multi_turn_tool_run_sends_the_pipeline_window_and_keeps_the_history(self) -> None:
        """Four turns of three tool round trips: every request is the build (legal, in budget), the run's history is whole."""
        capability = ContextCapability(Pipeline.from_string(PIPELINE), report_attribute="report")
        model = ScriptedModel(capability)
        deps = Deps()
        history = _run_turns(_agent(model, [capability]), deps, turns=4)

        assert len(model.requests) == 4 * (TOOL_ROUND_TRIPS + 1)
        returns = [p for m in history if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, ToolReturnPart)]
        assert len(returns) == 4 * TOOL_ROUND_TRIPS  # nothing the budget dropped left the run's history
        assert sum(isinstance(p, UserPromptPart) for m in history for p in m.parts) == 4
        assert isinstance(history[0], ModelRequest) and isinstance(history[0].parts[0], SystemPromptPart)
        last_texts = [m.text for m in from_pydantic_ai(model.requests[-1])]
        assert not any(t.startswith("Question 0") for t in last_texts)  # the model did get a trimmed window
        assert "You are a careful research assistant." in last_texts  # the system prompt is protected
        assert deps.report is capability.last_report and deps.report.budget == 1500
        assert max(model.counts) > 1000  # the budget was used, not just respected

    def test_the_budget_error_is_typed_and_names_the_fix(self) -> None:
        """A system prompt that alone exceeds the window fails the run with ContextBudgetExceeded (a BudgetExceeded)."""
        capability = ContextCapability(Pipeline.from_string(PIPELINE))
        agent = Agent(FunctionModel(ScriptedModel()), capabilities=[capability], system_prompt="rule " * 3000)
        with pytest.raises(ContextBudgetExceeded, match="context_window") as info:
            agent.run_sync("hello")
        assert isinstance(info.value, BudgetExceeded) and info.value.budget == 1500 and info.value.report is not None


class TestHistoryProcessors:
    @pytest.mark.parametrize("processor_class", [ContextProcessor, AsyncContextProcessor])
    def test_process_history_sends_the_window(self, processor_class: type[ContextProcessor]) -> None:
        """As a ProcessHistory processor (sync or async) the model gets the window; pydantic-ai keeps it as history."""
        processor = processor_class(Pipeline.from_string(PIPELINE))
        model = ScriptedModel()
        history = _run_turns(_agent(model, [ProcessHistory(processor)]), Deps(), turns=3)
        report = processor.last_report
        assert report is not None and report.total_tokens <= report.budget
        for messages in model.requests:
            check_tool_pairing(from_pydantic_ai(messages))
        assert model.requests[-1] == processor.last_messages
        assert [m.text for m in from_pydantic_ai(model.requests[-1])] == [m.text for m in processor.last_built.messages]  # type: ignore[union-attr]
        assert len(history) > len(model.requests[-1])  # the answer came after the last request


class TestConversionCache:
    def test_a_next_turn_converts_only_new_messages(self) -> None:
        """Across model calls, messages already converted are reused; the cache holds only the current history."""
        capability = ContextCapability(Pipeline.from_string(PIPELINE))
        model = ScriptedModel(capability)
        history = _run_turns(_agent(model, [capability]), Deps(), turns=2)
        processor = ContextProcessor(Pipeline.from_string(PIPELINE))
        processor.build(None, history)
        cache = processor.cache_for(None)
        assert (cache.hits, cache.misses, len(cache)) == (0, len(history), len(history))
        processor.build(None, [*history, ModelRequest(parts=[UserPromptPart("one more")])])
        assert (cache.hits, cache.misses) == (len(history), 1)
        processor.build(None, history[-4:])
        assert len(cache) == 4  # entries of messages no longer in the history are gone

    def test_a_conversation_loaded_from_json_every_turn_converts_only_new_messages(self) -> None:
        """Stored with all_messages_json() and loaded each turn (new objects), the run's model call converts two messages."""
        capability = ContextCapability(Pipeline.from_string(PIPELINE))
        seen: list[tuple[str, int]] = []

        def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            (cache,) = capability.adapter._caches.values()  # one conversation: pydantic-ai keeps its id in the history
            seen.append((cache.way, cache.misses))
            return ModelResponse(parts=[TextPart("noted")])

        agent = Agent(FunctionModel(reply), capabilities=[capability])
        stored: bytes | None = None
        for turn in range(4):
            history = ModelMessagesTypeAdapter.validate_json(stored) if stored is not None else None
            stored = agent.run_sync(f"question {turn}", message_history=history).all_messages_json()
        assert seen[1:] == [("reloaded", 2)] * 3  # the last answer and the new question; the rest reused

    def test_a_replaced_or_reassigned_part_is_converted_again(self) -> None:
        """The guard notices a part replaced in place and a field reassigned on a part."""
        processor = ContextProcessor(Pipeline.from_string(PIPELINE))
        history: list[ModelMessage] = [ModelRequest(parts=[UserPromptPart("first")]),
                                       ModelResponse(parts=[TextPart("reply")]),
                                       ModelRequest(parts=[UserPromptPart("second")])]
        processor.build(None, history)
        history[1].parts[0].content = "edited reply"  # type: ignore[union-attr]
        out = processor.build(None, history)
        assert from_pydantic_ai(out)[1].text == "edited reply"
        history[0].parts[0] = UserPromptPart("replaced")  # type: ignore[index]
        out = processor.build(None, history)
        assert from_pydantic_ai(out)[0].text == "replaced"
        assert processor.cache_for(None).misses == 1


class TestPartsTheModelDoesNotRead:
    def test_a_delta_between_tool_returns_keeps_the_window_legal_and_comes_back(self) -> None:
        """A tool-availability delta between two returns of one call batch rides along; it never splits the results.

        Before, it became an empty user message between the returns: the build
        refused the history (a tool result with no open call before it).
        """
        delta = ToolAvailabilityDeltaPart(tools_added=["search"], tool_call_id="a")
        answers = ModelRequest(parts=[ToolReturnPart("lookup", "ra", tool_call_id="a"), delta,
                                      ToolReturnPart("lookup", "rb", tool_call_id="b")])
        history: list[ModelMessage] = [
            ModelRequest(parts=[UserPromptPart("find a and b")]),
            ModelResponse(parts=[ToolCallPart("lookup", {"q": "a"}, tool_call_id="a"),
                                 ToolCallPart("lookup", {"q": "b"}, tool_call_id="b")]),
            answers,
            ModelResponse(parts=[TextPart("found both")]),
        ]
        processor = ContextProcessor(Pipeline.from_string(PIPELINE))
        window = processor.build(None, [*history, ModelRequest(parts=[UserPromptPart("and c?")])])
        check_tool_pairing(processor.last_built.messages)  # type: ignore[union-attr]
        assert any(m is answers for m in window)  # the request with its delta, as it was
        seen: list[list[ModelMessage]] = []

        def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            seen.append(messages)
            return ModelResponse(parts=[TextPart("c is unknown")])

        capability = ContextCapability(Pipeline.from_string(PIPELINE))
        result = Agent(FunctionModel(reply), capabilities=[capability]).run_sync("and c?", message_history=history)
        assert result.output == "c is unknown" and seen
        check_tool_pairing(capability.last_built.messages)  # type: ignore[union-attr]
        assert result.all_messages()[:4] == history  # the framework's history is intact


class TestReportOnDeps:
    def test_deps_that_refuse_the_attribute_get_a_clear_error(self) -> None:
        """report_attribute on frozen deps fails naming the attribute and the fix, not with a bare FrozenInstanceError."""

        @dataclass(frozen=True)
        class Frozen:
            user: str = "ann"

        capability = ContextCapability(Pipeline.from_string(PIPELINE), report_attribute="report")
        agent = Agent(FunctionModel(lambda messages, info: ModelResponse(parts=[TextPart("hi")])), deps_type=Frozen,
                      capabilities=[capability])
        with pytest.raises(TypeError, match="report_attribute='report'.*last_report"):
            agent.run_sync("hello", deps=Frozen())
