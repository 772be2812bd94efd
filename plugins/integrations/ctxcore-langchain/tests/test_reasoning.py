"""Reasoning and thinking sent back by real chat models: counted as sent, kept on the way back unless removed."""

from __future__ import annotations

import json
import os
from typing import Any

from ctxcore_langchain import ContextHook, from_langchain, to_langchain
from ctxcore_langchain.cache import ConversionCache
from ctxcore_langchain.reasoning import reasoning_parts
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_anthropic import ChatAnthropic
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_openai import ChatOpenAI

from ctxcore import Pipeline, TextBlock
from ctxcore.testing.harness.anthropic_server import MessagesServer, sign
from ctxcore.testing.harness.openai_server import ChatServer

PROFILE = settings(max_examples=300 if os.environ.get("CTXCORE_THOROUGH") == "1" else 60, deadline=None,
                   suppress_health_check=[HealthCheck.too_slow])
PIPELINE = """
version: 1
model: {context_window: 100000, reserve_output_tokens: 100}
counter: {type: tiktoken, encoding: cl100k_base}
providers: [history]
filters: [token_budget]
"""
ENC = Pipeline.from_string(PIPELINE).builder().counter.counter._encoding


def cl100k(*texts: str) -> int:
    """Tokens of wire strings, with tiktoken directly (independent of ctxcore's counter)."""
    return sum(len(ENC.encode(t)) for t in texts)


def thinking(text: str) -> dict[str, Any]:
    return {"type": "thinking", "thinking": text, "signature": sign(text)}


def call(call_id: str) -> dict[str, Any]:
    return {"name": "lookup", "args": {"city": "Paris"}, "id": call_id, "type": "tool_call"}


def anthropic_history() -> list[Any]:
    """A finished turn and a tool loop in progress, both with signed thinking (ChatAnthropic's message form)."""
    return [
        HumanMessage("Weather in Rome?", id="h0"),
        AIMessage([thinking("The user wants Rome. " * 30), {"type": "text", "text": "Sunny in Rome."}], id="a0"),
        HumanMessage("And Paris?", id="h1"),
        AIMessage([thinking("Paris needs a lookup. " * 40), {"type": "redacted_thinking", "data": "RURBVEE=" * 20},
                   {"type": "tool_use", "id": "c1", "name": "lookup", "input": {"city": "Paris"}}],
                  tool_calls=[call("c1")], id="a1"),
        ToolMessage("18C and sunny", tool_call_id="c1", id="t1"),
    ]


def _report(history: list[Any], count: bool) -> tuple[list[Any], Any]:
    hook = ContextHook(Pipeline.from_string(PIPELINE), count_reasoning=count)
    window = hook({"messages": history})["llm_input_messages"]
    return window, hook.last_report


def _wire_reasoning_anthropic(body: dict[str, Any]) -> list[str]:
    """The reasoning strings of an Anthropic request: thinking text, signature, redacted data."""
    out: list[str] = []
    for m in body["messages"]:
        for b in m["content"] if isinstance(m["content"], list) else ():
            if b["type"] == "thinking":
                out += [b["thinking"], b["signature"]]
            elif b["type"] == "redacted_thinking":
                out.append(b["data"])
    return out


def test_chatanthropic_thinking_is_counted_as_sent() -> None:
    """Through ChatAnthropic, the report counts exactly the thinking, signatures and redacted data the stub received."""
    history = anthropic_history()
    window, counted = _report(history, True)
    window_off, uncounted = _report(history, False)
    assert all(a is b for a, b in zip(window[1:], history, strict=True))  # after the note: the framework's own objects
    with MessagesServer(thinking=True, validate=True) as server:
        model = ChatAnthropic(model="claude-test", base_url=server.base_url, api_key="unused", max_retries=0,
                              max_tokens=256)
        model.invoke(window)
        model.invoke(window_off)
    assert server.requests[0] == server.requests[1]  # counted or not, the same request
    sent = _wire_reasoning_anthropic(server.requests[-1])
    assert len(sent) == 5  # two thinking blocks (text and signature each), one redacted block: all sent back
    assert counted.total_tokens - uncounted.total_tokens == cl100k(*sent)


def test_thinking_is_budgeted() -> None:
    """A window that fits only without the old turn's thinking drops that turn when thinking counts; uncounted, the request would overflow."""
    big = "Let me weigh every option about Rome. " * 60
    history = [HumanMessage("Weather in Rome?", id="h0"),
               AIMessage([thinking(big), {"type": "text", "text": "Sunny in Rome."}], id="a0"),
               HumanMessage("And Paris?", id="h1")]
    budget = 300
    pipeline = PIPELINE.replace("context_window: 100000", f"context_window: {budget + 100}")
    counted = ContextHook(Pipeline.from_string(pipeline))
    window = counted({"messages": history})["llm_input_messages"]
    assert history[1] not in window and history[2] in window and counted.last_report.total_tokens <= budget
    blind = ContextHook(Pipeline.from_string(pipeline), count_reasoning=False)
    assert history[1] in blind({"messages": history})["llm_input_messages"]
    assert blind.last_report.total_tokens + cl100k(big, sign(big)) > budget  # what the provider would have received


