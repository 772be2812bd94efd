"""The older output forms through real chat models: ``tool_outputs`` (v0) and v1 server tool blocks, counted and sent back."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

import pytest
from ctxcore_langchain import ContextHook, from_langchain, to_langchain
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_anthropic import ChatAnthropic
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_openai import ChatOpenAI

from ctxcore import Pipeline, ProviderBlock, TextBlock
from ctxcore.testing.harness.anthropic_server import MessagesServer, web_search_blocks
from ctxcore.testing.harness.openai_server import ChatServer

PROFILE = settings(max_examples=300 if os.environ.get("CTXCORE_THOROUGH") == "1" else 60, deadline=None,
                   suppress_health_check=[HealthCheck.too_slow])
PIPELINE = """
version: 1
model: {context_window: WINDOW, reserve_output_tokens: 100}
counter: {type: tiktoken, encoding: cl100k_base}
providers: [history]
filters: [token_budget]
target: {provider: PROVIDER}
"""
TEXT = "Sunny in Paris."


def pipeline(provider: str, window: int = 100000) -> Pipeline:
    return Pipeline.from_string(PIPELINE.replace("PROVIDER", provider).replace("WINDOW", str(window)))


def hook(provider: str, window: int = 100000) -> ContextHook:
    return ContextHook(pipeline(provider, window))


def cl100k_json(*blocks: dict[str, Any]) -> int:
    """Tokens of blocks' compact JSON, with tiktoken directly (independent of ctxcore's counter)."""
    enc = pipeline("anthropic").builder().counter.counter._encoding
    return sum(len(enc.encode(json.dumps(b, ensure_ascii=False, separators=(",", ":")))) for b in blocks)


def hosted_items(output: str = "Paris is the capital of France.") -> list[dict[str, Any]]:
    """Responses hosted tool items as the API returns them: a web search, an MCP call, a code interpreter run."""
    return [
        {"type": "web_search_call", "id": "ws_1", "status": "completed",
         "action": {"type": "search", "query": "weather paris", "sources": [{"type": "url", "url": "https://e.org/p"}]}},
        {"type": "mcp_call", "id": "mcp_1", "server_label": "wiki", "name": "lookup", "arguments": '{"q":"Paris"}',
         "output": output, "status": "completed"},
        {"type": "code_interpreter_call", "id": "ci_1", "code": "print(21 * 2)", "container_id": "cntr_1",
         "outputs": [{"type": "logs", "logs": "42"}], "status": "completed"},
    ]


def anthropic_blocks(output: str = "Paris is the capital of France.") -> list[dict[str, Any]]:
    """ChatAnthropic's server tool blocks: a signed web search and a code execution with its result."""
    return [*web_search_blocks("srvtoolu_1", "weather paris", [("https://e.org/p", "Paris weather")]),
            {"type": "server_tool_use", "id": "srvtoolu_2", "name": "code_execution", "input": {"code": "print(fact)"}},
            {"type": "code_execution_tool_result", "tool_use_id": "srvtoolu_2",
             "content": {"type": "code_execution_result", "stdout": output, "stderr": "", "return_code": 0, "content": []}}]


def openai_model(server: ChatServer, output_version: str) -> ChatOpenAI:
    return ChatOpenAI(model="gpt-5", base_url=server.base_url, api_key="unused", max_retries=0, use_responses_api=True,
                      output_version=output_version)


def anthropic_model(server: MessagesServer) -> ChatAnthropic:
    return ChatAnthropic(model="claude-test", base_url=server.base_url, api_key="unused", max_retries=0, max_tokens=256,
                         output_version="v1")


class Form:
    """One older output form: a real reply in it, the pipeline target, and the provider items a request carries."""

    def __init__(self, name: str, target: str, reply: Callable[[str], AIMessage],
                 send: Callable[[list[BaseMessage]], list[dict[str, Any]]]) -> None:
        self.name, self.target, self.reply, self.send = name, target, reply, send

    def __repr__(self) -> str:
        return self.name


def _openai_reply(output_version: str) -> Callable[[str], AIMessage]:
    def reply(output: str) -> AIMessage:
        with ChatServer(reply=lambda body: {"output": hosted_items(output), "content": TEXT}) as server:
            return openai_model(server, output_version).invoke([HumanMessage("Weather in Paris?")])  # type: ignore[return-value]
    return reply


def _openai_send(output_version: str) -> Callable[[list[BaseMessage]], list[dict[str, Any]]]:
    def send(messages: list[BaseMessage]) -> list[dict[str, Any]]:
        """The hosted tool items of the request ChatOpenAI sends for ``messages``."""
        with ChatServer(reply=lambda body: "ok") as server:
            openai_model(server, output_version).invoke(messages)
        return [i for i in server.requests[-1]["input"] if i.get("type") not in ("message", None)]
    return send


