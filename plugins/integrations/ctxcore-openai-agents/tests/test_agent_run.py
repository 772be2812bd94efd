"""The real Agents SDK: ``Runner.run`` and ``Runner.run_streamed`` with ``OpenAIResponsesModel`` against the local Responses API stub.

Three user turns of a tool-using agent (three tool round trips each) run with
``ContextFilter`` and a ``CheckpointerSession`` on SQLite. Asserted: the stub
received exactly what the filter returned, that input is legal (every result has
its call, no call without its result), within the pipeline's budget by an
independent tiktoken count of what the stub received, the build report is on
the filter and on the run context, the runner's items were never changed, and
the session holds the whole conversation (as the SDK's own SQLiteSession does).
The streamed run (the stub answers ``"stream": true`` with the API's server-sent
events) is held to the same request checks, and its caller must receive the
stub's events (text and argument deltas) and the runner's item events.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agents import (
    Agent,
    RawResponsesStreamEvent,
    RunConfig,
    RunItemStreamEvent,
    Runner,
    SQLiteSession,
    function_tool,
    set_tracing_disabled,
)
from agents.models.openai_responses import OpenAIResponsesModel
from agents.run_config import CallModelData, ModelInputData
from ctxcore_openai_agents import CheckpointerSession, ContextBudgetExceeded, ContextFilter, messages_from_items
from openai import AsyncOpenAI

from ctxcore import BuildReport, Pipeline, validate_request
from ctxcore.testing.harness.openai_server import ChatServer

set_tracing_disabled(True)

WINDOW, RESERVE = 1600, 200
INSTRUCTIONS = "You are a research assistant. Look things up with the lookup tool before answering."
TURNS = 3
CALLS_PER_TURN = 3


def pipeline_yaml(db: Path) -> str:
    return f"""
version: 1
model: {{context_window: {WINDOW}, reserve_output_tokens: {RESERVE}}}
counter: {{type: tiktoken, encoding: cl100k_base}}
providers:
  - {{type: history}}
filters:
  - {{type: token_budget}}
checkpointer: {{type: sqlite, path: '{db}'}}
"""


@function_tool
def lookup(topic: str) -> str:
    """Look a topic up in the archive."""
    return f"Archive entry on {topic}: " + " ".join(f"fact-{topic}-{k}" for k in range(60))


def scripted_model() -> Any:
    """The stub's script: per user turn, three lookups, then an answer (independent of how the input was trimmed)."""
    counter = itertools.count()

    def reply(body: dict[str, Any]) -> Any:
        n = next(counter)
        turn, step = divmod(n, CALLS_PER_TURN + 1)
        if step == CALLS_PER_TURN:
            return f"Answer {turn}: done."
        return {"content": None, "tool_calls": [{"id": f"call_{turn}_{step}", "type": "function",
                                                 "function": {"name": "lookup", "arguments": json.dumps({"topic": f"t{turn}{step}"})}}]}

    return reply


class Recording:
    """Wraps the filter: records what the runner gave it (and checks it was not changed) and what it returned."""

    def __init__(self, inner: ContextFilter) -> None:
        self.inner = inner
        self.given: list[list[Any]] = []
        self.sent: list[ModelInputData] = []
        self.paths: list[tuple[str, int]] = []  # the conversion cache's path and conversions per call

    async def __call__(self, data: CallModelData[Any]) -> ModelInputData:
        before = copy.deepcopy(data.model_data.input)
        out = await self.inner(data)
        assert data.model_data.input == before, "the filter changed the runner's items"
        self.given.append(before)
        self.sent.append(copy.deepcopy(out))
        self.paths.append((self.inner.cache.last_path, self.inner.cache.last_misses))
        return out


def independent_tokens(counter: Any, body: dict[str, Any]) -> int:
    """What the model reads of a request, counted from the request alone: instructions, item texts, tool schemas."""
    total = counter.count_text(body.get("instructions") or "")
    for item in body["input"]:
        total += 4  # the per-message framing every counter charges
        for key in ("content", "output", "arguments", "name"):
            value = item.get(key)
            if isinstance(value, str):
                total += counter.count_text(value)
            elif isinstance(value, list):
                total += sum(counter.count_text(p.get("text") or p.get("refusal") or "") for p in value)
    for tool in body.get("tools") or []:
        total += counter.count_text(json.dumps({k: tool[k] for k in ("name", "description", "parameters")}))
    return total


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with ChatServer(reply=scripted_model()) as s:
        yield s