def test_current_turn_counts_only_the_tool_loop_thinking() -> None:
    """count_reasoning="current_turn": only thinking after the last user message counts; every message still goes back as the framework's own."""
    history = anthropic_history()
    hook = ContextHook(Pipeline.from_string(PIPELINE), count_reasoning="current_turn")
    window = hook({"messages": history})["llm_input_messages"]
    assert all(a is b for a, b in zip(window[1:], history, strict=True))
    _, uncounted = _report(history, False)
    loop = history[3].content
    assert hook.last_report.total_tokens - uncounted.total_tokens == cl100k(
        loop[0]["thinking"], loop[0]["signature"], loop[1]["data"])
    window = hook({"messages": [*history, AIMessage("Sunny in Paris.", id="a2"), HumanMessage("Thanks", id="h2")]}
                  )["llm_input_messages"]
    assert hook.last_report.total_tokens < uncounted.total_tokens + 20  # the loop is over: no thinking counted
    assert all(a is b for a, b in zip(window[1:], history, strict=False))


def test_chatanthropic_changed_message_keeps_its_signed_thinking() -> None:
    """A tool-loop message a filter shortened still sends its thinking block first and unchanged (the stub checks the signature)."""
    history = anthropic_history()
    converted = from_langchain(history)
    blocks = converted[3].content
    shortened = converted[3].model_copy(update={"content": (*blocks[:3], TextBlock(text="Looking it up."))})
    back = to_langchain([*converted[:3], shortened, converted[4]])
    assert back[3].content[:2] == history[3].content[:2] and back[3].tool_calls == history[3].tool_calls
    with MessagesServer(thinking=True, validate=True) as server:
        ChatAnthropic(model="claude-test", base_url=server.base_url, api_key="unused", max_retries=0,
                      max_tokens=256).invoke(back)  # refused with a 400 if the thinking were missing or altered
    sent = server.requests[-1]["messages"][3]["content"]
    assert [b["type"] for b in sent] == ["thinking", "redacted_thinking", "text", "tool_use"]


def test_chatopenai_chat_completions_sends_no_reasoning() -> None:
    """ChatOpenAI (Chat Completions) sends neither reasoning_content nor reasoning blocks: count_reasoning=False is then exact."""
    history = [HumanMessage("Hi", id="h0"),
               AIMessage([{"type": "reasoning", "reasoning": "think " * 50, "id": "r0"},
                          {"type": "text", "text": "Hello."}], additional_kwargs={"reasoning_content": "deep " * 50},
                         response_metadata={"output_version": "v1"}, id="a0"),
               HumanMessage("Bye", id="h1")]
    window, report = _report(history, False)
    _, counted = _report(history, True)
    with ChatServer(reply=lambda body: "ok", validate=True) as server:
        ChatOpenAI(model="gpt-4o-mini", base_url=server.base_url, api_key="unused", max_retries=0).invoke(window)
    body = server.requests[-1]
    assert "reasoning_content" not in json.dumps(body) and "think think" not in json.dumps(body)
    n = 3  # OpenAI's published rule, as tests/test_agent.py counts it
    for m in body["messages"]:
        n += 3 + cl100k(m["role"], m["content"] if isinstance(m["content"], str) else "".join(p["text"] for p in m["content"]))
    assert report.total_tokens == n  # the reasoning_content is never counted, and uncounted blocks are exact
    assert counted.total_tokens - report.total_tokens == cl100k("think " * 50)  # the documented over-count


def test_chatopenai_responses_reasoning_is_counted_as_sent() -> None:
    """Through ChatOpenAI on the Responses API, the report counts the reasoning summaries and encrypted content sent back."""
    summary = [{"type": "summary_text", "text": "Plan: look it up. " * 20}]
    history = [HumanMessage("Weather?", id="h0"),
               AIMessage([{"type": "reasoning", "id": "rs_1", "summary": summary, "encrypted_content": "gAAAA" * 40},
                          {"type": "function_call", "call_id": "c1", "name": "lookup", "arguments": '{"city": "Paris"}'}],
                         tool_calls=[call("c1")], id="a0"),
               ToolMessage("18C", tool_call_id="c1", id="t0"),
               AIMessage([{"type": "text", "text": "Sunny."}],  # ChatOpenAI's older form (output_version v0)
                         additional_kwargs={"reasoning": {"type": "reasoning", "id": "rs_2", "summary": [
                             {"type": "summary_text", "text": "It is sunny. " * 10}]}}, id="a1"),
               HumanMessage("Thanks", id="h1")]
    window, counted = _report(history, True)
    _, uncounted = _report(history, False)
    with ChatServer(reply=lambda body: "ok") as server:
        ChatOpenAI(model="o4-mini", base_url=server.base_url, api_key="unused", max_retries=0,
                   use_responses_api=True).invoke(window)
    items = [i for i in server.requests[-1]["input"] if i.get("type") == "reasoning"]
    assert [i["id"] for i in items] == ["rs_1", "rs_2"]
    sent = [s["text"] for i in items for s in i["summary"]] + [i["encrypted_content"] for i in items if i.get("encrypted_content")]
    assert counted.total_tokens - uncounted.total_tokens == cl100k(*sent)


