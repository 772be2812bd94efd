"""Tests for ctxcore.tools.replay and `ctx replay`: calls and turns, the cached-prefix metric, totals, errors."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctxcore import Pipeline
from ctxcore.tools.replay import (
    PrefixTracker,
    RequestStats,
    TranscriptError,
    call_points,
    load_transcript,
    replay,
)
from tests.test_cli import ROOT, ctx

sys.path.insert(0, str(ROOT / "bench"))
from workload import coding_agent_transcript  # noqa: E402

PIPELINE = ROOT / "tests" / "data" / "replay-pipeline.yaml"


@pytest.fixture(scope="module")
def transcript_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("replay") / "session.json"
    path.write_text(json.dumps({"messages": coding_agent_transcript(90)}))
    return path


def _user(text: str = "hi") -> dict[str, Any]:
    return {"role": "user", "content": text}


def _ai(text: str = "ok") -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def _call(call_id: str) -> dict[str, Any]:
    return {"role": "assistant", "content": None,
            "tool_calls": [{"id": call_id, "type": "function", "function": {"name": "f", "arguments": "{}"}}]}


def _result(call_id: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": "result"}


class TestCallPoints:
    def test_a_call_before_every_assistant_message_and_turns_from_user_messages(self) -> None:
        """Tool steps are separate calls of one turn; consecutive user messages open one turn."""
        messages = [{"role": "system", "content": "s"}, _user(), _call("a"), _result("a"), _ai(),
                    _user(), _user("more"), _ai(), _user(), _call("b"), _result("b"), _call("c"), _result("c"), _ai()]
        points = call_points(messages)
        assert [p.history for p in points] == [2, 4, 7, 9, 11, 13]
        assert [p.turn for p in points] == [1, 1, 2, 3, 3, 3]
        assert [p.index for p in points] == list(range(6))


class TestPrefixTracker:
    def test_first_request_has_nothing_cached(self) -> None:
        """Nothing precedes the first request, so none of it is cached."""
        assert PrefixTracker().observe(RequestStats([{"role": "user", "content": "a"}], [5], 8)) == 0

    def test_changed_tools_invalidate_the_whole_prefix(self) -> None:
        """Tool schemas come first in a provider's cache, so a change there caches nothing."""
        tracker = PrefixTracker()
        msgs = [{"role": "user", "content": "a"}]
        tracker.observe(RequestStats(msgs, [5], 20, tool_tokens=12, tools=[{"name": "x"}]))
        assert tracker.observe(RequestStats(msgs, [5], 20, tool_tokens=12, tools=[{"name": "x"}])) == 17
        assert tracker.observe(RequestStats(msgs, [5], 20, tool_tokens=12, tools=[{"name": "y"}])) == 0

    @given(st.lists(st.sampled_from("abc"), max_size=8), st.lists(st.sampled_from("abc"), max_size=8))
    def test_cached_is_the_common_leading_messages(self, first: list[str], second: list[str]) -> None:
        """Cached tokens are the tokens of the longest run of identical leading messages, never more than the input."""
        tracker = PrefixTracker()
        render = [[{"role": "user", "content": c} for c in seq] for seq in (first, second)]
        tokens = [[len(c) * 3 + i for i, c in enumerate(seq)] for seq in (first, second)]
        tracker.observe(RequestStats(render[0], tokens[0], sum(tokens[0]) + 3))
        cached = tracker.observe(RequestStats(render[1], tokens[1], sum(tokens[1]) + 3))
        k = 0
        while k < min(len(first), len(second)) and first[k] == second[k]:
            k += 1
        assert cached == sum(tokens[1][:k]) <= sum(tokens[1]) + 3


class TestLoadTranscript:
    def test_list_and_state_shapes(self) -> None:
        """A bare list and the state object `ctx build` reads are both accepted; other keys are kept."""
        messages = [_user(), _ai()]
        assert load_transcript(messages) == (messages, {})
        tools = [{"type": "function", "function": {"name": "f", "parameters": {}}}]
        assert load_transcript({"messages": messages, "tools": tools}) == (messages, {"tools": tools})

    @pytest.mark.parametrize(
        ("data", "expected"),
        [
            ({"msgs": []}, 'no "messages" key'),
            ("hello", "must be a JSON list"),
            ([_user(), "hi"], "messages[1] is a str"),
            ([_user(), {"role": "bot", "content": "x"}], "messages[1] has role 'bot'; use one of system, user, assistant, tool"),
            ([_user(), {"role": "tool", "content": "x"}], "messages[1] is not a valid OpenAI message"),
            ([_user(), _user()], "no assistant message"),
            ({"messages": [_user(), _ai()], "tools": "x"}, "'tools' must be a list"),
        ],
    )
    def test_bad_transcripts_name_the_source_index_and_fix(self, data: Any, expected: str) -> None:
        """Each shape problem is a TranscriptError naming the file and, for a message, its index."""
        with pytest.raises(TranscriptError) as info:
            load_transcript(data, source="s.json")
        assert str(info.value).startswith("s.json: ") and expected in str(info.value)


