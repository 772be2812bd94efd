"""Provider blocks through real chat models: server tools, MCP, compaction and hosted tool items, counted and sent back as they came."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
from ctxcore_langchain import ContextHook, from_langchain, to_langchain
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_anthropic import ChatAnthropic
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_openai import ChatOpenAI

from ctxcore import InvalidHistory, Pipeline, ProviderBlock, TextBlock
from ctxcore.testing.harness.anthropic_server import MessagesServer, compaction_block, web_search_blocks
from ctxcore.testing.harness.openai_server import ChatServer
from ctxcore.testing.harness.responses_rules import compaction_item

PROFILE = settings(max_examples=300 if os.environ.get("CTXCORE_THOROUGH") == "1" else 60, deadline=None,
                   suppress_health_check=[HealthCheck.too_slow])
PIPELINE = """
version: 1
model: {context_window: 100000, reserve_output_tokens: 100}
counter: {type: tiktoken, encoding: cl100k_base}
providers: [history]
filters: [token_budget]
target: {provider: PROVIDER}
"""


def pipeline(provider: str, window: int = 100000) -> Pipeline:
    text = PIPELINE.replace("PROVIDER", provider).replace("context_window: 100000", f"context_window: {window}")
    return Pipeline.from_string(text)


def cl100k_json(*blocks: dict[str, Any]) -> int:
    """Tokens of blocks' compact JSON, with tiktoken directly (independent of ctxcore's counter)."""
    enc = pipeline("anthropic").builder().counter.counter._encoding
    return sum(len(enc.encode(json.dumps(b, ensure_ascii=False, separators=(",", ":")))) for b in blocks)


def mcp_blocks(call_id: str) -> list[dict[str, Any]]:
    return [{"type": "mcp_tool_use", "id": call_id, "name": "lookup", "server_name": "wiki", "input": {"q": "Paris"}},
            {"type": "mcp_tool_result", "tool_use_id": call_id, "is_error": False,
             "content": [{"type": "text", "text": "Paris is the capital of France."}]}]


def anthropic_turns() -> list[Any]:
    """A web search turn, an MCP turn, a user turn with a search result, a compaction: ChatAnthropic's content forms."""
    search = web_search_blocks("srvtoolu_1", "weather paris", [("https://example.org/paris", "Paris weather")])
    return [
        HumanMessage("Weather in Paris?", id="h0"),
        AIMessage([*search, {"type": "text", "text": "Sunny in Paris."}], id="a0",
                  response_metadata={"model_provider": "anthropic"}),
        HumanMessage([{"type": "search_result", "source": "https://example.org/doc", "title": "Doc",
                       "content": [{"type": "text", "text": "Paris has 2.1M people."}]},
                      {"type": "text", "text": "How many people live there?"}], id="h1"),
        AIMessage([*mcp_blocks("mcptoolu_1"), {"type": "text", "text": "About 2.1 million."}], id="a1",
                  response_metadata={"model_provider": "anthropic"}),
        HumanMessage("Thanks!", id="h2"),
    ]


def test_chatanthropic_reply_with_server_tools_round_trips() -> None:
    """A real ChatAnthropic reply holding a signed web search becomes provider blocks, and goes back unchanged (the stub checks signatures)."""
    search = web_search_blocks("srvtoolu_9", "rome", [("https://example.org/rome", "Rome")])
    with MessagesServer(reply=lambda body: [*search, {"type": "text", "text": "Rome is warm."}]) as server:
        model = ChatAnthropic(model="claude-test", base_url=server.base_url, api_key="unused", max_retries=0,
                              max_tokens=256)
        history: list[Any] = [HumanMessage("Weather in Rome?", id="h0")]
        history.append(model.invoke(history))
        (converted,) = from_langchain([history[1]])
        assert [b.kind for b in converted.content if isinstance(b, ProviderBlock)] == [
            "server_tool_use", "web_search_tool_result"]
        assert {b.api for b in converted.content if isinstance(b, ProviderBlock)} == {"anthropic"}
        history.append(HumanMessage("And tomorrow?", id="h1"))
        hook = ContextHook(pipeline("anthropic"))
        window = hook({"messages": history})["llm_input_messages"]
        model.invoke(window)
    sent = server.requests[-1]["messages"][1]["content"]
    assert sent[:2] == search  # byte-exact: a changed encrypted_content would have been a 400


