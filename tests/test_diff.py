"""Tests for ctxcore.tools.diff and `ctx diff`: two states, two replay calls, the prefix that breaks the cache."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxcore import Pipeline
from ctxcore.tools.diff import diff_builds, format_diff
from tests.test_cli import ROOT, ctx

sys.path.insert(0, str(ROOT / "bench"))
from workload import coding_agent_transcript  # noqa: E402

DEMO = ROOT / "examples" / "report-demo.yaml"
DEMO_STATE = ROOT / "examples" / "report-state.json"
REPLAY = ROOT / "tests" / "data" / "replay-pipeline.yaml"


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("diff") / "session.json"
    path.write_text(json.dumps({"messages": coding_agent_transcript(90)}))
    return path


def _states(tmp_path: Path, a: dict[str, Any], b: dict[str, Any]) -> tuple[Path, Path]:
    pa, pb = tmp_path / "a.json", tmp_path / "b.json"
    pa.write_text(json.dumps(a))
    pb.write_text(json.dumps(b))
    return pa, pb


def _diff(*args: str) -> dict[str, Any]:
    result = ctx("diff", *args, "--json")
    assert result.returncode == 0, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    return data


class TestStates:
    def test_a_grown_conversation_extends_the_prefix(self, tmp_path: Path) -> None:
        """B = A plus a turn: nothing left, the new messages entered, and all of A's request is a cacheable prefix."""
        state = json.loads(DEMO_STATE.read_text())
        a, b = _states(tmp_path, {**state, "messages": state["messages"][:-6]}, state)
        d = _diff("--pipeline", str(DEMO), str(a), str(b))
        assert d["prefix"]["first_difference"] is None and d["prefix"]["tools_same"]
        assert d["prefix"]["common_messages"] == d["a"]["messages"]
        assert d["left"] == d["compressed"] == d["changed"] == []
        assert [m["preview"][:20] for m in d["entered"]][-1] == "Great. Summarise the"
        assert d["tokens_delta"] == d["b"]["total_tokens"] - d["a"]["total_tokens"] == sum(r["delta"] for r in d["by_source"])

    def test_an_edited_message_breaks_the_prefix_there(self, tmp_path: Path) -> None:
        """Editing an early user message: the first difference is that message, changed by its provider."""
        state = json.loads(DEMO_STATE.read_text())
        edited = json.loads(json.dumps(state))
        edited["messages"][-5]["content"] = "Something else entirely."
        a, b = _states(tmp_path, state, edited)
        d = _diff("--pipeline", str(DEMO), str(a), str(b))
        first = d["prefix"]["first_difference"]
        assert first["a"]["preview"] == "And run everything once more." and first["by"] == "chat"
        assert first["b"]["preview"] == "Something else entirely."
        assert [c["preview"] for c in d["changed"]] == ["And run everything once more."]
        assert d["prefix"]["common_messages"] == first["position"]

    def test_text_output_is_plain(self, tmp_path: Path) -> None:
        """The text output has no escape codes or markup and names the first difference."""
        state = json.loads(DEMO_STATE.read_text())
        edited = json.loads(json.dumps(state))
        edited["messages"][-5]["content"] = "[bold]Something else[/bold]"
        a, b = _states(tmp_path, state, edited)
        result = ctx("diff", "--pipeline", str(DEMO), str(a), str(b))
        assert result.returncode == 0, result.stderr
        assert "\x1b[" not in result.stdout and "[bold]Something else[/bold]" in result.stdout
        assert "The prefix breaks at message #" in result.stdout and "changed (1):" in result.stdout