class TestReplayLibrary:
    def test_without_reductions_each_request_caches_all_of_the_previous_one(self, host: Any) -> None:
        """When nothing is reduced a request extends the previous one: cached = previous input minus priming."""
        text = PIPELINE.read_text().replace("context_window: 9000", "context_window: 500000")
        builder = Pipeline.from_string(text, host=host).builder()
        messages = coding_agent_transcript(40)
        result = replay(builder, messages)
        calls = result.calls
        assert calls[0].cached_tokens == 0
        for before, after in zip(calls, calls[1:], strict=False):
            assert after.cached_tokens == before.input_tokens - builder.counter.priming
        assert result.totals["reductions"] == 0 and all(c.removed == 0 for c in calls)

    def test_totals_are_the_sums_of_the_rows_and_the_cost_follows_the_discount(self, host: Any) -> None:
        """Turn rows sum the calls, totals sum the turns, and cost = uncached + discounted cached tokens."""
        builder = Pipeline.from_yaml(PIPELINE, host=host).builder()
        result = replay(builder, coding_agent_transcript(90), price_per_mtok=2.0, cached_discount=0.25)
        totals = result.totals
        assert totals["input_tokens"] == sum(t.input_tokens for t in result.turns) == sum(c.input_tokens for c in result.calls)
        assert totals["cached_tokens"] == sum(t.cached_tokens for t in result.turns)
        assert sum(t.calls for t in result.turns) == totals["calls"] == len(result.calls)
        expected = ((totals["input_tokens"] - totals["cached_tokens"]) * 2.0 + totals["cached_tokens"] * 0.5) / 1e6
        assert totals["cost"] == pytest.approx(expected)
        assert totals["reductions"] > 0, "the budget is small enough that compaction must run"
        assert all(0 <= c.cached_tokens <= c.input_tokens <= c.budget for c in result.calls)

    def test_the_cost_options_are_checked(self, host: Any) -> None:
        """A negative price or a discount outside [0, 1] is refused before any build."""
        builder = Pipeline.from_yaml(PIPELINE, host=host).builder()
        with pytest.raises(ValueError, match="cached_discount between 0 and 1"):
            replay(builder, [_user(), _ai()], cached_discount=1.5)


@pytest.mark.integration
class TestReplayCommand:
    def test_json_output_parses_and_is_consistent(self, transcript_file: Path) -> None:
        """--json prints totals, turns and calls whose numbers agree; cached never exceeds input."""
        result = ctx("replay", str(transcript_file), "--pipeline", str(PIPELINE), "--json", "--price-per-mtok", "5")
        assert result.returncode == 0, result.stderr
        data = json.loads(result.stdout)
        totals, turns, calls = data["totals"], data["turns"], data["calls"]
        assert totals["input_tokens"] == sum(t["input_tokens"] for t in turns) == sum(c["input_tokens"] for c in calls)
        assert totals["cached_tokens"] == sum(c["cached_tokens"] for c in calls)
        assert all(c["cached_tokens"] <= c["input_tokens"] for c in calls)
        assert totals["over_budget"] == 0 and totals["price_per_mtok"] == 5
        assert len(calls) == sum(1 for m in json.loads(transcript_file.read_text())["messages"] if m["role"] == "assistant")
        assert "replaying" not in result.stderr, "no progress bar when stderr is not a terminal"

    def test_table_output(self, transcript_file: Path) -> None:
        """The human output is a per-turn table plus the totals and a cost estimate."""
        result = ctx("replay", str(transcript_file), "--pipeline", str(PIPELINE))
        assert result.returncode == 0, result.stderr
        for word in ("replay: one row per turn", "input tokens", "cached share", "new reductions", "totals:",
                     "cost estimate: $"):
            assert word in result.stdout

    def test_bad_transcript_files_give_clear_errors(self, tmp_path: Path) -> None:
        """Unreadable, invalid JSON and an invalid message each exit 1 naming the file (and line or index)."""
        missing = ctx("replay", str(tmp_path / "nope.json"), "--pipeline", str(PIPELINE))
        assert missing.returncode == 1 and "cannot read transcript" in missing.stderr
        broken = tmp_path / "broken.json"
        broken.write_text('[{"role": "user",\n "content": }]')
        result = ctx("replay", str(broken), "--pipeline", str(PIPELINE))
        assert result.returncode == 1 and f"{broken}:2:" in result.stderr and "not valid JSON" in result.stderr
        bad = tmp_path / "bad.json"
        bad.write_text(json.dumps([_user(), {"role": "tool", "content": "x"}, _ai()]))
        result = ctx("replay", str(bad), "--pipeline", str(PIPELINE))
        assert result.returncode == 1 and f"{bad}: messages[1] is not a valid OpenAI message" in result.stderr

    def test_a_failing_build_names_the_call(self, tmp_path: Path) -> None:
        """A build error (here an unanswered tool call in the current turn) names the transcript index."""
        bad = tmp_path / "broken-turn.json"
        bad.write_text(json.dumps([_user(), _call("a"), _ai()]))
        result = ctx("replay", str(bad), "--pipeline", str(PIPELINE))
        assert result.returncode == 1
        assert "InvalidHistory" in result.stderr and f"{bad} messages[2]" in result.stderr