def test_anthropic_blocks_are_counted_as_their_json() -> None:
    """Each server tool, MCP and search-result block costs the tokens of its JSON, which the stub received unchanged."""
    history = anthropic_turns()
    hook = ContextHook(pipeline("anthropic"))
    window = hook({"messages": history})["llm_input_messages"]
    with_blocks = hook.last_report.total_tokens
    plain = [HumanMessage("Weather in Paris?", id="h0"), AIMessage("Sunny in Paris.", id="a0"),
             HumanMessage("How many people live there?", id="h1"), AIMessage("About 2.1 million.", id="a1"),
             HumanMessage("Thanks!", id="h2")]
    hook({"messages": plain})
    with MessagesServer() as server:
        ChatAnthropic(model="claude-test", base_url=server.base_url, api_key="unused", max_retries=0,
                      max_tokens=256).invoke(window)
    sent = server.requests[-1]["messages"]
    blocks = [b for m in sent if isinstance(m["content"], list) for b in m["content"] if b["type"] != "text"]
    assert [b["type"] for b in blocks] == ["server_tool_use", "web_search_tool_result", "search_result",
                                           "mcp_tool_use", "mcp_tool_result"]
    assert blocks[2] == history[2].content[0] and blocks[3:] == mcp_blocks("mcptoolu_1")
    # text blocks beside a provider block are separate blocks: a few tokens of framing either way
    assert 0 <= with_blocks - hook.last_report.total_tokens - cl100k_json(*blocks) <= 6


def test_server_tool_turn_is_dropped_whole() -> None:
    """A budget that cannot hold the search turn drops the call, its result and its text together (never one without the other)."""
    history = anthropic_turns()
    hook = ContextHook(pipeline("anthropic", window=260))
    window = hook({"messages": history})["llm_input_messages"]
    kept = [m for m in window if isinstance(m, AIMessage)]
    assert history[1] not in window and kept == [history[3]]
    with MessagesServer() as server:  # the stub refuses a server_tool_use without its result
        ChatAnthropic(model="claude-test", base_url=server.base_url, api_key="unused", max_retries=0,
                      max_tokens=256).invoke(window)


def test_compaction_block_starts_the_build() -> None:
    """Behind ChatAnthropic's compaction block nothing is counted or sent but the user turn it answers; the block goes back signed."""
    history = [*anthropic_turns(),
               AIMessage([compaction_block("We discussed Paris."), {"type": "text", "text": "Noted."}], id="a2",
                         response_metadata={"model_provider": "anthropic"}),
               HumanMessage("What next?", id="h3")]
    hook = ContextHook(pipeline("anthropic"))
    window = hook({"messages": history})["llm_input_messages"]
    assert [m.id for m in window] == ["h2", "a2", "h3"]
    assert {r.by for r in hook.last_report.dropped} == {"compaction"}
    with MessagesServer() as server:
        ChatAnthropic(model="claude-test", base_url=server.base_url, api_key="unused", max_retries=0,
                      max_tokens=256).invoke(window)
    assert server.requests[-1]["messages"][1]["content"][0] == compaction_block("We discussed Paris.")


def test_anthropic_blocks_are_refused_for_another_target() -> None:
    """A pipeline for OpenAI refuses a ChatAnthropic server tool turn, naming the block and the fix."""
    with pytest.raises(InvalidHistory) as caught:
        ContextHook(pipeline("openai"))({"messages": anthropic_turns()})
    text = str(caught.value)
    assert "'server_tool_use' block from the Anthropic Messages API" in text and "target.provider: anthropic" in text


