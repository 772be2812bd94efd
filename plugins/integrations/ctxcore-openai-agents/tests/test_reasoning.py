"""Reasoning items: counted by the provider's rule (the current turn's, by default), budgeted, shown in the report.

The real Agents SDK runs against a Responses stub whose "model" answers with
reasoning items (summary and encrypted content) before each call and answer,
as a reasoning model does; the SDK sends them back with the run's input.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import itertools
import json
import random
from collections.abc import Iterator
from typing import Any

import pytest
from agents import Agent, RunConfig, Runner, function_tool, set_tracing_disabled
from agents.models.openai_responses import OpenAIResponsesModel
from ctxcore_openai_agents import ContextFilter, messages_from_items
from ctxcore_openai_agents.reasoning import ReasoningCount, reasoning_text, with_reasoning, without_reasoning
from openai import AsyncOpenAI

from ctxcore import Pipeline, TextBlock

set_tracing_disabled(True)

# an encrypted_content (Fernet-like, as the API's) for a few hundred reasoning tokens
SECRET = "gAAAAABo" + base64.urlsafe_b64encode(random.Random(0).randbytes(600)).decode()


def pipeline(window: int = 100_000, reserve: int = 100) -> Pipeline:
    return Pipeline.from_string(f"version: 1\nmodel: {{context_window: {window}, reserve_output_tokens: {reserve}}}\n"
                                "counter: {type: tiktoken, encoding: cl100k_base}\n"
                                "providers: [history]\nfilters: [token_budget]\n")


def reasoning(rid: str, summary: str = "Thinking about the lookup.", encrypted: str = SECRET) -> dict[str, Any]:
    return {"type": "reasoning", "id": rid, "summary": [{"type": "summary_text", "text": summary}],
            "encrypted_content": encrypted}


def call(cid: str, arguments: str = '{"topic": "x"}') -> dict[str, Any]:
    return {"type": "function_call", "id": f"fc_{cid}", "call_id": cid, "name": "lookup", "arguments": arguments,
            "status": "completed"}


def output(cid: str, text: str = "found it") -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": cid, "output": text}


def answer(mid: str, text: str) -> dict[str, Any]:
    return {"type": "message", "id": mid, "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}


def two_turns() -> list[dict[str, Any]]:
    """An earlier turn and the current one, each with a reasoning item before its call and before its answer."""
    return [{"role": "user", "content": "first question"},
            reasoning("rs_1", "earlier thought"), call("c1"), output("c1"),
            reasoning("rs_2", "earlier answer thought"), answer("msg_1", "first answer"),
            {"role": "user", "content": "second question"},
            reasoning("rs_3", "current thought"), call("c2"), output("c2")]


def history_items(sent: list[Any]) -> list[Any]:
    """The sent items but the pipeline's own system note (its "History semantics" prompt)."""
    return [i for i in sent if i.get("role") != "system"]