class TestReplayCalls:
    def test_default_pair_is_the_worst_cache_miss_and_agrees_with_replay(self, session: Path) -> None:
        """Without --calls the pair is the call with the most uncached tokens; its shared prefix is replay's cached tokens."""
        d = _diff("--pipeline", str(REPLAY), "--replay", str(session))
        result = ctx("replay", str(session), "--pipeline", str(REPLAY), "--json")
        calls = json.loads(result.stdout)["calls"]
        uncached = [c["input_tokens"] - c["cached_tokens"] for c in calls]
        j = max(range(1, len(calls)), key=lambda k: (uncached[k], -k))
        assert d["calls"] == [j - 1, j]
        assert d["prefix"]["common_tokens"] == calls[j]["cached_tokens"]
        assert (d["a"]["total_tokens"], d["b"]["total_tokens"]) == (calls[j - 1]["input_tokens"], calls[j]["input_tokens"])

    def test_a_cache_miss_names_the_filter(self, session: Path) -> None:
        """The worst miss of a compacting session is explained by the compaction step that changed the message."""
        d = _diff("--pipeline", str(REPLAY), "--replay", str(session))
        first = d["prefix"]["first_difference"]
        assert first["by"] == "compaction" and first["stage"] in ("trim", "tool_results")
        assert "compaction" in d["explanation"] and f"#{first['position']}" in d["explanation"]

    def test_explicit_calls_and_every_call_agrees_with_replay(self, session: Path) -> None:
        """--calls I J compares those calls; the shared prefix of consecutive calls is replay's cached tokens."""
        result = ctx("replay", str(session), "--pipeline", str(REPLAY), "--json")
        calls = json.loads(result.stdout)["calls"]
        for j in (1, 5, len(calls) - 1):
            d = _diff("--pipeline", str(REPLAY), "--replay", str(session), "--calls", str(j - 1), str(j))
            assert d["calls"] == [j - 1, j] and d["b"]["label"] == f"call {j}"
            assert d["prefix"]["common_tokens"] == calls[j]["cached_tokens"], j

    def test_bad_calls_name_the_range(self, session: Path) -> None:
        """A call index past the end exits 1 naming the valid range."""
        result = ctx("diff", "--pipeline", str(REPLAY), "--replay", str(session), "--calls", "0", "9999")
        assert result.returncode == 1 and "call 9999 does not exist; the transcript has calls 0 to" in result.stderr


class TestUsage:
    @pytest.mark.parametrize(("args", "message"), [
        ((str(DEMO_STATE),), "give two state files"),
        ((str(DEMO_STATE), "--calls", "0", "1"), "--calls needs --replay"),
    ])
    def test_wrong_arguments_say_what_to_give(self, args: tuple[str, ...], message: str) -> None:
        """Wrong argument combinations exit 1 with one line saying what to give."""
        result = ctx("diff", "--pipeline", str(DEMO), *args)
        assert result.returncode == 1 and message in result.stderr and "Traceback" not in result.stderr

    def test_html_has_the_diff_section(self, tmp_path: Path) -> None:
        """--html writes the later build's report with the diff embedded."""
        state = json.loads(DEMO_STATE.read_text())
        a, b = _states(tmp_path, {**state, "messages": state["messages"][:-6]}, state)
        out = tmp_path / "d.html"
        d = _diff("--pipeline", str(DEMO), str(a), str(b), "--html", str(out))
        data = json.loads(out.read_text().split('id="report-data">', 1)[1].split("</script>", 1)[0])
        assert data["diff"] == d