def test_changed_message_keeps_its_blocks_in_place() -> None:
    """A message a filter changed renders its provider blocks as they came, in content order, around the new text."""
    history = anthropic_turns()
    converted = from_langchain(history)
    blocks = converted[1].content
    shortened = converted[1].model_copy(update={"content": (*blocks[:2], TextBlock(text="Sunny."))})
    (back,) = to_langchain([shortened])
    assert back.content == [*history[1].content[:2], {"type": "text", "text": "Sunny."}]
    with MessagesServer() as server:
        ChatAnthropic(model="claude-test", base_url=server.base_url, api_key="unused", max_retries=0,
                      max_tokens=256).invoke([history[0], back, history[2]])


def responses_history() -> list[Any]:
    """ChatOpenAI's Responses form (output_version "responses/v1"): hosted tool items in the content."""
    search = {"type": "web_search_call", "id": "ws_1", "status": "completed",
              "action": {"type": "search", "query": "weather paris"}}
    mcp = {"type": "mcp_call", "id": "mcp_1", "server_label": "wiki", "name": "lookup", "arguments": '{"q": "Paris"}',
           "output": "Paris is the capital of France."}
    return [
        HumanMessage("Weather in Paris?", id="h0"),
        AIMessage([search, mcp, {"type": "text", "text": "Sunny in Paris.", "id": "msg_1", "annotations": []}],
                  id="a0", response_metadata={"model_provider": "openai"}),
        HumanMessage("Thanks!", id="h1"),
    ]


def test_chatopenai_responses_hosted_items_are_counted_and_sent_back() -> None:
    """Hosted tool items become Responses provider blocks, counted by their JSON, and ChatOpenAI sends them back unchanged."""
    history = responses_history()
    hook = ContextHook(pipeline("openai-responses"))
    window = hook({"messages": history})["llm_input_messages"]
    counted = hook.last_report.total_tokens
    (converted,) = from_langchain([history[1]])
    assert [(b.api, b.kind) for b in converted.content if isinstance(b, ProviderBlock)] == [
        ("openai-responses", "web_search_call"), ("openai-responses", "mcp_call")]
    hook({"messages": [history[0], AIMessage("Sunny in Paris.", id="a0"), history[2]]})
    assert counted - hook.last_report.total_tokens >= cl100k_json(*history[1].content[:2])
    with ChatServer(reply=lambda body: "ok") as server:
        ChatOpenAI(model="gpt-5", base_url=server.base_url, api_key="unused", max_retries=0,
                   use_responses_api=True).invoke(window)
    items = server.requests[-1]["input"]
    assert [i for i in items if i.get("type") in ("web_search_call", "mcp_call")] == history[1].content[:2]


def test_chatopenai_compaction_item_starts_the_build() -> None:
    """Behind a Responses compaction item nothing is counted or sent; ChatOpenAI sends the item back first, unchanged."""
    item = compaction_item("cmp_1")
    history = [*responses_history(),
               AIMessage([item, {"type": "text", "text": "Noted.", "id": "msg_2", "annotations": []}], id="a1",
                         response_metadata={"model_provider": "openai"}),
               HumanMessage("What next?", id="h2")]
    hook = ContextHook(pipeline("openai-responses"))
    window = hook({"messages": history})["llm_input_messages"]
    assert [m.id for m in window] == ["a1", "h2"] and {r.by for r in hook.last_report.dropped} == {"compaction"}
    with ChatServer(reply=lambda body: "ok", validate=True) as server:
        ChatOpenAI(model="gpt-5", base_url=server.base_url, api_key="unused", max_retries=0,
                   use_responses_api=True).invoke(window)
    assert server.requests[-1]["input"][0] == item  # the stub refuses a changed encrypted_content