class TestCountedByTheRule:
    def test_current_turn_counts_only_reasoning_after_the_last_user_message(self) -> None:
        """current_turn: the report's total grows by exactly the current turn's reasoning text; the note says so."""
        items = two_turns()
        totals, notes = {}, {}
        for mode in ("none", "current_turn", "all"):
            filt = ContextFilter(pipeline(), count_reasoning=mode)  # type: ignore[arg-type]
            done = filt.apply(items, "Be brief.")
            sent = history_items(done.items)
            assert sent == items and all(a is b for a, b in zip(sent, items, strict=True))  # all sent, the runner's own objects
            totals[mode], notes[mode] = done.report.total_tokens, (done.reasoning_items, done.reasoning_tokens)
        counter = pipeline().builder().counter
        current = counter.count_text(reasoning_text(items[7]))
        earlier = counter.count_text(reasoning_text(items[1])) + counter.count_text(reasoning_text(items[4]))
        assert current > 300  # the encrypted content is counted, not only the summary
        assert totals["current_turn"] - totals["none"] == current and notes["current_turn"] == (1, current)
        assert totals["all"] - totals["none"] == current + earlier and notes["all"] == (3, current + earlier)
        assert notes["none"] == (0, 0)

    def test_the_report_shows_the_counted_reasoning(self) -> None:
        """The build report carries a note with the reasoning items and tokens counted, and the message's count holds them."""
        filt = ContextFilter(pipeline())
        done = filt.apply(two_turns())
        (note,) = [n for n in done.report.notes if "reasoning" in n]
        assert f"1 reasoning item(s) sent and counted, {done.reasoning_tokens} tokens" in note
        (record,) = [r for r in done.report.kept if r.role == "assistant" and r.tokens and r.tokens > done.reasoning_tokens]
        assert record.tokens is not None and record.tokens > done.reasoning_tokens

    def test_the_budget_drops_older_turns_to_make_room_for_current_reasoning(self, illegal_input: Any) -> None:
        """A window the current turn's reasoning fills: older messages go; counted none they would all be sent (over the window)."""
        items = two_turns()
        counter = pipeline().builder().counter
        base = ContextFilter(pipeline(), count_reasoning="none").apply(items).report.total_tokens
        current = counter.count_text(reasoning_text(items[7]))
        window = base + current - 5 + 100  # room for everything but a few tokens of the current reasoning
        counted = ContextFilter(pipeline(window)).apply(items)
        uncounted = ContextFilter(pipeline(window), count_reasoning="none").apply(items)
        assert history_items(uncounted.items) == items and len(history_items(counted.items)) < len(items)
        assert counted.report.total_tokens <= window - 100 and counted.items[-3:] == items[-3:]
        # what was dropped went as whole units: no reasoning item without the item after it, no output without its call
        assert illegal_input(counted.items) is None

    def test_unknown_mode_is_refused(self) -> None:
        """count_reasoning must be one of the three rules; a typo names them."""
        with pytest.raises(ValueError, match="'current_turn', 'all', 'none'"):
            ContextFilter(pipeline(), count_reasoning="current")  # type: ignore[arg-type]

    def test_warm_calls_reuse_the_counted_messages(self) -> None:
        """A second call over the same current turn makes no new counted copy (the count cache hits)."""
        count = ReasoningCount()
        messages = messages_from_items(two_turns())
        first, n = count.apply(messages)
        again, m = count.apply(list(messages))
        assert n == m == 1 and first[-2] is again[-2] and first[-2] is not messages[-2]
        assert first[:-2] == messages[:-2] and count.apply(messages[:5])[1] == 0  # ends with a user message: none


class TestBlocks:
    def test_reasoning_text_reads_summary_raw_parts_and_encrypted_content(self) -> None:
        """The counted text is the summaries, the raw reasoning_text parts and the encrypted payload; other items give ''."""
        item = {"type": "reasoning", "id": "rs", "summary": [{"type": "summary_text", "text": "S1"},
                                                             {"type": "summary_text", "text": "S2"}],
                "content": [{"type": "reasoning_text", "text": "raw"}], "encrypted_content": "ENC"}
        assert reasoning_text(item) == "S1\nS2\nraw\nENC"
        assert reasoning_text({"type": "reasoning", "id": "rs", "summary": []}) == ""
        assert reasoning_text(call("c1")) == ""

    def test_blocks_in_their_places_and_out_again(self) -> None:
        """with_reasoning puts each reasoning text where its item was; without_reasoning takes only those out of a changed copy."""
        (_, m) = messages_from_items([{"role": "user", "content": "q"}, reasoning("rs_1", "plan"), answer("m1", "Hi."),
                                      reasoning("rs_2", "more"), call("c1")])[:2]
        counted = with_reasoning(m)
        assert [b.text for b in counted.content] == [reasoning_text(reasoning("rs_1", "plan")), "Hi.",
                                                     reasoning_text(reasoning("rs_2", "more"))]
        assert counted.id == m.id and counted.metadata == m.metadata and counted.tool_calls == m.tool_calls
        shortened = counted.model_copy(update={"content": (*counted.content[:1], TextBlock(text="H."), *counted.content[2:])})
        assert without_reasoning(shortened, counted).content == "H."
        assert without_reasoning(m, counted) is m and with_reasoning(messages_from_items([answer("m", "x")])[0]).content == "x"


class TestChangedByAFilter:
    def test_a_changed_counted_message_is_rendered_without_its_reasoning(self, illegal_input: Any) -> None:
        """A filter that shortens a counted assistant message: it is rendered with its own text only, no reasoning item.

        The reasoning blocks are counting, not text: sent as ``output_text`` they
        would put the encrypted payload in the model's visible history; the
        reasoning items cannot follow a rendered message (no item id), so they go.
        """
        items = [{"role": "user", "content": "q"}, reasoning("rs_1", "plan"), answer("msg_1", "A long answer."),
                 {"role": "user", "content": "q2"}, reasoning("rs_2", "plan"), answer("msg_2", "Another long answer.")]
        filt = ContextFilter(pipeline())
        state, head, spans, listed = filt._prepare(items, None, ())
        built = filt.pipeline.build(state)
        k = max(i for i, m in enumerate(built.messages) if m.role == "assistant")
        counted = built.messages[k]
        assert [b.text for b in counted.content][1] == "Another long answer."  # the counted form: reasoning, text
        short = counted.model_copy(update={"content": (counted.content[0], TextBlock(text="Short."))})
        changed = dataclasses.replace(built, messages=(*built.messages[:k], short, *built.messages[k + 1:]))
        done = filt._finish(changed, head, spans, listed)
        assert done is not None
        assert done.items[-1]["role"] == "assistant" and "Short." in json.dumps(done.items[-1])
        assert SECRET not in json.dumps(done.items[-1]) and "rs_2" not in json.dumps(done.items)
        assert illegal_input(done.items) is None and done.reasoning_items == 0