def _anthropic_reply(output: str) -> AIMessage:
    with MessagesServer(reply=lambda body: [*anthropic_blocks(output), {"type": "text", "text": TEXT}]) as server:
        return anthropic_model(server).invoke([HumanMessage("Weather in Paris?")])  # type: ignore[return-value]


def _anthropic_send(messages: list[BaseMessage]) -> list[dict[str, Any]]:
    """The server tool blocks of the request ChatAnthropic sends for ``messages`` (the stub checks signatures)."""
    with MessagesServer() as server:
        anthropic_model(server).invoke(messages)
    return [b for m in server.requests[-1]["messages"] if isinstance(m["content"], list)
            for b in m["content"] if b["type"] != "text"]


FORMS = [
    Form("chatopenai-v0-tool_outputs", "openai-responses", _openai_reply("v0"), _openai_send("v0")),
    Form("chatopenai-v1-server-tool-blocks", "openai-responses", _openai_reply("v1"), _openai_send("v1")),
    Form("chatanthropic-v1-server-tool-blocks", "anthropic", _anthropic_reply, _anthropic_send),
]


def older_items(message: AIMessage) -> list[dict[str, Any]]:
    """The message's items in its older form: ``additional_kwargs["tool_outputs"]`` or its v1 server tool blocks."""
    if "tool_outputs" in message.additional_kwargs:
        return list(message.additional_kwargs["tool_outputs"])
    return [b for b in message.content if isinstance(b, dict) and b["type"].startswith("server_tool_")]


def history(reply: AIMessage) -> list[BaseMessage]:
    return [HumanMessage("Weather in Paris?", id="h0"), reply, HumanMessage("Thanks!", id="h1")]


@pytest.mark.parametrize("form", FORMS, ids=repr)
def test_older_form_is_counted_as_its_json(form: Form) -> None:
    """Each older-form item costs its JSON's tokens, at least what the chat model sends for it, and goes back unchanged."""
    reply = form.reply("Paris is the capital of France.")
    items = older_items(reply)
    assert len(items) == (3 if "v0" in form.name else 4 if "anthropic" in form.name else 6)
    chat = hook(form.target)
    window = chat({"messages": history(reply)})["llm_input_messages"]
    with_items = chat.last_report.total_tokens
    chat({"messages": history(AIMessage(TEXT, id="a0"))})
    counted = with_items - chat.last_report.total_tokens
    # the rule: each item is a provider block counted as its JSON (text beside it: a few tokens of framing)
    assert 0 <= counted - cl100k_json(*items) <= 6
    assert window[1] is reply  # unchanged: the framework's own message, so the request is the one it would send
    sent = form.send(window)
    assert sent == form.send(history(reply)) and sent
    assert counted >= cl100k_json(*sent)


@pytest.mark.parametrize("form", FORMS, ids=repr)
def test_budget_drops_a_turn_whose_older_items_do_not_fit(form: Form) -> None:
    """A turn whose tool output alone overflows the budget is dropped, so every item sent is counted within it."""
    reply = form.reply(" ".join(f"Paris fact {i} is long." for i in range(60)))
    chat = hook(form.target, window=300)
    window = chat({"messages": history(reply)})["llm_input_messages"]
    report = chat.last_report
    assert reply not in window
    sent = form.send(window)
    assert report.budget is not None and cl100k_json(*sent) <= report.total_tokens <= report.budget


def test_tool_outputs_are_counted_when_chatopenai_sends_them() -> None:
    """``tool_outputs`` count beside list content (even empty), which ChatOpenAI resends; beside a string it sends none, so none count."""
    item = hosted_items()[1]
    for content, sent in [(TEXT, []), ([], [item]), ([{"type": "text", "text": TEXT}], [item])]:
        message = AIMessage(content, id="a0", additional_kwargs={"tool_outputs": [item]})
        (converted,) = from_langchain([message])
        blocks = [b.raw for b in converted.content or () if isinstance(b, ProviderBlock)]
        assert blocks == sent and to_langchain([converted]) == [message]
        assert _openai_send("v0")(history(message)) == sent


def test_changed_message_keeps_its_tool_outputs() -> None:
    """A filter that rewrites a v0 message's text keeps its tool_outputs in place and its content a list, so ChatOpenAI resends them."""
    reply = _openai_reply("v0")("Paris is the capital of France.")
    (converted,) = from_langchain([reply])
    shortened = converted.model_copy(update={"content": (*converted.content[:3], TextBlock(text="Sunny."))})
    (back,) = to_langchain([shortened])
    assert back.additional_kwargs["tool_outputs"] == reply.additional_kwargs["tool_outputs"]
    assert back.content == [{"type": "text", "text": "Sunny."}]
    assert _openai_send("v0")(history(back)) == _openai_send("v0")(history(reply))
    emptied = converted.model_copy(update={"content": converted.content[1:3]})
    (back,) = to_langchain([emptied])
    assert back.additional_kwargs["tool_outputs"] == reply.additional_kwargs["tool_outputs"][1:] and back.content == []
    (summarized,) = to_langchain([converted.model_copy(update={"content": "We looked it up."})])
    assert "tool_outputs" not in summarized.additional_kwargs and summarized.content == "We looked it up."