def test_responses_items_are_refused_for_anthropic() -> None:
    """A Responses hosted tool item in a pipeline for Anthropic is refused with the same clear error."""
    with pytest.raises(InvalidHistory) as caught:
        ContextHook(pipeline("anthropic"))({"messages": responses_history()})
    assert "'web_search_call' block from the OpenAI Responses API" in str(caught.value)


def test_compaction_item_belongs_to_its_provider() -> None:
    """``compaction`` exists in both APIs: the message's provider (or the item's shape) decides which."""
    openai_item = {"type": "compaction", "id": "cmp_1", "encrypted_content": "gAAAA" * 8}
    anthropic = compaction_block("summary")
    for content, meta, api in [([openai_item], {"model_provider": "openai"}, "openai-responses"),
                               ([openai_item], {}, "openai-responses"),
                               ([anthropic], {"model_provider": "anthropic"}, "anthropic"),
                               ([anthropic], {}, "anthropic")]:
        (m,) = from_langchain([AIMessage(content, response_metadata=meta)])
        assert m.content[0].api == api


def test_tool_message_search_result_is_a_provider_block() -> None:
    """A tool result holding Anthropic search results (citable by the model) keeps them as provider blocks."""
    result = {"type": "search_result", "source": "kb://1", "title": "KB", "content": [{"type": "text", "text": "42"}]}
    (tool,) = from_langchain([ToolMessage([result], tool_call_id="c1")])
    assert tool.content == (ProviderBlock(api="anthropic", raw=result),)
    assert to_langchain([tool.model_copy(update={"metadata": {}})])[0].content == [result]


# ---------------------------------------------------------------- the round trip
def _word(prefix: str) -> st.SearchStrategy[str]:
    return st.integers(0, 10_000).map(lambda n: f"{prefix}{n}")


provider_item = st.one_of(
    _word("q").map(lambda q: web_search_blocks(f"srv_{q}", q, [(f"https://e.org/{q}", q)])),
    _word("m").map(mcp_blocks),
    _word("c").map(lambda s: [compaction_block(s)]),
    _word("w").map(lambda q: [{"type": "web_search_call", "id": f"ws_{q}", "status": "completed",
                               "action": {"type": "search", "query": q}}]),
    _word("s").map(lambda q: [{"type": "server_tool_call", "id": f"srv_{q}", "name": "web_search", "args": {"query": q}},
                              {"type": "server_tool_result", "tool_call_id": f"srv_{q}", "status": "success",
                               "output": [{"type": "url", "url": f"https://e.org/{q}"}]}]),
    _word("t").map(lambda t: [{"type": "text", "text": t}]),
    _word("x").map(lambda t: [{"type": "text", "text": t, "cache_control": {"type": "ephemeral"}}]),
)


@PROFILE
@given(st.lists(provider_item, min_size=1, max_size=5).map(lambda parts: [b for p in parts for b in p]), st.data())
def test_round_trip_keeps_every_block(items: list[dict[str, Any]], data: st.DataObject) -> None:
    """Unchanged: equal back. Changed: every provider block a filter kept comes back as it came, in order."""
    original = AIMessage(items, id="a1")
    (converted,) = from_langchain([original])
    assert to_langchain([converted]) == [original]
    kinds = [b.get("type") for b in items]
    assert [b.kind for b in converted.content if isinstance(b, ProviderBlock)] == [k for k in kinds if k != "text"]
    keep = data.draw(st.lists(st.booleans(), min_size=len(converted.content), max_size=len(converted.content)))
    if all(keep):
        return
    changed = converted.model_copy(update={"content": tuple(b for b, k in zip(converted.content, keep, strict=True) if k)})
    (back,) = to_langchain([changed])
    got = back.content if isinstance(back.content, list) else [{"type": "text", "text": back.content}] if back.content else []
    expected = [{k: v for k, v in i.items() if k != "cache_control"} for i, k in zip(items, keep, strict=True) if k]
    assert got == expected