# ---------------------------------------------------------------- properties
def _conversation(turns: list[int]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for n, words in enumerate(turns):
        out.append({"role": "user", "content": f"question {n} " + "word " * words})
        out.append({"role": "assistant", "content": f"answer {n} " + "more " * words})
    return out


@pytest.fixture(scope="module")
def small_pipeline() -> Pipeline:
    import ctxcore_counters.plugin
    import ctxcore_filters.plugin
    import ctxcore_providers.plugin

    from ctxcore.testing import fresh_host

    host = fresh_host(("ctxcore-providers", ctxcore_providers.plugin), ("ctxcore-filters", ctxcore_filters.plugin),
                      ("ctxcore-counters", ctxcore_counters.plugin))
    return Pipeline.from_dict({
        "version": 1, "model": {"context_window": 900, "reserve_output_tokens": 100},
        "providers": [{"type": "static_prompt", "text": "Be brief."}, {"type": "history", "annotate": False}],
        "filters": [{"type": "compaction", "trigger_ratio": 0.8, "target_ratio": 0.5,
                     "steps": [{"kind": "trim", "keep_first": 1, "keep_last": 2}]}, "token_budget"],
    }, host=host)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(turns=st.lists(st.integers(1, 60), min_size=1, max_size=14), grow=st.integers(0, 6))
def test_diff_invariants(small_pipeline: Pipeline, turns: list[int], grow: int) -> None:
    """The four lists are disjoint, the prefix never exceeds either request, and a build diffed with itself is empty."""
    builder = small_pipeline.builder()
    convo = _conversation(turns + [5] * grow)
    a = builder.build({"messages": convo[: 2 * len(turns) - 1]})
    b = builder.build({"messages": convo[:-1]})
    d = diff_builds(a, b)
    ids = [m["id"] for key in ("entered", "left", "compressed") for m in d[key]] + [m["id"] for m in d["changed"]]
    assert len(ids) == len(set(ids))
    sent_a = {m.id for m in a.messages}
    sent_b = {m.id for m in b.messages}
    assert {m["id"] for m in d["entered"]} <= sent_b - sent_a
    assert {m["id"] for m in d["left"] + d["compressed"]} <= sent_a - sent_b
    p = d["prefix"]
    assert p["common_messages"] <= min(len(a.messages), len(b.messages))
    assert p["common_tokens"] <= min(a.report.total_tokens, b.report.total_tokens)
    assert (p["first_difference"] is None) == (p["common_messages"] == len(a.messages))
    same = diff_builds(b, b)
    assert same["entered"] == same["left"] == same["changed"] == same["compressed"] == []
    assert same["prefix"]["first_difference"] is None and same["tokens_delta"] == 0
    assert format_diff(d)[0] == "diff: A -> B"


THREAD_PIPELINE = """version: 1
providers:
  - {type: static_prompt, text: You are terse.}
  - {type: history}
filters:
  - {type: max_messages, id: window, max_messages: 4}
checkpointer: {type: sqlite, path: '%s'}
"""


class TestThread:
    """`ctx diff --thread`: two saved turns of a Thread, through the pipeline's own checkpointer."""

    @pytest.fixture
    def pipeline_file(self, tmp_path: Path) -> Path:
        """A thread `chat` saved after each of three turns (steps 0, 1, 2) under a 4-message window."""
        path = tmp_path / "thread.yaml"
        import ctxcore_checkpointers.plugin
        import ctxcore_counters.plugin
        import ctxcore_filters.plugin
        import ctxcore_providers.plugin

        from ctxcore.testing import fresh_host

        path.write_text(THREAD_PIPELINE % (tmp_path / "threads.db"))
        host = fresh_host(("p", ctxcore_providers.plugin), ("f", ctxcore_filters.plugin), ("c", ctxcore_counters.plugin),
                          ("k", ctxcore_checkpointers.plugin))
        p = Pipeline.from_yaml(path, host=host)
        t = p.thread("chat")
        for turn in range(3):
            t.add_user(f"question {turn}")
            t.add_response({"role": "assistant", "content": f"answer {turn}"})
            t.save()
        p.checkpointer.close()
        return path

    def test_the_last_two_turns_by_default(self, pipeline_file: Path) -> None:
        """Steps 1 and 2 are compared; the window slid, so the prefix breaks after the system prompt, made by `window`."""
        d = _diff("--pipeline", str(pipeline_file), "--thread", "chat")
        assert d["steps"] == [1, 2] and d["thread_id"] == "chat"
        assert (d["a"]["label"], d["b"]["label"]) == ("step 1", "step 2")
        first = d["prefix"]["first_difference"]
        assert first is not None and first["position"] == 1 and first["by"] == "window"
        assert [m["preview"] for m in d["entered"]] == ["question 2", "answer 2"]
        assert {m["preview"] for m in d["left"]} == {"question 0", "answer 0"}

    def test_chosen_steps_and_a_step_that_does_not_exist(self, pipeline_file: Path) -> None:
        """--steps picks the pair; a missing step exits 1 naming the saved steps, with no traceback."""
        d = _diff("--pipeline", str(pipeline_file), "--thread", "chat", "--steps", "0", "2")
        assert d["steps"] == [0, 2] and [m["preview"] for m in d["entered"]][-1] == "answer 2"
        out = ctx("diff", "--pipeline", str(pipeline_file), "--thread", "chat", "--steps", "0", "7")
        assert out.returncode == 1 and "no step 7" in out.stderr and "[0, 1, 2]" in out.stderr
        assert "Traceback" not in out.stderr
        out = ctx("diff", "--pipeline", str(pipeline_file), "--thread", "nobody")
        assert out.returncode == 1 and "0 saved step(s)" in out.stderr
