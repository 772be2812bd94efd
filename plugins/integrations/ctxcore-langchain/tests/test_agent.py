"""A real LangChain 1.x agent (create_agent + ChatOpenAI) against ctxcore's local OpenAI wire stub."""

from __future__ import annotations

import asyncio
import copy
import json
from typing import Any

import pytest
from ctxcore_langchain import REPORT_EVENT, ContextBudgetExceeded, ContextHook, ContextMiddleware
from langchain.agents import create_agent
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI

from ctxcore import Pipeline, validate_request
from ctxcore.testing.harness.openai_server import ChatServer

WINDOW, RESERVE = 1200, 200
PIPELINE = f"""
version: 1
model: {{context_window: {WINDOW}, reserve_output_tokens: {RESERVE}}}
counter: {{type: tiktoken, encoding: cl100k_base}}
providers:
  - {{type: history}}
filters:
  - {{type: token_budget}}
"""


@tool
def lookup(city: str) -> str:
    """Look up the weather of a city."""
    return f"weather in {city}: 18C " + "and sunny " * 20


CITIES = ["Paris", "Rome", "Oslo"]


def script(body: dict[str, Any]) -> Any:
    """The stub model: one lookup per city in turn (three tool round trips), then an answer."""
    done = sum(1 for m in body["messages"] if m["role"] == "tool" and m["content"].startswith("weather in"))
    last = body["messages"][-1]
    if last["role"] == "tool":
        done = CITIES.index(json.loads(next(
            c["function"]["arguments"] for m in body["messages"] if m.get("tool_calls")
            for c in m["tool_calls"] if c["id"] == last["tool_call_id"]))["city"]) + 1
    else:
        done = 0
    if done < len(CITIES):
        return {"role": "assistant", "content": None, "tool_calls": [{
            "id": f"call_{done}", "type": "function",
            "function": {"name": "lookup", "arguments": json.dumps({"city": CITIES[done]})}}]}
    return "Paris, Rome and Oslo are all 18C and sunny."


class Recording:
    """The pipeline, with every BuiltContext kept (what the model must receive)."""

    def __init__(self, pipeline: Pipeline) -> None:
        self.pipeline, self.built = pipeline, []

    def build(self, state, runtime=None):
        built = self.pipeline.build(state, runtime)
        self.built.append(built)
        return built


class Events(BaseCallbackHandler):
    def __init__(self) -> None:
        self.reports: list[Any] = []

    def on_custom_event(self, name, data, **kwargs):
        if name == REPORT_EVENT:
            self.reports.append(data["report"])


def _norm(m: dict[str, Any]) -> tuple[Any, ...]:
    """What the model reads of one wire message (ChatOpenAI sends null content with tool calls, ctxcore '')."""
    calls = [(c["id"], c["function"]["name"], json.loads(c["function"]["arguments"])) for c in m.get("tool_calls") or ()]
    return (m["role"], m.get("content") or "", m.get("name"), m.get("tool_call_id"), calls)


# The raw tiktoken Encoding the counter plugin loaded offline (tiktoken alone would download it); the
# counting rule below is this test's own, not ctxcore's.
ENC = Pipeline.from_string(PIPELINE).builder().counter.counter._encoding


def tokens(messages: list[dict[str, Any]]) -> int:
    """OpenAI's published counting rule, with tiktoken directly (independent of ctxcore's counter)."""
    n = 3
    for m in messages:
        n += 3 + len(ENC.encode(m["role"])) + len(ENC.encode(m.get("content") or ""))
        if m.get("name"):
            n += 1 + len(ENC.encode(m["name"]))
        if m.get("tool_call_id"):
            n += len(ENC.encode(m["tool_call_id"]))
        for c in m.get("tool_calls") or ():
            n += 3 + sum(len(ENC.encode(c[k])) for k in ("id",)) + len(ENC.encode(c["function"]["name"])) \
                + len(ENC.encode(c["function"]["arguments"]))
    return n


def old_history(turns: int) -> list[Any]:
    out: list[Any] = []
    for i in range(turns):
        out += [HumanMessage(f"old question {i} " + "about the weather " * 10, id=f"h{i}"),
                AIMessage(f"old answer {i} " + "it was fine " * 10, id=f"a{i}")]
    return out


