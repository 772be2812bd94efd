"""Malformed tool calls (``AIMessage.invalid_tool_calls``): converted as calls with their raw text, kept or dropped with their results."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from ctxcore_langchain import ContextBudgetExceeded, ContextHook, from_langchain, to_langchain
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_openai import ChatOpenAI

from ctxcore import Pipeline
from ctxcore.testing.harness.openai_server import ChatServer

PROFILE = settings(max_examples=200 if os.environ.get("CTXCORE_THOROUGH") == "1" else 25, deadline=None,
                   suppress_health_check=[HealthCheck.too_slow])
RAW = '{"doc_id": 1'


def _bad(call_id: str, args: str | None = RAW) -> dict[str, Any]:
    return {"name": "fetch", "args": args, "id": call_id, "error": "Function fetch arguments are not valid JSON",
            "type": "invalid_tool_call"}


def _pipeline(window: int = 100_000) -> Pipeline:
    return Pipeline.from_string(f"version: 1\nmodel: {{context_window: {window}, reserve_output_tokens: 50}}\n"
                                "providers: [history]\nfilters: [token_budget]\n")


@pytest.fixture(scope="module")
def wire() -> Iterator[Callable[[list[Any]], list[dict[str, Any]]]]:
    """Sends a window with ChatOpenAI to a stub that refuses an illegal request (HTTP 400, as OpenAI); gives the wire messages."""
    with ChatServer(reply=lambda body: "ok", validate=True) as server:
        model = ChatOpenAI(model="gpt-4o-mini", base_url=server.base_url, api_key="unused", max_retries=0)

        def send(window: list[Any]) -> list[dict[str, Any]]:
            model.invoke(window)
            return server.requests[-1]["messages"]

        yield send


def test_the_issue_repro_keeps_the_invalid_call_and_its_error_result(wire) -> None:
    """The minimal history (a malformed call answered by an error ToolMessage) reaches the wire whole and legal."""
    history = [HumanMessage("fetch doc 1", id="h1"), AIMessage("", invalid_tool_calls=[_bad("c1")], id="a1"),
               ToolMessage("Error: arguments are not valid JSON", tool_call_id="c1", id="t1"),
               HumanMessage("try again", id="h2")]
    window = ContextHook(_pipeline())({"messages": history})["llm_input_messages"]
    assert window[1:] == history  # after the "History semantics" note: the framework's messages, the call kept
    sent = wire(window)
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "user"]
    assert sent[2]["tool_calls"][0]["id"] == "c1" and sent[2]["tool_calls"][0]["function"]["arguments"] == RAW


def test_invalid_call_is_counted_with_its_raw_text() -> None:
    """The converted call carries the raw argument text, after the valid calls (ChatOpenAI's order), so it is counted."""
    ai = AIMessage("", tool_calls=[{"name": "ok", "args": {"a": 1}, "id": "v1", "type": "tool_call"}],
                   invalid_tool_calls=[_bad("c1"), _bad("c2", None)])
    (converted,) = from_langchain([ai])
    assert [(c.id, c.arguments) for c in converted.tool_calls] == [("v1", '{"a": 1}'), ("c1", RAW), ("c2", "")]
    assert to_langchain([converted]) == [ai]


def test_a_changed_message_gives_back_its_original_invalid_calls() -> None:
    """A message a filter changed (its text) still sends its invalid calls as the framework's own, not as valid calls."""
    ai = AIMessage("long text", invalid_tool_calls=[_bad("c1")], id="a1")
    (converted,) = from_langchain([ai])
    (back,) = to_langchain([converted.model_copy(update={"content": "short"})])
    assert back.content == "short" and back.tool_calls == [] and back.invalid_tool_calls == ai.invalid_tool_calls


turn = st.tuples(
    st.integers(0, 2),  # valid calls
    st.integers(0, 2),  # invalid calls
    st.sampled_from([RAW, "not json", "", '{"a": [1, 2', "[1, 2]"]),
    st.integers(0, 400),  # result size (words)
)


@PROFILE
@given(st.lists(turn, min_size=1, max_size=6), st.sampled_from([400, 900, 2_000, 100_000]))
def test_the_request_chatopenai_sends_is_legal_with_invalid_calls(wire, turns: list[Any], window: int) -> None:
    """Generated histories with malformed calls and any budget: the request ChatOpenAI sends after the hook is legal.

    The stub validates the wire as OpenAI does (every call answered before the next message, no result without
    its call); the same history sent without the hook is legal too, so the hook never makes a request illegal.
    """
    history: list[Any] = []
    for t, (valid, invalid, raw, size) in enumerate(turns):
        history.append(HumanMessage(f"question {t}", id=f"h{t}"))
        good = [{"name": "fetch", "args": {"n": k}, "id": f"v{t}_{k}", "type": "tool_call"} for k in range(valid)]
        bad = [_bad(f"b{t}_{k}", raw) for k in range(invalid)]
        history.append(AIMessage("" if good or bad else "answer", tool_calls=good, invalid_tool_calls=bad, id=f"a{t}"))
        for call in [*good, *bad]:
            status = "error" if call in bad else "success"
            history.append(ToolMessage("word " * size, tool_call_id=call["id"], status=status, id=f"t{call['id']}"))
    history.append(HumanMessage("go on", id="last"))
    wire(history)  # legal without the middleware
    hook = ContextHook(_pipeline(window))
    try:
        result = hook({"messages": history})["llm_input_messages"]
    except Exception as exc:  # only a budget error is allowed: the newest turn may not fit the smallest windows
        assert type(exc).__name__ == "ContextBudgetExceeded", exc
        return
    sent = wire(result)
    answered = {m["tool_call_id"] for m in sent if m["role"] == "tool"}
    called = [c["id"] for m in sent for c in m.get("tool_calls") or ()]
    assert sorted(called) == sorted(answered)  # kept or dropped as one unit
    ids_sent = set(called)
    for message in history:
        if isinstance(message, AIMessage) and any(c["id"] in ids_sent for c in message.invalid_tool_calls):
            assert message in result  # a kept malformed call goes out as the framework's own message


def test_over_budget_error_names_the_largest_contributor_first() -> None:
    """A huge tool result in the newest turn is named first (its call id and tokens), with a truncating or offloading fix."""
    history = [HumanMessage("read the log", id="h1"),
               AIMessage("", tool_calls=[{"name": "read", "args": {}, "id": "c7", "type": "tool_call"}], id="a1"),
               ToolMessage("line of the log " * 3000, tool_call_id="c7", id="t1")]
    with pytest.raises(ContextBudgetExceeded) as caught:
        ContextHook(_pipeline(2_000))({"messages": history})
    text = str(caught.value)
    assert text.startswith("the newest tool result (call 'c7', ") and "tool_results" in text.split(". ")[0]