def make_agent(server: ChatServer, instructions: str = INSTRUCTIONS) -> Agent[Any]:
    client = AsyncOpenAI(base_url=server.base_url, api_key="unused", max_retries=0)
    return Agent(name="researcher", instructions=instructions, tools=[lookup],
                 model=OpenAIResponsesModel(model="gpt-4o-mini", openai_client=client))


async def converse(agent: Agent[Any], session: Any, run_config: RunConfig | None = None,
                   context: Any = None) -> list[str]:
    answers = []
    for turn in range(TURNS):
        result = await Runner.run(agent, f"Question {turn}: tell me about topic {turn}.", session=session,
                                  run_config=run_config, context=context)
        answers.append(str(result.final_output))
    return answers


async def converse_streamed(agent: Agent[Any], session: Any, run_config: RunConfig,
                            context: Any) -> tuple[list[str], list[list[Any]]]:
    """``converse`` through ``Runner.run_streamed``: each turn's final output and the events its caller received."""
    answers, events = [], []
    for turn in range(TURNS):
        result = Runner.run_streamed(agent, f"Question {turn}: tell me about topic {turn}.", session=session,
                                     run_config=run_config, context=context)
        events.append([event async for event in result.stream_events()])
        answers.append(str(result.final_output))
    return answers, events


def assert_every_request_was_the_build(server: ChatServer, recording: Recording, tmp_path: Path) -> None:
    """Each request the stub got is the filter's output: legal, within budget by an independent count; some trimmed."""
    assert len(server.requests) == TURNS * (CALLS_PER_TURN + 1) == len(recording.sent)
    counter = Pipeline.from_string(pipeline_yaml(tmp_path / "unused.db")).builder().counter  # a fresh tiktoken counter
    trimmed = 0
    for body, sent, given in zip(server.requests, recording.sent, recording.given, strict=True):
        assert body["input"] == json.loads(json.dumps(sent.input))  # exactly what ctxcore built
        assert body["instructions"] == sent.instructions == INSTRUCTIONS
        calls = [i["call_id"] for i in body["input"] if i.get("type") == "function_call"]
        results = [i["call_id"] for i in body["input"] if i.get("type") == "function_call_output"]
        assert sorted(calls) == sorted(results)  # pairs kept together, none dangling
        validate_request([m.to_openai() for m in messages_from_items(body["input"])], provider="openai")
        assert independent_tokens(counter, body) <= WINDOW - RESERVE
        trimmed += len(body["input"]) < len(given)
    assert trimmed >= 4, "the budget never had to trim: the test would not show the filter working"