# ---------------------------------------------------------------- the real SDK, reasoning on the wire
@function_tool
def lookup(topic: str) -> str:
    """Look a topic up in the archive."""
    return f"Archive entry on {topic}: " + " ".join(f"fact-{topic}-{k}" for k in range(40))


CALLS = 2


def reasoning_model() -> Any:
    """Per user turn: a reasoning item and a lookup, twice, then a reasoning item and an answer."""
    counter = itertools.count()

    def reply(body: dict[str, Any]) -> Any:
        n = next(counter)
        turn, step = divmod(n, CALLS + 1)
        thought = [(f"turn {turn} step {step}: thinking", SECRET)]
        if step == CALLS:
            return {"content": f"Answer {turn}.", "reasoning": thought}
        return {"content": None, "reasoning": thought,
                "tool_calls": [{"id": f"call_{turn}_{step}", "type": "function",
                                "function": {"name": "lookup", "arguments": json.dumps({"topic": f"t{turn}{step}"})}}]}

    return reply


@pytest.fixture
def server(strict_responses: Any) -> Iterator[Any]:
    with strict_responses(reply=reasoning_model()) as s:
        yield s


def independent(counter: Any, body: dict[str, Any]) -> int:
    """The request's tokens from the request alone, the current turn's reasoning included (earlier ones the API drops)."""
    items = body["input"]
    last_user = max((k for k, i in enumerate(items) if i.get("role") == "user"), default=-1)
    total = counter.count_text(body.get("instructions") or "")
    for k, item in enumerate(items):
        if item.get("type") == "reasoning":
            total += counter.count_text(reasoning_text(item)) if k > last_user else 0
            continue
        total += 4
        for key in ("content", "output", "arguments", "name"):
            value = item.get(key)
            if isinstance(value, str):
                total += counter.count_text(value)
            elif isinstance(value, list):
                total += sum(counter.count_text(p.get("text") or "") for p in value)
    return total


def test_a_reasoning_run_sends_and_counts_the_current_turns_reasoning(server: Any) -> None:
    """Two turns of a reasoning agent: the SDK's requests carry reasoning items legally, the current turn's counted within budget.

    Counted by the Responses rule (earlier turns' reasoning dropped by the API,
    the current turn's read): every request fits the window by an independent
    count, while the same last call built with ``count_reasoning="none"`` would not.
    """
    # the current turn (two ~600-token reasoning items, two calls and outputs) fits, not with the earlier turn besides
    window, reserve = 2100, 100
    filt = ContextFilter(pipeline(window, reserve))
    given: list[list[Any]] = []

    async def recording(data: Any) -> Any:
        given.append(list(data.model_data.input))
        return await filt(data)

    agent = Agent(name="thinker", instructions="Think, then look things up.", tools=[lookup],
                  model=OpenAIResponsesModel(model="o4-mini",
                                             openai_client=AsyncOpenAI(base_url=server.base_url, api_key="unused",
                                                                       max_retries=0)))
    history: list[Any] = []
    for turn in range(2):
        result = asyncio.run(Runner.run(agent, [*history, {"role": "user", "content": f"question {turn}"}],
                                        run_config=RunConfig(call_model_input_filter=recording)))
        assert result.final_output == f"Answer {turn}."
        history = result.to_input_list()
    assert len(server.requests) == 2 * (CALLS + 1)  # the stub refused none (reasoning followed by its item, pairs whole)
    assert sum(1 for i in history if i.get("type") == "reasoning") == 2 * (CALLS + 1)  # the SDK keeps every one
    counter = pipeline().builder().counter
    for body in server.requests:
        assert independent(counter, body) <= window - reserve
    last = server.requests[-1]["input"]
    assert [i.get("type") for i in last].count("reasoning") == CALLS  # this turn's, sent back by the SDK
    assert filt.last_report is not None
    (note,) = [n for n in filt.last_report.notes if "reasoning" in n]
    assert f"{CALLS} reasoning item(s) sent and counted" in note
    blind = ContextFilter(pipeline(window, reserve), count_reasoning="none").apply(given[-1], "Think, then look things up.")
    assert independent(counter, {"input": blind.items, "instructions": "Think, then look things up."}) > window - reserve