class TestCreateAgent:
    def test_multi_turn_tool_run_sends_exactly_the_built_window(self) -> None:
        """Each of the >= 4 model calls of a 3-lookup run receives exactly the ctxcore window: legal, in budget, reported; the state keeps everything."""
        recording = Recording(Pipeline.from_string(PIPELINE))
        middleware = ContextMiddleware(recording)
        events = Events()
        history = old_history(20)
        before = copy.deepcopy(history)
        with ChatServer(reply=script, validate=True) as server:
            model = ChatOpenAI(model="gpt-4o-mini", base_url=server.base_url, api_key="unused", max_retries=0)
            agent = create_agent(model, tools=[lookup], system_prompt="You are a weather assistant.",
                                 middleware=[middleware])
            result = agent.invoke({"messages": [*history, HumanMessage("Weather in Paris, Rome and Oslo?")]},
                                  config={"callbacks": [events]})
        assert len(server.requests) == 4 == len(recording.built)
        assert sum(isinstance(m, ToolMessage) for m in result["messages"]) == 3
        for body, built in zip(server.requests, recording.built, strict=True):
            assert [_norm(m) for m in body["messages"]] == [_norm(m) for m in built.to_openai()]
            validate_request(built.messages, provider="openai")
            assert tokens(body["messages"]) + built.report.tool_tokens <= WINDOW - RESERVE
            assert {"role": "system", "content": "You are a weather assistant."} in body["messages"][:2]  # after ctxcore's history note
            assert built.report.dropped and len(body["messages"]) < len(history)  # the old turns were trimmed
        assert result["messages"][:len(history)] == before  # the state holds the whole, unchanged history
        assert history == before
        assert events.reports == [b.report for b in recording.built]
        assert middleware.last_report is recording.built[-1].report
        assert result["messages"][-1].content == "Paris, Rome and Oslo are all 18C and sunny."

    def test_next_call_converts_only_new_messages(self) -> None:
        """Across the model calls of one run each message is converted once (the cache), not once per call."""
        middleware = ContextMiddleware(Pipeline.from_string(PIPELINE))
        with ChatServer(reply=script) as server:
            model = ChatOpenAI(model="gpt-4o-mini", base_url=server.base_url, api_key="unused", max_retries=0)
            agent = create_agent(model, tools=[lookup], middleware=[middleware])
            result = agent.invoke({"messages": [HumanMessage("Weather?")]})
        cache = middleware._builder.cache(None)
        assert cache.conversions == len(result["messages"]) - 1  # the final answer is never sent back

    def test_checkpointed_thread_is_not_converted_again(self) -> None:
        """A second invoke of a checkpointed thread (messages loaded again as new objects) converts only its new messages."""
        from langgraph.checkpoint.memory import InMemorySaver

        middleware = ContextMiddleware(Pipeline.from_string(PIPELINE))
        config = {"configurable": {"thread_id": "t1"}}
        with ChatServer(reply=script, validate=True) as server:
            model = ChatOpenAI(model="gpt-4o-mini", base_url=server.base_url, api_key="unused", max_retries=0)
            agent = create_agent(model, tools=[lookup], middleware=[middleware], checkpointer=InMemorySaver())
            first = agent.invoke({"messages": [HumanMessage("Weather?")]}, config)
            converted = middleware._builder.cache("t1").conversions
            second = agent.invoke({"messages": [HumanMessage("And again?")]}, config)
        assert converted == len(first["messages"]) - 1
        # new this time: the first run's final answer, the question, and this run's calls and results
        assert middleware._builder.cache("t1").conversions == len(second["messages"]) - 1
        assert second["messages"][:len(first["messages"])] == first["messages"]

    def test_over_budget_raises_a_typed_error_naming_the_fix(self) -> None:
        """A current turn larger than the budget fails with ContextBudgetExceeded (a BudgetExceeded) naming the fix."""
        middleware = ContextMiddleware(Pipeline.from_string(PIPELINE))
        with ChatServer(reply=script) as server:
            model = ChatOpenAI(model="gpt-4o-mini", base_url=server.base_url, api_key="unused", max_retries=0)
            agent = create_agent(model, tools=[lookup], middleware=[middleware])
            with pytest.raises(ContextBudgetExceeded, match="raise model.context_window"):
                agent.invoke({"messages": [HumanMessage("word " * 3000)]})
            assert server.requests == []

    def test_async_agent_run(self) -> None:
        """``ainvoke`` goes through awrap_model_call and the pipeline's abuild with the same result."""
        asyncio.run(self._async_run())

    async def _async_run(self) -> None:
        middleware = ContextMiddleware(Pipeline.from_string(PIPELINE))
        with ChatServer(reply=script, validate=True) as server:
            model = ChatOpenAI(model="gpt-4o-mini", base_url=server.base_url, api_key="unused", max_retries=0)
            agent = create_agent(model, tools=[lookup], middleware=[middleware])
            result = await agent.ainvoke({"messages": [*old_history(20), HumanMessage("Weather?")]})
        assert sum(isinstance(m, ToolMessage) for m in result["messages"]) == 3
        assert all(len(b["messages"]) < 40 for b in server.requests)  # the 40 old messages were trimmed
        assert middleware.last_report is not None


class TestLangGraphHook:
    @pytest.mark.filterwarnings("ignore:create_react_agent has been moved")
    def test_create_react_agent_pre_model_hook(self) -> None:
        """langgraph.prebuilt.create_react_agent with ContextHook sends the built window; the state keeps all."""
        from langgraph.prebuilt import create_react_agent

        pipeline = Pipeline.from_string(PIPELINE.replace("providers:\n", "providers:\n  - {type: static_prompt, text: Be brief.}\n"))
        hook = ContextHook(pipeline)
        history = old_history(20)
        with ChatServer(reply=script, validate=True) as server:
            model = ChatOpenAI(model="gpt-4o-mini", base_url=server.base_url, api_key="unused", max_retries=0)
            agent = create_react_agent(model, [lookup], pre_model_hook=hook)
            result = agent.invoke({"messages": [*history, HumanMessage("Weather?")]},
                                  {"configurable": {"thread_id": "t7"}})
        assert hook._builder.cache("t7").conversions == len(result["messages"]) - 1  # LangGraph passed the config
        assert len(server.requests) == 4
        assert all({"role": "system", "content": "Be brief."} in b["messages"][:2] for b in server.requests)
        assert all(len(b["messages"]) < len(history) for b in server.requests)
        assert result["messages"][:len(history)] == history
        assert hook.last_report is not None