# ---------------------------------------------------------------- the round trip
def _word(prefix: str) -> st.SearchStrategy[str]:
    return st.integers(0, 10_000).map(lambda n: f"{prefix}{n} ")


reasoning_block = st.one_of(
    _word("thought").map(thinking),
    _word("redacted").map(lambda d: {"type": "redacted_thinking", "data": d}),
    st.tuples(_word("summary"), st.booleans()).map(lambda t: {
        "type": "reasoning", "id": "rs", "summary": [{"type": "summary_text", "text": t[0]}],
        **({"encrypted_content": "enc" + t[0]} if t[1] else {})}),
    _word("v1").map(lambda r: {"type": "reasoning", "reasoning": r, "extras": {"signature": "sig" + r}}),
    st.just({"type": "reasoning", "id": "rs_bare", "summary": []}),  # an id-only reference: no text
)
content_item = st.one_of(reasoning_block, _word("text").map(lambda t: {"type": "text", "text": t}))


@PROFILE
@given(st.lists(content_item, min_size=1, max_size=6, unique_by=json.dumps), st.data())
def test_round_trip_keeps_reasoning_unless_its_text_was_removed(items: list[Any], data: st.DataObject) -> None:
    """Unchanged: the same object back. Changed: each reasoning block comes back iff a filter kept all its text, never as text."""
    original = AIMessage(items, id="a1")
    cache = ConversionCache()
    (converted,) = cache.convert([original])
    assert cache.to_langchain([converted])[0] is original
    assert to_langchain([converted]) == [original]
    blocks = converted.content or ()
    keep = data.draw(st.lists(st.booleans(), min_size=len(blocks), max_size=len(blocks)))
    if all(keep):
        return
    changed = converted.model_copy(update={"content": tuple(b for b, k in zip(blocks, keep, strict=True) if k)})
    (back,) = cache.to_langchain([changed])
    kept_texts = {b.text for b, k in zip(blocks, keep, strict=True) if k}
    expected = [i for i in items if i["type"] != "text" and set(reasoning_parts(i)) <= kept_texts]
    expected += [{"type": "text", "text": i["text"]} for i in items if i["type"] == "text" and i["text"] in kept_texts]
    got = back.content if isinstance(back.content, list) else [{"type": "text", "text": back.content}] if back.content else []
    assert sorted(map(json.dumps, got)) == sorted(map(json.dumps, expected))
    reasoning_text = {p for i in items if i["type"] != "text" for p in reasoning_parts(i)}
    assert not any(b.get("type") == "text" and b["text"] in reasoning_text for b in got)  # never sent as the answer


def test_kwargs_reasoning_dropped_with_its_text() -> None:
    """``additional_kwargs["reasoning"]`` stays while its summary is in the content and goes when a filter removed it."""
    reasoning = {"type": "reasoning", "id": "rs_9", "summary": [{"type": "summary_text", "text": "why"}]}
    ai = AIMessage([{"type": "text", "text": "answer"}], additional_kwargs={"reasoning": reasoning, "other": 1}, id="a9")
    (converted,) = from_langchain([ai])
    assert [b.text for b in converted.content] == ["why", "answer"]
    (kept,) = to_langchain([converted.model_copy(update={"content": (TextBlock(text="why"), TextBlock(text="short"))})])
    assert kept.content == [{"type": "text", "text": "short"}]
    assert kept.additional_kwargs == {"reasoning": reasoning, "other": 1}
    (dropped,) = to_langchain([converted.model_copy(update={"content": "short"})])
    assert dropped.content == "short" and dropped.additional_kwargs == {"other": 1}
    (plain,) = from_langchain([AIMessage("answer", additional_kwargs={"reasoning": reasoning})])
    assert plain.content == "answer"  # with string content ChatOpenAI does not send it: not counted


def test_count_reasoning_false_carries_reasoning_uncounted() -> None:
    """With count_reasoning=False a thinking block is not in ctxcore's content, and a changed message still keeps it first."""
    ai = AIMessage([thinking("hidden"), {"type": "text", "text": "visible"}], id="a2")
    (converted,) = from_langchain([ai], count_reasoning=False)
    assert converted.content == (TextBlock(text="visible"),)
    (back,) = to_langchain([converted.model_copy(update={"content": "changed"})])
    assert back.content == [thinking("hidden"), {"type": "text", "text": "changed"}]