class TestFilteredRun:
    def test_multi_turn_tool_run_sends_the_ctxcore_build(self, server: ChatServer, tmp_path: Path) -> None:
        """A 3-turn, 9-tool-call run: the stub got the filter's output, legal and within budget, report attached, session whole."""
        pipeline = Pipeline.from_string(pipeline_yaml(tmp_path / "agents.db"))
        filt = ContextFilter(pipeline)
        recording = Recording(filt)
        session = CheckpointerSession.from_pipeline(pipeline, "user-1")
        context: dict[str, Any] = {}
        answers = asyncio.run(converse(make_agent(server), session, RunConfig(call_model_input_filter=recording), context))

        assert answers == [f"Answer {t}: done." for t in range(TURNS)]
        assert_every_request_was_the_build(server, recording, tmp_path)
        assert isinstance(filt.last_report, BuildReport) and context["ctxcore_report"] is filt.last_report
        # the cache warm: every call after the first reuses the earlier conversions (the session's reloaded items too),
        # converting only the new items (a user question, or the model's call and its result); no window item changed
        assert recording.paths[0] == ("keyed", 1) and all(p == "growth" for p, _ in recording.paths[1:])
        assert all(n <= 2 for _, n in recording.paths[1:]) and filt.rebuilds == 0
        assert filt.last_report.total_tokens <= WINDOW - RESERVE

        # the session holds every item of the conversation, untrimmed, and the newest model input was a suffix of it
        items = asyncio.run(session.get_items())
        kinds = [i.get("type", "message") for i in items]
        assert kinds.count("function_call") == kinds.count("function_call_output") == TURNS * CALLS_PER_TURN
        assert sum(1 for i in items if i.get("role") == "user") == TURNS
        assert [i for i in items if i.get("role") == "user"][0]["content"] == "Question 0: tell me about topic 0."
        # the same conversation as ctxcore messages, through the pipeline's own thread
        thread = pipeline.thread("user-1")
        assert [m.role for m in thread.messages].count("tool") == TURNS * CALLS_PER_TURN

    def test_a_streamed_run_sends_the_build_and_streams_the_events(self, server: ChatServer, tmp_path: Path) -> None:
        """Runner.run_streamed, 3 turns x 3 tool round trips: every request is the build; the caller gets the stub's events."""
        pipeline = Pipeline.from_string(pipeline_yaml(tmp_path / "agents.db"))
        filt = ContextFilter(pipeline)
        recording = Recording(filt)
        session = CheckpointerSession.from_pipeline(pipeline, "user-1")
        context: dict[str, Any] = {}
        answers, events = asyncio.run(converse_streamed(make_agent(server), session,
                                                        RunConfig(call_model_input_filter=recording), context))

        assert answers == [f"Answer {t}: done." for t in range(TURNS)]
        assert all(body["stream"] is True for body in server.requests)
        assert_every_request_was_the_build(server, recording, tmp_path)
        assert isinstance(filt.last_report, BuildReport) and context["ctxcore_report"] is filt.last_report
        for turn, turn_events in enumerate(events):
            raw = [e.data for e in turn_events if isinstance(e, RawResponsesStreamEvent)]
            kinds = [e.type for e in raw]
            assert kinds.count("response.created") == kinds.count("response.completed") == CALLS_PER_TURN + 1
            deltas = "".join(e.delta for e in raw if e.type == "response.output_text.delta")
            assert deltas == f"Answer {turn}: done." and len([e for e in raw if e.type == "response.output_text.delta"]) > 1
            arguments = "".join(e.delta for e in raw if e.type == "response.function_call_arguments.delta")
            assert arguments == "".join(json.dumps({"topic": f"t{turn}{k}"}) for k in range(CALLS_PER_TURN))
            names = [e.name for e in turn_events if isinstance(e, RunItemStreamEvent)]
            assert names.count("tool_called") == names.count("tool_output") == CALLS_PER_TURN
            assert names[-1] == "message_output_created"
        items = asyncio.run(session.get_items())
        kinds = [i.get("type", "message") for i in items]
        assert kinds.count("function_call") == kinds.count("function_call_output") == TURNS * CALLS_PER_TURN

    def test_the_session_matches_the_sdks_own_sqlite_session(self, tmp_path: Path) -> None:
        """The same scripted run stores the same items in CheckpointerSession as in the SDK's SQLiteSession."""
        stored = []
        for session in (SQLiteSession("s", str(tmp_path / "sdk.db")),
                        CheckpointerSession.from_pipeline(Pipeline.from_string(pipeline_yaml(tmp_path / "c.db")), "s")):
            with ChatServer(reply=scripted_model()) as server:
                asyncio.run(converse(make_agent(server), session))
            stored.append(asyncio.run(session.get_items()))
        assert stored[0] == stored[1] and len(stored[0]) == TURNS * (2 + 2 * CALLS_PER_TURN)

    def test_instructions_over_budget_raise_a_typed_error(self, server: ChatServer, tmp_path: Path) -> None:
        """Instructions alone over the budget stop the run with ContextBudgetExceeded naming the fix; nothing is sent."""
        pipeline = Pipeline.from_string(pipeline_yaml(tmp_path / "agents.db"))
        agent = make_agent(server, instructions="Rules. " * 2000)
        with pytest.raises(ContextBudgetExceeded, match="raise model.context_window") as info:
            asyncio.run(Runner.run(agent, "hi", run_config=RunConfig(call_model_input_filter=ContextFilter(pipeline))))
        assert info.value.required > info.value.budget and info.value.budget <= WINDOW - RESERVE and info.value.report is not None
        assert server.requests == []


class TestFilterUnit:
    def test_report_slots_and_the_runners_own_objects(self, tmp_path: Path) -> None:
        """Kept items are the runner's objects; the report reaches on_report, a context attribute and last_report."""
        reports: list[BuildReport] = []
        filt = ContextFilter(Pipeline.from_string(pipeline_yaml(tmp_path / "a.db")), on_report=reports.append)

        class Ctx:
            ctxcore_report: Any = None

        items = [{"role": "user", "content": "hi"},
                 {"type": "function_call", "call_id": "c1", "name": "lookup", "arguments": '{"topic": "x"}'},
                 {"type": "function_call_output", "call_id": "c1", "output": "found"}]
        ctx = Ctx()
        data = CallModelData(model_data=ModelInputData(input=list(items), instructions=INSTRUCTIONS), agent=None, context=ctx)
        out = asyncio.run(filt(data))  # type: ignore[arg-type]
        assert out.instructions == INSTRUCTIONS
        assert [o for o in out.input if o.get("role") != "system"] == items
        assert all(any(o is i for i in items) for o in out.input if o.get("role") != "system")
        assert reports == [filt.last_report] and ctx.ctxcore_report is filt.last_report
