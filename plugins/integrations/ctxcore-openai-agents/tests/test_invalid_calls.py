"""Malformed tool calls (a ``function_call`` whose ``arguments`` is not JSON): converted with the raw text, kept or dropped with their error output.

The SDK answers such a call with an error ``function_call_output`` (the
function tool's failure text) and sends both back; the requests here go
through the real ``Runner`` and ``OpenAIResponsesModel`` to a stub that
refuses what the Responses API refuses (a call without its output, an output
without its call: tests/conftest.py).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
from collections.abc import Iterator
from typing import Any

import pytest
from agents import Agent, RunConfig, Runner, function_tool, set_tracing_disabled
from agents.models.openai_responses import OpenAIResponsesModel
from ctxcore_openai_agents import ContextBudgetExceeded, ContextFilter, items_from_messages, messages_from_items
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai import AsyncOpenAI, BadRequestError

from ctxcore import Pipeline

set_tracing_disabled(True)

PROFILE = settings(max_examples=200 if os.environ.get("CTXCORE_THOROUGH") == "1" else 25, deadline=None,
                   suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
RAW = '{"topic": "x"'


@function_tool
def lookup(topic: str) -> str:
    """Look a topic up in the archive."""
    return f"Archive entry on {topic}."


def pipeline(window: int = 100_000) -> Pipeline:
    return Pipeline.from_string(f"version: 1\nmodel: {{context_window: {window}, reserve_output_tokens: 50}}\n"
                                "counter: {type: tiktoken, encoding: cl100k_base}\n"
                                "providers: [history]\nfilters: [token_budget]\n")


def agent(server: Any) -> Agent[Any]:
    client = AsyncOpenAI(base_url=server.base_url, api_key="unused", max_retries=0)
    return Agent(name="a", instructions="Use the tool.", tools=[lookup],
                 model=OpenAIResponsesModel(model="gpt-4o-mini", openai_client=client))


def test_the_sdk_answers_a_malformed_call_and_the_filter_sends_both(strict_responses: Any) -> None:
    """A model call with broken JSON: the SDK's error output and the call go back through the filter, raw text kept."""
    steps = itertools.count()

    def reply(body: dict[str, Any]) -> Any:
        if next(steps) == 0:
            return {"content": None, "tool_calls": [{"id": "call_bad", "type": "function",
                                                     "function": {"name": "lookup", "arguments": RAW}}]}
        return "Sorry, retrying did not help."

    filt = ContextFilter(pipeline())
    with strict_responses(reply=reply) as server:
        result = asyncio.run(Runner.run(agent(server), "look x up", run_config=RunConfig(call_model_input_filter=filt)))
    assert result.final_output == "Sorry, retrying did not help."
    sent = [i for i in server.requests[1]["input"] if i.get("role") != "system"]  # but the pipeline's own note
    (bad,) = [i for i in sent if i.get("type") == "function_call"]
    (error,) = [i for i in sent if i.get("type") == "function_call_output"]
    assert bad["arguments"] == RAW and error["call_id"] == "call_bad" and "error" in str(error["output"]).lower()
    messages = messages_from_items(sent)
    assert messages[1].tool_calls[0].arguments == RAW and messages[2].tool_call_id == "call_bad"
    assert [m.role for m in messages] == ["user", "assistant", "tool"]
    assert items_from_messages(messages) == sent  # round trip, the raw text and all


def test_a_malformed_call_and_its_output_are_dropped_as_one_unit(illegal_input: Any) -> None:
    """A window too small for the old malformed call drops it with its error output: the request stays legal."""
    items = [{"role": "user", "content": "old question " * 50},
             {"type": "function_call", "call_id": "c1", "name": "lookup", "arguments": RAW + " " + "x" * 400},
             {"type": "function_call_output", "call_id": "c1", "output": "An error occurred: invalid JSON " * 60},
             {"role": "user", "content": "new question"}]
    done = ContextFilter(pipeline(300)).apply(items)
    assert [i for i in done.items if i.get("role") != "system"] == [items[-1]] and illegal_input(done.items) is None
    kept = ContextFilter(pipeline()).apply(items)
    assert [i for i in kept.items if i.get("role") != "system"] == items  # all: the runner's own, the call unchanged


# ---------------------------------------------------------------- generated histories through the real runner
turn = st.tuples(
    st.integers(0, 2),  # valid calls
    st.integers(0, 2),  # malformed calls
    st.sampled_from([RAW, "not json", "", '{"a": [1, 2', "[1, 2]", "{'topic': 1}"]),
    st.integers(0, 300),  # output size (words)
)


def history_of(turns: list[Any]) -> list[dict[str, Any]]:
    """Input items of a conversation: each turn a question, valid and malformed calls, each answered, and an answer."""
    items: list[dict[str, Any]] = []
    for t, (valid, invalid, raw, size) in enumerate(turns):
        items.append({"role": "user", "content": f"question {t}"})
        calls = [(f"v{t}_{k}", json.dumps({"topic": str(k)})) for k in range(valid)] + [(f"b{t}_{k}", raw) for k in range(invalid)]
        for cid, arguments in calls:
            items.append({"type": "function_call", "id": f"fc_{cid}", "call_id": cid, "name": "lookup",
                          "arguments": arguments, "status": "completed"})
        for cid, _ in calls:
            text = "An error occurred while running the tool. Please try again." if cid[0] == "b" else "word " * size
            items.append({"type": "function_call_output", "call_id": cid, "output": text})
        items.append({"type": "message", "id": f"msg_{t}", "role": "assistant", "status": "completed",
                      "content": [{"type": "output_text", "text": f"answer {t}", "annotations": []}]})
    items.append({"role": "user", "content": "go on"})
    return items


@pytest.fixture(scope="module")
def wire(strict_responses: Any) -> Iterator[Any]:
    with strict_responses(reply=lambda body: "ok") as server:
        yield server


@PROFILE
@given(st.lists(turn, min_size=1, max_size=6), st.sampled_from([150, 400, 900, 100_000]))
def test_the_request_the_sdk_sends_is_legal_with_malformed_calls(wire: Any, illegal_input: Any, turns: list[Any],
                                                                   window: int) -> None:
    """Generated histories with malformed calls, any budget: the SDK's request after the filter is legal (the stub refuses otherwise).

    The same history run without the filter is legal too, so the filter never
    makes a request illegal; a malformed call that is sent is the runner's own
    item, raw arguments unchanged.
    """
    items = history_of(turns)
    asyncio.run(Runner.run(agent(wire), items))  # legal without the filter (the stub answers 400 otherwise)
    before = len(wire.requests)
    try:
        asyncio.run(Runner.run(agent(wire), items,
                               run_config=RunConfig(call_model_input_filter=ContextFilter(pipeline(window)))))
    except ContextBudgetExceeded:  # only the newest turn not fitting the smallest windows is allowed
        assert window < 900 and len(wire.requests) == before
        return
    except BadRequestError as exc:  # pragma: no cover - the failure this test exists to catch
        pytest.fail(f"the stub refused the filtered request: {exc}")
    sent = wire.requests[-1]["input"]
    assert illegal_input(sent) is None
    by_call = {i["call_id"]: i for i in items if i.get("type") == "function_call"}
    for item in sent:
        if item.get("type") == "function_call":
            assert item["arguments"] == by_call[item["call_id"]]["arguments"]
    assert sent[-1] == {"role": "user", "content": "go on"}
