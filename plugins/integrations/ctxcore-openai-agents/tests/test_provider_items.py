"""MCP and compaction items in a run's input: they join their assistant turn, are counted by their JSON, and go back unchanged."""

from __future__ import annotations

import asyncio
import copy
import json
from typing import Any

from agents import Agent, RunConfig, Runner, set_tracing_disabled
from agents.models.openai_responses import OpenAIResponsesModel
from ctxcore_openai_agents import ContextFilter, items_from_messages, messages_from_items
from openai import AsyncOpenAI

from ctxcore import Pipeline, ProviderBlock
from ctxcore.testing.harness.openai_server import ChatServer
from ctxcore.testing.harness.responses_rules import compaction_item

set_tracing_disabled(True)

PIPELINE = """
version: 1
model: {context_window: 100000, reserve_output_tokens: 100}
counter: {type: tiktoken, encoding: cl100k_base}
providers: [{type: history}]
filters: [{type: token_budget}]
"""
LIST_TOOLS = {"type": "mcp_list_tools", "id": "mcpl_1", "server_label": "wiki",
              "tools": [{"name": "lookup", "input_schema": {"type": "object"}}]}
APPROVAL = {"type": "mcp_approval_request", "id": "mcpr_1", "server_label": "wiki", "name": "lookup",
            "arguments": '{"q": "Paris"}'}
APPROVED = {"type": "mcp_approval_response", "approval_request_id": "mcpr_1", "approve": True}
CALL = {"type": "mcp_call", "id": "mcp_1", "server_label": "wiki", "name": "lookup", "arguments": '{"q": "Paris"}',
        "output": "Paris is the capital of France."}


def answer(text: str, n: int = 1) -> dict[str, Any]:
    return {"type": "message", "id": f"msg_{n}", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}


def history() -> list[dict[str, Any]]:
    return [{"role": "user", "content": "Capital of France?"}, LIST_TOOLS, APPROVAL, APPROVED, CALL,
            answer("Paris."), {"role": "user", "content": "Thanks!"}]


def tokens(*items: dict[str, Any]) -> int:
    enc = Pipeline.from_string(PIPELINE).builder().counter.counter._encoding
    return sum(len(enc.encode(json.dumps(i, ensure_ascii=False, separators=(",", ":")))) for i in items)


def test_mcp_items_join_their_assistant_turn() -> None:
    """MCP tools, an approval and its response, the call and the answer are one assistant message, in order; the round trip is exact."""
    items = history()
    user, turn, thanks = messages_from_items(copy.deepcopy(items))
    assert (user.role, turn.role, thanks.role) == ("user", "assistant", "user")
    assert [b.kind if isinstance(b, ProviderBlock) else b.text for b in turn.content] == [
        "mcp_list_tools", "mcp_approval_request", "mcp_approval_response", "mcp_call", "Paris."]
    assert {b.api for b in turn.content if isinstance(b, ProviderBlock)} == {"openai-responses"}
    assert items_from_messages([user, turn, thanks]) == items


def test_mcp_items_are_counted_as_their_json() -> None:
    """The report counts each MCP item by its compact JSON (what the API reads), on top of the text around it."""
    with_items = ContextFilter(Pipeline.from_string(PIPELINE)).apply(history())
    plain = [{"role": "user", "content": "Capital of France?"}, answer("Paris."), {"role": "user", "content": "Thanks!"}]
    without = ContextFilter(Pipeline.from_string(PIPELINE)).apply(plain)
    extra = with_items.report.total_tokens - without.report.total_tokens
    assert 0 <= extra - tokens(LIST_TOOLS, APPROVAL, APPROVED, CALL) <= 4  # the answer became a text block beside them


def test_a_compaction_item_starts_the_window() -> None:
    """Items before the newest compaction item are neither counted nor sent; the compaction goes back first, unchanged."""
    item = compaction_item("cmp_1")
    items = [*history(), item, answer("Noted.", 2), {"role": "user", "content": "What next?"}]
    filtered = ContextFilter(Pipeline.from_string(PIPELINE)).apply(items)
    assert filtered.items == items[7:]
    assert {r.by for r in filtered.report.dropped} == {"compaction"}


def test_a_run_with_mcp_and_compaction_output_sends_them_back() -> None:
    """The real Runner: a reply with MCP and compaction items, then a second turn; the second request starts at the compaction."""
    def model(body: dict[str, Any]) -> Any:
        if len([i for i in body["input"] if i.get("role") == "user"]) == 1:
            return {"content": "Paris.", "output": [compaction_item("cmp_9"), LIST_TOOLS, CALL]}
        return "You are welcome."

    ctx_filter = ContextFilter(Pipeline.from_string(PIPELINE))
    with ChatServer(reply=model, validate=True) as server:
        agent = Agent(name="wiki", instructions="Answer briefly.",
                      model=OpenAIResponsesModel(model="gpt-5", openai_client=AsyncOpenAI(base_url=server.base_url,
                                                                                          api_key="unused")))
        first = asyncio.run(Runner.run(agent, "Capital of France?", run_config=RunConfig(call_model_input_filter=ctx_filter)))
        asyncio.run(Runner.run(agent, [*first.to_input_list(), {"role": "user", "content": "Thanks!"}],
                               run_config=RunConfig(call_model_input_filter=ctx_filter)))
    sent = server.requests[-1]["input"]
    assert sent[0] == compaction_item("cmp_9") and sent[-1] == {"role": "user", "content": "Thanks!"}
    assert "compaction" in {r.by for r in ctx_filter.last_report.dropped}