def test_tool_outputs_beside_v0_reasoning_are_sent_with_it() -> None:
    """A v0 reply's reasoning and tool_outputs are both counted, and a changed reply still sends both (the stub checks the pair)."""
    mcp = hosted_items()[1]
    first = {"output": [mcp], "content": TEXT}  # the mcp_call must come back with the encrypted reasoning before it
    with ChatServer(reasoning=True, reply=lambda body: first if len(body["input"]) == 1 else "ok") as server:
        model = ChatOpenAI(model="gpt-5", base_url=server.base_url, api_key="unused", max_retries=0,
                           use_responses_api=True, output_version="v0", store=False)
        reply = model.invoke([HumanMessage("Weather in Paris?")])
        assert set(reply.additional_kwargs) >= {"reasoning", "tool_outputs"}
        (converted,) = from_langchain([reply])
        encrypted = reply.additional_kwargs["reasoning"]["encrypted_content"]
        assert converted.content == (TextBlock(text=encrypted), ProviderBlock(api="openai-responses", raw=mcp),
                                     TextBlock(text=TEXT))
        (back,) = to_langchain([converted.model_copy(update={"content": (*converted.content[:2], TextBlock(text="Sunny."))})])
        model.invoke(history(back))
    assert [i.get("type") for i in server.requests[-1]["input"]] == ["message", "reasoning", "mcp_call", "message", "message"]


def test_v1_blocks_belong_to_the_messages_provider() -> None:
    """v1 server tool blocks are Anthropic's in an Anthropic message, else the Responses API's (ChatOpenAI rewrites any)."""
    call = {"type": "server_tool_call", "id": "srvtoolu_1", "name": "web_search", "args": {"query": "paris"}}
    for meta, api in [({"model_provider": "anthropic", "output_version": "v1"}, "anthropic"),
                      ({"model_provider": "openai", "output_version": "v1"}, "openai-responses"),
                      ({}, "openai-responses")]:
        (m,) = from_langchain([AIMessage([call], response_metadata=meta)])
        assert m.content == (ProviderBlock(api=api, raw=call),)  # type: ignore[arg-type]


# ---------------------------------------------------------------- the round trip
def _word(prefix: str) -> st.SearchStrategy[str]:
    return st.integers(0, 10_000).map(lambda n: f"{prefix}{n}")


hosted_item = st.one_of(
    _word("ws").map(lambda q: {"type": "web_search_call", "id": q, "status": "completed",
                               "action": {"type": "search", "query": q}}),
    _word("mcp").map(lambda q: {"type": "mcp_call", "id": q, "server_label": "wiki", "name": "lookup",
                                "arguments": json.dumps({"q": q}), "output": f"about {q}", "status": "completed"}),
    _word("ci").map(lambda q: {"type": "code_interpreter_call", "id": q, "code": f"print('{q}')", "container_id": "c",
                               "outputs": [{"type": "logs", "logs": q}], "status": "completed"}),
    st.just("not an item"),
)
text_part = _word("t").map(lambda t: {"type": "text", "text": t, "annotations": []})


@PROFILE
@given(st.lists(hosted_item, min_size=1, max_size=4), st.lists(text_part, max_size=3), st.data())
def test_tool_outputs_round_trip(items: list[Any], texts: list[dict[str, Any]], data: st.DataObject) -> None:
    """Unchanged: equal back and every typed item counted. Changed: tool_outputs keeps exactly the items a filter kept, in order."""
    original = AIMessage(texts, id="a1", additional_kwargs={"tool_outputs": items, "refusal": None})
    (converted,) = from_langchain([original])
    assert to_langchain([converted]) == [original]
    content = converted.content or ()
    blocks = [b for b in content if isinstance(b, ProviderBlock)]
    assert [b.raw for b in blocks] == [i for i in items if isinstance(i, dict)]
    assert {b.api for b in blocks} <= {"openai-responses"}
    keep = data.draw(st.lists(st.booleans(), min_size=len(content), max_size=len(content)))
    if all(keep):
        return
    kept = tuple(b for b, k in zip(content, keep, strict=True) if k)
    (back,) = to_langchain([converted.model_copy(update={"content": kept})])
    kept_items = [b.raw for b in kept if isinstance(b, ProviderBlock)]
    assert [i for i in back.additional_kwargs.get("tool_outputs", []) if isinstance(i, dict)] == kept_items
    if kept_items:  # a list: ChatOpenAI sends tool_outputs only beside list content
        assert back.content == [{"type": "text", "text": b.text} for b in kept if isinstance(b, TextBlock)]
    assert back.additional_kwargs["refusal"] is None
