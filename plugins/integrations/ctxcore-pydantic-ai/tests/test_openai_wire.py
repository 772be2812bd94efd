"""pydantic-ai's own OpenAI chat model, against ctxcore's OpenAI-protocol stub: the wire carries the build."""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterator
from typing import Any

import pytest
from ctxcore_pydantic_ai import ContextBudgetExceeded, ContextCapability
from ctxcore_pydantic_ai.processor import INSTRUCTIONS_FLAG
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai import AsyncOpenAI
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from ctxcore import Pipeline
from ctxcore.testing.harness.openai_server import ChatServer

PIPELINE = """
version: 1
model: {context_window: 1000, reserve_output_tokens: 200}
counter: {type: tiktoken, encoding: o200k_base}
providers: [{type: history}]
filters: [{type: token_budget}]
"""
INSTRUCTIONS = "Answer in one line."


def _wire_view(messages: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [(m["role"], m.get("content"), m.get("tool_call_id"),
             [(c["id"], c["function"]["name"], c["function"]["arguments"]) for c in m.get("tool_calls") or []])
            for m in messages if not (m["role"] == "system" and m.get("content") == INSTRUCTIONS)]


def test_three_turns_of_tool_calls_over_the_openai_protocol() -> None:
    """Every chat-completions request pydantic-ai sends is the pipeline's window (instructions aside), legal per the stub."""
    capability = ContextCapability(Pipeline.from_string(PIPELINE))
    expected: list[list[tuple[Any, ...]]] = []

    def reply(body: dict[str, Any]) -> Any:
        built = capability.last_built
        assert built is not None
        expected.append(_wire_view([m.to_openai() for m in built.messages if not m.metadata.get(INSTRUCTIONS_FLAG)]))
        messages = body["messages"]
        calls_so_far = sum(m["role"] == "tool" for m in messages[messages.index(next(m for m in reversed(messages) if m["role"] == "user")):])
        if calls_so_far >= 3:
            return "Done: " + "summary " * 30
        return {"role": "assistant", "content": None, "tool_calls": [
            {"id": f"call_{len(expected)}", "type": "function", "function": {"name": "lookup", "arguments": '{"query":"x"}'}}]}

    with ChatServer(reply=reply, validate=True) as server:
        model = OpenAIChatModel("gpt-4o-mini", provider=OpenAIProvider(base_url=server.base_url, api_key="unused"))
        agent = Agent(model, capabilities=[capability], system_prompt="You are terse.", instructions=INSTRUCTIONS)

        @agent.tool_plain
        def lookup(query: str) -> str:
            """Look something up."""
            return f"found {query}: " + "data " * 40

        history = None
        for turn in range(3):
            history = agent.run_sync(f"Question {turn}", message_history=history).all_messages()

    assert len(server.requests) == 12  # 3 turns x (3 tool round trips + the answer)
    assert [_wire_view(r["messages"]) for r in server.requests] == expected
    last = server.requests[-1]["messages"]
    assert {"role": "user", "content": "Question 0"} not in last and {"role": "system", "content": "You are terse."} in last  # trimmed
    assert history is not None and len(history) == 3 * 8  # the run's history keeps every turn
    assert server.requests[-1]["tools"][0]["function"]["name"] == "lookup"



ENC = Pipeline.from_string(PIPELINE).builder().counter.counter._encoding  # the raw tiktoken encoding, loaded offline


def _wire_tokens(body: dict[str, Any]) -> int:
    """OpenAI's published counting rule over the request as sent (reasoning_content included), with tiktoken directly."""
    n = 3
    for m in body["messages"]:
        n += 3 + len(ENC.encode(m["role"])) + len(ENC.encode(m.get("content") or ""))
        n += len(ENC.encode(m.get("reasoning_content") or "")) + len(ENC.encode(m.get("tool_call_id") or ""))
        for c in m.get("tool_calls") or ():
            n += 3 + len(ENC.encode(c["id"] + c["function"]["name"] + c["function"]["arguments"]))
    return n


def test_thinking_sent_back_is_counted_and_budgeted() -> None:
    """Replies with long <think> reasoning: pydantic-ai sends it back, the build counts it, no request passes the budget."""
    capability = ContextCapability(Pipeline.from_string(PIPELINE))
    thought = "step by step I consider the question carefully " * 25

    with ChatServer(reply=lambda body: f"<think>\n{thought}\n</think>\nShort answer.", context_window=800,
                    count=_wire_tokens) as server:
        model = OpenAIChatModel("gpt-4o-mini", provider=OpenAIProvider(base_url=server.base_url, api_key="unused"))
        agent = Agent(model, capabilities=[capability], instructions=INSTRUCTIONS)
        history = None
        for turn in range(6):
            history = agent.run_sync(f"Question {turn}", message_history=history).all_messages()
            sent = server.requests[-1]
            report = capability.last_report
            assert report is not None and _wire_tokens(sent) <= report.total_tokens + 8  # the wire is what was counted
    assert any("<think>" in (m.get("content") or "") or m.get("reasoning_content")
               for m in server.requests[-1]["messages"])  # thinking really goes back on the wire
    assert history is not None and len(history) == 12


# ---------------------------------------------------------------- malformed tool calls on the wire
PROFILE = settings(max_examples=200 if os.environ.get("CTXCORE_THOROUGH") == "1" else 25, deadline=None,
                   suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
RAWS = ['{"query": 1', "not json", "", '{"a": [1, 2', "[1, 2]"]


def _budget_pipeline(window: int) -> Pipeline:
    return Pipeline.from_string(f"version: 1\nmodel: {{context_window: {window}, reserve_output_tokens: 50}}\n"
                                "counter: {type: tiktoken, encoding: o200k_base}\n"
                                "providers: [{type: history}]\nfilters: [{type: token_budget}]\n")


def _retry(call: ToolCallPart, raw: str, legacy: bool) -> Any:
    """The answer pydantic-ai gives a call whose arguments do not parse: a retried return (2.x) or the legacy part."""
    errors = [{"type": "json_invalid", "loc": (), "msg": "Invalid JSON", "input": raw}]
    if not legacy:
        return ToolReturnPart(call.tool_name, errors, tool_call_id=call.tool_call_id, outcome="retried")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # deprecated, still in histories users stored
        return RetryPromptPart(content=errors, tool_name=call.tool_name, tool_call_id=call.tool_call_id)


def _malformed_history(turns: list[tuple[int, int, str, int, bool]]) -> list[ModelMessage]:
    """Turns of valid and malformed calls (raw argument text), each answered (returns, retries), then an answer."""
    history: list[ModelMessage] = [ModelRequest(parts=[SystemPromptPart("You are terse."), UserPromptPart("start")])]
    for t, (valid, invalid, raw, size, legacy) in enumerate(turns):
        if t:
            history.append(ModelRequest(parts=[UserPromptPart(f"question {t}")]))
        good = [ToolCallPart("lookup", {"query": f"q{k}"}, tool_call_id=f"v{t}_{k}") for k in range(valid)]
        bad = [ToolCallPart("lookup", raw, tool_call_id=f"b{t}_{k}") for k in range(invalid)]
        if good or bad:
            history.append(ModelResponse(parts=[*good, *bad]))
            history.append(ModelRequest(parts=[*(ToolReturnPart("lookup", "word " * size, tool_call_id=c.tool_call_id)
                                                 for c in good), *(_retry(c, raw, legacy) for c in bad)]))
        history.append(ModelResponse(parts=[TextPart(f"answer {t}")]))
    return history


@pytest.fixture(scope="module")
def wire() -> Iterator[ChatServer]:
    """The OpenAI-protocol stub that refuses an illegal request (HTTP 400, as OpenAI does)."""
    with ChatServer(reply=lambda body: "ok", validate=True) as server:
        yield server


def _model(server: ChatServer) -> OpenAIChatModel:
    client = AsyncOpenAI(base_url=server.base_url, api_key="unused", max_retries=0)
    return OpenAIChatModel("gpt-4o-mini", provider=OpenAIProvider(openai_client=client))


turn = st.tuples(st.integers(0, 2), st.integers(0, 2), st.sampled_from(RAWS), st.integers(0, 300), st.booleans())


@PROFILE
@given(st.lists(turn, min_size=1, max_size=5), st.sampled_from([300, 700, 2_000, 100_000]), st.booleans())
def test_malformed_calls_reach_the_wire_legal_and_counted(wire: ChatServer, turns: list[Any], window: int,
                                                          loaded: bool) -> None:
    """Histories with malformed calls (raw text), any budget, as given or loaded from JSON: the request is legal and counted.

    The stub validates the wire as OpenAI does (every call answered before the next message, no result without its
    call); the history sent without the capability is legal too. With it, the request pydantic-ai sends is the build
    (so what is counted is what is sent), each malformed call goes out in pydantic-ai's own form of its raw text, and
    a call and its answers are kept or dropped together.
    """
    history = _malformed_history(turns)
    if loaded:
        history = list(ModelMessagesTypeAdapter.validate_json(ModelMessagesTypeAdapter.dump_json(history)))
    Agent(_model(wire)).run_sync("go on", message_history=history)  # legal without the capability
    capability = ContextCapability(_budget_pipeline(window))
    try:
        Agent(_model(wire), capabilities=[capability], instructions=INSTRUCTIONS).run_sync("go on", message_history=history)
    except ContextBudgetExceeded:  # only the budget error: the newest turn may not fit the smallest windows
        return
    built = capability.last_built
    assert built is not None
    sent = wire.requests[-1]["messages"]
    assert _wire_view(sent) == _wire_view([m.to_openai() for m in built.messages if not m.metadata.get(INSTRUCTIONS_FLAG)])
    called = sorted(c["id"] for m in sent for c in m.get("tool_calls") or ())
    assert called == sorted(m["tool_call_id"] for m in sent if m["role"] == "tool")  # kept or dropped as one unit
    raw_of = {p.tool_call_id: p for m in history if isinstance(m, ModelResponse) for p in m.parts
              if isinstance(p, ToolCallPart) and isinstance(p.args, str)}
    for c in (c for m in sent for c in m.get("tool_calls") or () if c["id"] in raw_of):
        assert c["function"]["arguments"] == raw_of[c["id"]].args_as_json_str()  # {"INVALID_JSON": "<raw text>"}
