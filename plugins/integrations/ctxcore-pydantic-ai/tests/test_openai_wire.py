"""pydantic-ai's own OpenAI chat model, against ctxcore's OpenAI-protocol stub: the wire carries the build."""

from __future__ import annotations

from typing import Any

from ctxcore_pydantic_ai import ContextCapability
from ctxcore_pydantic_ai.processor import INSTRUCTIONS_FLAG
from pydantic_ai import Agent
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
