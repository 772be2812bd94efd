"""Tests for the compaction filter: each ladder stage, water marks, policy modes, step selection, strategies."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from ctxcore_counters import ApproximateCounter
from ctxcore_filters import (
    Compaction,
    CompactionConfig,
    ExtractiveSummarizer,
    PlanAuditError,
)
from ctxcore_filters.compaction_config import DEFAULT_TARGET_RATIO
from ctxcore_filters.compaction_stages import META, stage_of
from pydantic import ValidationError

from ctxcore import (
    BudgetExceeded,
    BuildReport,
    CachedCounter,
    ComponentError,
    ContextBuilder,
    FilterContext,
    Message,
    ai,
    check_tool_pairing,
    human,
    system,
    tool,
)
from ctxcore.testing.contracts import FilterContract


def call(*ids: str, name: str = "read_file") -> Message:
    return ai(tool_calls=[{"id": i, "name": name, "arguments": {"path": f"src/{i}.py"}} for i in ids])


def ctx(budget: int | None, counter: CachedCounter | None = None) -> FilterContext:
    return FilterContext(counter=counter or CachedCounter(ApproximateCounter()), budget=budget, report=BuildReport(), step_id="compaction")


def total(msgs: list[Message], c: FilterContext) -> int:
    return c.counter.count_messages(msgs)


def conversation(turns: int, result_chars: int = 2000, prefix: str = "") -> list[Message]:
    """A system prompt and ``turns`` rounds of question, tool call, large result, answer."""
    msgs = [system("You are a careful coding agent.")]
    for t in range(turns):
        msgs += [
            human(f"{prefix}question {t}: please look at module {t} and explain it"),
            call(f"c{t}"),
            tool(f"line {t} " * (result_chars // 7), tool_call_id=f"c{t}"),
            ai(f"{prefix}answer {t}: module {t} handles events " * 3),
        ]
    return msgs


class Refusing:
    """A summarizer that must not be called."""

    max_calls = 1

    def summarize(self, messages, target_tokens):  # pragma: no cover - the test fails if reached
        raise AssertionError("summarizer called")


class Recording(ExtractiveSummarizer):
    """The extractive summarizer, remembering what it was asked."""

    def __init__(self, max_calls: int = 0) -> None:
        super().__init__()
        self.max_calls = max_calls
        self.spans: list[list[Message]] = []

    def summarize(self, messages, target_tokens):
        self.spans.append(list(messages))
        return super().summarize(messages, target_tokens)


# ----------------------------------------------------------- stage 1: tool results
class TestToolResults:
    def test_old_large_result_becomes_placeholder(self) -> None:
        """A large old result is replaced by a placeholder naming the tool; the newest round stays."""
        msgs = conversation(3)
        c = ctx(None)
        out = Compaction(steps=[{"kind": "tool_results"}], max_tokens=total(msgs, c), trigger_ratio=0.5, target_ratio=0.5).apply(msgs, c)
        compacted = [m for m in out if stage_of(m) == "tool_results"]
        assert compacted and compacted[0].text.startswith(
            "[Prior read_file result compacted to fit context; the tool call already completed.]"
        )
        assert out[-2] is msgs[-2]  # the newest tool round is never compacted by default
        assert compacted[0].tool_call_id == "c0" and compacted[0].role == "tool" and compacted[0].trust == "untrusted"
        check_tool_pairing(out)

    def test_only_as_far_as_needed_oldest_first(self) -> None:
        """With scope: needed and little to save only the oldest result is compacted; newer ones stay verbatim."""
        msgs = conversation(4)
        c = ctx(None)
        budget = total(msgs, c)
        steps = [{"kind": "tool_results", "scope": "needed"}]
        out = Compaction(steps=steps, max_tokens=budget, trigger_ratio=0.9, target_ratio=0.85).apply(msgs, c)
        assert [m.tool_call_id for m in out if stage_of(m)] == ["c0"]
        assert total(out, c) <= 0.85 * budget

    def test_scope_all_compacts_every_eligible_result_once_it_runs(self) -> None:
        """By default (scope: all) a batch compacts every result but the newest round, however little it needs."""
        msgs = conversation(4)
        c = ctx(None)
        budget = total(msgs, c)
        out = Compaction(steps=[{"kind": "tool_results"}], max_tokens=budget, trigger_ratio=0.9, target_ratio=0.85).apply(msgs, c)
        assert [m.tool_call_id for m in out if stage_of(m)] == ["c0", "c1", "c2"]
        assert out[-2] is msgs[-2]

    def test_json_preview_is_minimised(self) -> None:
        """A JSON result's preview is the minimised JSON, cut to preview_chars."""
        payload = json.dumps({"rows": [{"id": i, "name": f"row {i}"} for i in range(200)]}, indent=4)
        msgs = [human("q"), call("a"), tool(payload, tool_call_id="a"), ai("ok"), human("q2"), call("b"), tool("x", tool_call_id="b")]
        c = ctx(None)
        out = Compaction(steps=[{"kind": "tool_results", "preview_chars": 40}], max_tokens=total(msgs, c), trigger_ratio=0.5,
                         target_ratio=0.5).apply(msgs, c)
        placeholder = out[2].text
        assert 'Preview: {"rows":[{"id":0,"name":"row 0"}' in placeholder
        assert placeholder.endswith("…") and len(placeholder.split("Preview: ")[1]) == 40

    def test_spill_writes_full_result_and_names_it(self, tmp_path: Path) -> None:
        """With spill_dir the full result goes to a file whose path and size the placeholder names."""
        msgs = conversation(2)
        c = ctx(None)
        out = Compaction(steps=[{"kind": "tool_results", "spill_dir": str(tmp_path)}], max_tokens=total(msgs, c),
                         trigger_ratio=0.5, target_ratio=0.5).apply(msgs, c)
        files = list(tmp_path.iterdir())
        assert len(files) == 1 and files[0].read_text() == msgs[3].text
        assert f"{files[0]}" in out[3].text and f"({len(msgs[3].text)} characters)" in out[3].text

    def test_rehearsal_writes_no_files(self, tmp_path: Path) -> None:
        """A step that is only rehearsed (not chosen) writes no spill file."""
        msgs = conversation(6)
        c = ctx(None)
        Compaction(selection="model", selector=lambda candidates, pressure: ["trim"],
                   steps=[{"kind": "tool_results", "spill_dir": str(tmp_path)}, {"kind": "trim"}],
                   max_tokens=total(msgs, c), trigger_ratio=0.5, target_ratio=0.4, on_overflow="warn").apply(msgs, c)
        assert {comp.stage for comp in c.report.compressions} == {"trim"}
        assert list(tmp_path.iterdir()) == []

    def test_placeholder_never_longer(self) -> None:
        """A result shorter than its placeholder would be is left alone."""
        msgs = [human("q"), call("a"), tool("tiny", tool_call_id="a"), human("q2"), call("b"), tool("x", tool_call_id="b")]
        c = ctx(None)
        f = Compaction(steps=[{"kind": "tool_results", "min_tokens": 0}], max_tokens=total(msgs, c), trigger_ratio=0.1, target_ratio=0.1)
        assert f.apply(msgs, c) == msgs

    def test_protected_result_untouched(self) -> None:
        """A protected tool result is never compacted."""
        msgs = conversation(3)
        msgs[3] = msgs[3].with_provenance(zone="protected")
        c = ctx(None)
        out = Compaction(steps=[{"kind": "tool_results"}], max_tokens=total(msgs, c), trigger_ratio=0.5, target_ratio=0.1,
                         on_overflow="warn").apply(msgs, c)
        assert out[3] is msgs[3] and stage_of(out[7]) == "tool_results"


# ----------------------------------------------------------- stage 2: trim
class TestTrim:
    def test_keeps_first_and_last_units_with_marker(self) -> None:
        """The middle goes, the first K and last N units stay, and a marker counts the removed messages."""
        msgs = [system("s")] + [m for i in range(10) for m in (human(f"question {i} " * 10), ai(f"answer {i} " * 10))]
        c = ctx(None)
        out = Compaction(steps=[{"kind": "trim", "keep_first": 1, "keep_last": 2}], max_tokens=total(msgs, c),
                         trigger_ratio=0.5, target_ratio=0.1, on_overflow="warn").apply(msgs, c)
        assert out[:2] == msgs[:2] and out[-2:] == msgs[-2:]
        assert out[2].text == "[17 earlier messages removed here to fit the context window.]"
        assert out[2].role == "user" and len(out) == 5

    def test_never_splits_a_tool_unit(self) -> None:
        """The trimmed span ends on a unit boundary: calls keep their results."""
        msgs = conversation(5)
        c = ctx(None)
        out = Compaction(steps=[{"kind": "trim", "keep_first": 1, "keep_last": 3}], max_tokens=total(msgs, c),
                         trigger_ratio=0.5, target_ratio=0.3).apply(msgs, c)
        check_tool_pairing(out)
        assert any(stage_of(m) == "trim" for m in out)

    def test_only_as_far_as_needed(self) -> None:
        """Trim removes the fewest oldest-middle units that reach the target."""
        msgs = [system("s")] + [m for i in range(10) for m in (human(f"question {i} " * 10), ai(f"answer {i} " * 10))]
        c = ctx(None)
        budget = total(msgs, c)
        out = Compaction(steps=[{"kind": "trim"}], max_tokens=budget, trigger_ratio=0.9, target_ratio=0.8).apply(msgs, c)
        assert total(out, c) <= 0.8 * budget
        marker = next(m for m in out if stage_of(m) == "trim")
        assert len(marker.metadata[META]["raw_ids"]) < 8  # far fewer than the 16 removable messages

    def test_to_ratio_trims_deeper_than_the_target(self) -> None:
        """With to_ratio a trim that has to run goes down to that utilization, below the batch target."""
        msgs = [system("s")] + [m for i in range(10) for m in (human(f"question {i} " * 10), ai(f"answer {i} " * 10))]
        c = ctx(None)
        budget = total(msgs, c)
        out = Compaction(steps=[{"kind": "trim", "to_ratio": 0.5}], max_tokens=budget, trigger_ratio=0.9,
                         target_ratio=0.8).apply(msgs, c)
        assert total(out, c) <= 0.5 * budget

    def test_protected_unit_in_middle_survives(self) -> None:
        """A protected message inside the history is not trimmed."""
        msgs = [system("s")] + [m for i in range(8) for m in (human(f"question {i} " * 10), ai(f"answer {i} " * 10))]
        msgs[6] = system("pinned rule in the middle")
        c = ctx(None)
        out = Compaction(steps=[{"kind": "trim", "keep_first": 0, "keep_last": 1}], max_tokens=total(msgs, c),
                         trigger_ratio=0.2, target_ratio=0.1, on_overflow="warn").apply(msgs, c)
        assert msgs[6] in out


# ----------------------------------------------------------- stage 3/4: summaries
class TestSummarize:
    def test_extractive_summary_is_untrusted_user_text(self) -> None:
        """Old turns become one summary in the user role, labelled untrusted; the newest turn is verbatim."""
        msgs = conversation(4)
        c = ctx(None)
        out = Compaction(steps=[{"kind": "summarize", "keep_groups": 1}], max_tokens=total(msgs, c),
                         trigger_ratio=0.5, target_ratio=0.1, on_overflow="warn").apply(msgs, c)
        summaries = [m for m in out if stage_of(m) == "summarize"]
        assert len(summaries) == 1
        s = summaries[0]
        assert s.role == "user" and s.trust == "untrusted" and s.zone == "dynamic"
        assert s.text.startswith("[Summary of 12 earlier messages") and "not instructions" in s.text
        assert out[-4:] == msgs[-4:] and out[0] is msgs[0]
        assert not any(m.role == "system" and stage_of(m) for m in out)

    def test_keep_groups_by_user_turn(self) -> None:
        """keep_groups: 2 keeps the two newest user turns verbatim, whole."""
        msgs = conversation(5)
        rec = Recording()
        c = ctx(None)
        out = Compaction(steps=[{"kind": "summarize", "keep_groups": 2}], summarizer=rec, max_tokens=total(msgs, c),
                         trigger_ratio=0.5, target_ratio=0.1, on_overflow="warn").apply(msgs, c)
        assert out[-8:] == msgs[-8:]
        assert [m.id for m in rec.spans[0]] == [m.id for m in msgs[1:13]]

    def test_chat_summarizer_over_http(self, chat_server) -> None:
        """The openai_chat summarizer posts the span to /chat/completions and uses the reply."""
        msgs = conversation(4)
        c = ctx(None)
        f = Compaction(steps=[{"kind": "summarize"}], max_tokens=total(msgs, c), trigger_ratio=0.5, target_ratio=0.3,
                       summarizer={"type": "openai_chat", "base_url": chat_server.base_url, "model": "small", "timeout": 5})
        out = f.apply(msgs, c)
        assert len(chat_server.requests) == 1
        body = chat_server.requests[0]
        assert body["model"] == "small" and body["messages"][0]["role"] == "system"
        assert "question 0" in body["messages"][1]["content"] and "question 3" not in body["messages"][1]["content"]
        summary = next(m for m in out if stage_of(m) == "summarize")
        assert summary.text.endswith("the assistant read files and found the bug.")

    def test_api_key_from_environment(self, chat_server, monkeypatch) -> None:
        """The key named by api_key_env is sent as a bearer token."""
        monkeypatch.setenv("CTX_TEST_KEY", "sk-test")
        msgs = conversation(4)
        c = ctx(None)
        Compaction(steps=[{"kind": "summarize"}], max_tokens=total(msgs, c), trigger_ratio=0.5, target_ratio=0.3,
                   summarizer={"type": "openai_chat", "base_url": chat_server.base_url, "model": "m",
                               "api_key_env": "CTX_TEST_KEY"}).apply(msgs, c)
        assert chat_server.headers[0]["Authorization"] == "Bearer sk-test"

    def test_timeout_is_reported_not_hung(self, chat_server) -> None:
        """A silent endpoint times out; the step is skipped with a warning naming the URL."""
        chat_server.hang.set()
        msgs = conversation(4)
        c = ctx(None)
        f = Compaction(steps=[{"kind": "summarize"}], max_tokens=total(msgs, c), trigger_ratio=0.5, target_ratio=0.3,
                       summarizer={"type": "openai_chat", "base_url": chat_server.base_url, "model": "m", "timeout": 0.2})
        assert f.apply(msgs, c) == msgs
        assert "did not answer within 0.2s" in c.report.warnings[0] and chat_server.base_url in c.report.warnings[0]

    def test_error_raises_when_configured(self, chat_server) -> None:
        """on_error: raise turns an HTTP error into an exception naming the status."""
        chat_server.status = 503
        msgs = conversation(4)
        c = ctx(None)
        f = Compaction(steps=[{"kind": "summarize"}], max_tokens=total(msgs, c), trigger_ratio=0.5, target_ratio=0.3,
                       on_error="raise", summarizer={"type": "openai_chat", "base_url": chat_server.base_url, "model": "m",
                                                     "retries": 0})
        with pytest.raises(Exception, match="HTTP 503"):
            f.apply(msgs, c)

    def test_max_calls_per_build(self, chat_server) -> None:
        """With max_calls: 1 the endpoint is asked once per build; the second model step is skipped and reported."""
        msgs = conversation(6)
        c = ctx(None)
        f = Compaction(steps=[{"kind": "summarize", "id": "first", "keep_groups": 4}, {"kind": "summarize", "id": "second"}],
                       max_tokens=total(msgs, c), trigger_ratio=0.5, target_ratio=0.05, on_overflow="warn",
                       summarizer={"type": "openai_chat", "base_url": chat_server.base_url, "model": "m", "max_calls": 1})
        f.apply(msgs, c)
        assert len(chat_server.requests) == 1
        assert any("'second' skipped" in w and "max_calls (1)" in w for w in c.report.warnings)

    def test_summary_never_longer(self) -> None:
        """A summarizer answering at length is cut so the summary is shorter than the span."""

        class Verbose:
            max_calls = 0

            def summarize(self, messages, target_tokens):
                return "blah " * 10_000

        msgs = conversation(4)
        c = ctx(None)
        out = Compaction(steps=[{"kind": "summarize"}], summarizer=Verbose(), max_tokens=total(msgs, c),
                         trigger_ratio=0.5, target_ratio=0.3, on_overflow="warn").apply(msgs, c)
        for comp in c.report.compressions:
            assert comp.tokens_after < comp.tokens_before
        assert total(out, c) < total(msgs, c)


class TestExtractive:
    def test_short_span_is_kept_whole(self) -> None:
        """A span that fits is rendered line by line: role, tool calls, opening text."""
        text = ExtractiveSummarizer().summarize([human("fix the test"), call("a"), tool("FAILED test_x", tool_call_id="a")], 200)
        assert text.splitlines() == ['user: fix the test', 'assistant: [called read_file({"path": "src/a.py"})]',
                                     "tool result (a): FAILED test_x"]

    def test_long_span_keeps_both_ends_within_target(self) -> None:
        """A long span keeps its first and last lines, marks the omitted middle, and fits the target."""
        msgs = [human(f"message {i} " * 20) for i in range(50)]
        text = ExtractiveSummarizer().summarize(msgs, 100)
        assert len(text) <= 400 and text.startswith("user: message 0") and "message 49" in text
        assert "more messages)" in text
        assert text == ExtractiveSummarizer().summarize(msgs, 100)


class TestConsolidate:
    def test_adjacent_summaries_merge(self) -> None:
        """Two summaries from two batches become one, shorter than both together."""
        msgs = conversation(8, result_chars=400)
        c = ctx(None)
        budget = total(msgs, c)
        f = Compaction(steps=[{"kind": "summarize", "summary_tokens": 200}], max_tokens=budget, trigger_ratio=0.7, target_ratio=0.55)
        first = f.apply(msgs, c)
        more = first + conversation(4, result_chars=400, prefix="later ")[1:]
        second = f.apply(more, ctx(budget, c.counter))
        assert [stage_of(m) for m in second].count("summarize") == 2
        merged = Compaction(steps=[{"kind": "consolidate"}], max_tokens=budget, trigger_ratio=0.1, target_ratio=0.1,
                            on_overflow="warn").apply(second, c2 := ctx(budget, c.counter))
        assert [stage_of(m) for m in merged].count("consolidate") == 1
        assert [stage_of(m) for m in merged].count("summarize") == 0
        comp = c2.report.compressions[0]
        assert comp.stage == "consolidate" and comp.tokens_after < comp.tokens_before


# ----------------------------------------------------------- water marks
class _History:
    """A provider returning the conversation in the state (the same Message objects each build)."""

    def get_messages(self, state, runtime):
        return state["messages"]


class TestWaterMarks:
    def test_below_trigger_nothing_changes(self) -> None:
        """Under the trigger ratio the input is returned as is."""
        msgs = conversation(3)
        c = ctx(None)
        budget = int(total(msgs, c) / 0.84)
        assert Compaction(max_tokens=budget).apply(msgs, c) == msgs
        assert c.report.compressions == []

    def test_above_trigger_reduces_to_target(self) -> None:
        """Over the trigger, the ladder reduces down to the target ratio."""
        msgs = conversation(6)
        c = ctx(None)
        budget = int(total(msgs, c) / 0.98)
        out = Compaction(max_tokens=budget).apply(msgs, c)
        assert total(out, c) <= DEFAULT_TARGET_RATIO * budget

    def test_prefix_identical_across_turns_below_trigger(self) -> None:
        """Between reduction batches the request prefix is byte-identical turn after turn."""
        history = conversation(6)
        counter = ApproximateCounter()
        budget = int(CachedCounter(counter).count_messages(history) / 0.9)
        builder = ContextBuilder([_History()], [Compaction(max_tokens=budget, trigger_ratio=0.85, target_ratio=0.6)], counter)
        previous = builder.build({"messages": history})
        assert previous.report.compressions  # the first build reduced
        batches = stable = 0
        for turn in range(12):
            history = history + [human(f"follow-up {turn} " * 5), ai(f"reply {turn} " * 5)]
            built = builder.build({"messages": history})
            new = {c.new_id for c in built.report.compressions} - {c.new_id for c in previous.report.compressions}
            if new:
                batches += 1  # a new batch of reductions: the prefix may change here
            else:
                stable += 1
                before = json.dumps(previous.to_openai())
                now = json.dumps(built.to_openai()[: len(previous.messages)])
                assert now == before, f"turn {turn}: prefix changed below the trigger"
            assert built.report.total_tokens <= budget
            previous = built
        assert stable >= 10 and batches <= 2

    def test_edited_history_is_not_replayed(self) -> None:
        """A reduction whose originals changed is not replayed; the edited messages are used."""
        history = conversation(6)
        counter = ApproximateCounter()
        budget = int(CachedCounter(counter).count_messages(history) / 0.9)
        builder = ContextBuilder([_History()], [Compaction(max_tokens=budget, trigger_ratio=0.85, target_ratio=0.6)], counter)
        first = builder.build({"messages": history})
        assert {c.stage for c in first.report.compressions} == {"tool_results"}
        assert history[3].id in first.report.compressions[0].original_ids
        edited = [*history[:3], tool("a short new result", tool_call_id="c0"), *history[4:]]
        built = builder.build({"messages": edited})
        assert built.messages[3].id == edited[3].id
        assert history[3].id not in {i for c in built.report.compressions for i in c.original_ids}

    def test_replayed_reductions_are_reported(self) -> None:
        """A reduction replayed from an earlier build is in this build's report too."""
        history = conversation(6)
        counter = ApproximateCounter()
        budget = int(CachedCounter(counter).count_messages(history) / 0.9)
        builder = ContextBuilder([_History()], [Compaction(max_tokens=budget, trigger_ratio=0.85, target_ratio=0.6)], counter)
        first = builder.build({"messages": history})
        second = builder.build({"messages": history + [human("more")]})
        assert [c.new_id for c in second.report.compressions] == [c.new_id for c in first.report.compressions]


# ----------------------------------------------------------- policy modes
class TestModes:
    def test_validate_never_reduces(self) -> None:
        """validate returns the input while it fits, and raises BudgetExceeded when it does not."""
        msgs = conversation(3)
        c = ctx(None)
        t = total(msgs, c)
        assert Compaction(mode="validate", max_tokens=t).apply(msgs, c) == msgs
        with pytest.raises(BudgetExceeded, match="never reduces") as info:
            Compaction(mode="validate", max_tokens=t - 1).apply(msgs, c)
        assert info.value.required == t

    def test_audit_passes_when_only_mutable_parts_change(self) -> None:
        """Two plans differing only in the history pass the audit."""
        f = Compaction(mode="audit", max_tokens=100_000)
        msgs = conversation(2)
        f.apply(msgs, ctx(None))
        assert f.apply(msgs[:1] + msgs[5:] + [human("new")], ctx(None))

    def test_audit_rejects_a_changed_protected_message(self) -> None:
        """A protected message that changed between plans fails the build, naming the filter."""
        msgs = conversation(2)
        builder = ContextBuilder([_History()], [Compaction(mode="audit", max_tokens=100_000)], ApproximateCounter())
        builder.build({"messages": msgs})
        with pytest.raises(ComponentError, match="plans differ outside the mutable parts"):
            builder.build({"messages": [system("You are a different agent."), *msgs[1:]]})

    def test_audit_mutable_sources(self) -> None:
        """With mutable_sources, dynamic messages of other sources are fixed too."""
        f = Compaction(mode="audit", max_tokens=100_000, mutable_sources=["history"])
        rag = human("retrieved passage", source="rag")
        f.apply([rag, human("q", source="history")], ctx(None))
        f.apply([rag, human("q2", source="history")], ctx(None))
        with pytest.raises(PlanAuditError):
            f.apply([human("other passage", source="rag")], ctx(None))

    def test_over_budget_after_every_step_raises_or_warns(self) -> None:
        """A protected part over budget raises BudgetExceeded with the report; warn returns it with a warning."""
        msgs = [system("rules " * 400), human("hi")]
        c = ctx(100)
        with pytest.raises(BudgetExceeded, match="protected content alone") as info:
            Compaction().apply(msgs, c)
        assert info.value.report is c.report
        c = ctx(100)
        assert Compaction(on_overflow="warn").apply(msgs, c) == msgs and "sent over budget" in c.report.warnings[0]


# ----------------------------------------------------------- step selection
class TestSelection:
    def test_sequence_follows_configured_order(self) -> None:
        """sequence runs the steps in the order given: here trim before tool results."""
        msgs = conversation(6)
        c = ctx(None)
        out = Compaction(steps=[{"kind": "trim", "keep_last": 2}, {"kind": "tool_results"}], max_tokens=total(msgs, c),
                         trigger_ratio=0.5, target_ratio=0.45).apply(msgs, c)
        assert [comp.stage for comp in c.report.compressions][0] == "trim"
        assert check_tool_pairing(out) is None

    def test_fixed_trim_runs_only_trims(self) -> None:
        """fixed: trim never compresses."""
        msgs = conversation(6)
        c = ctx(None)
        Compaction(selection="fixed", fixed="trim", max_tokens=total(msgs, c), trigger_ratio=0.5, target_ratio=0.3,
                   summarizer={"type": "extractive"}).apply(msgs, c)
        assert {comp.stage for comp in c.report.compressions} == {"trim"}

    def test_fixed_compress_never_trims(self) -> None:
        """fixed: compress uses tool results and summaries only."""
        msgs = conversation(6)
        c = ctx(None)
        Compaction(selection="fixed", fixed="compress", max_tokens=total(msgs, c), trigger_ratio=0.5, target_ratio=0.2,
                   on_overflow="warn").apply(msgs, c)
        stages = {comp.stage for comp in c.report.compressions}
        assert stages and "trim" not in stages

    def test_auto_takes_the_cheapest_safe_step(self) -> None:
        """auto compacts tool results (no model, no loss) before anything else."""
        msgs = conversation(6)
        c = ctx(None)
        Compaction(selection="auto", summarizer=Refusing(), max_tokens=total(msgs, c), trigger_ratio=0.9,
                   target_ratio=0.8).apply(msgs, c)
        assert {comp.stage for comp in c.report.compressions} == {"tool_results"}

    def test_auto_trim_loss_is_capped_cumulatively(self) -> None:
        """Two trim steps together remove at most max_trim_loss_ratio of the dynamic history."""
        msgs = [system("s")] + [m for i in range(20) for m in (human(f"question {i} " * 10), ai(f"answer {i} " * 10))]
        c = ctx(None)
        budget = total(msgs, c)
        dynamic = budget - total(msgs[:1], c)
        out = Compaction(selection="auto", steps=[{"kind": "trim", "id": "t1", "keep_last": 30}, {"kind": "trim", "id": "t2", "keep_last": 2}],
                         max_tokens=budget, trigger_ratio=0.5, target_ratio=0.1, on_overflow="warn").apply(msgs, c)
        removed = sum(comp.tokens_before - comp.tokens_after for comp in c.report.compressions)
        assert 0 < removed <= 0.25 * dynamic
        assert total(out, c) >= budget - 0.25 * dynamic

    def test_model_selector_picks_known_steps_only(self) -> None:
        """A selector's unknown ids are ignored with a warning; it cannot add steps."""
        seen: dict[str, Any] = {}

        def selector(candidates, pressure):
            seen["candidates"], seen["pressure"] = candidates, pressure
            return ["summarize", "delete_everything"]

        msgs = conversation(6)
        c = ctx(None)
        Compaction(selection="model", selector=selector, max_tokens=total(msgs, c), trigger_ratio=0.5, target_ratio=0.3,
                   on_overflow="warn").apply(msgs, c)
        assert {comp.stage for comp in c.report.compressions} == {"summarize"}
        assert [cand["id"] for cand in seen["candidates"]] == ["tool_results", "trim", "summarize", "consolidate"]
        assert seen["pressure"]["utilization"] == 1.0
        assert any("delete_everything" in w for w in c.report.warnings)

    def test_model_selector_over_http(self, chat_server) -> None:
        """The openai_chat selector asks the endpoint and runs the steps it names."""
        chat_server.reply = lambda body: 'I pick: ["tool_results"]'
        msgs = conversation(6)
        c = ctx(None)
        Compaction(selection="model", selector={"type": "openai_chat", "base_url": chat_server.base_url, "model": "m"},
                   max_tokens=total(msgs, c), trigger_ratio=0.5, target_ratio=0.3, on_overflow="warn").apply(msgs, c)
        assert {comp.stage for comp in c.report.compressions} == {"tool_results"}
        assert "candidates" in chat_server.requests[0]["messages"][1]["content"]

    def test_failing_selector_falls_back_to_auto(self) -> None:
        """A selector that raises is reported and auto selection takes over."""

        def selector(candidates, pressure):
            raise RuntimeError("model offline")

        msgs = conversation(6)
        c = ctx(None)
        out = Compaction(selection="model", selector=selector, max_tokens=total(msgs, c), trigger_ratio=0.5,
                         target_ratio=0.3, on_overflow="warn").apply(msgs, c)
        assert "falling back to selection: auto" in c.report.warnings[0] and len(out) < len(msgs) + 1

    def test_each_step_runs_at_most_once(self) -> None:
        """Even when the target is not reached, a step is not repeated within one build."""
        rec = Recording()
        msgs = conversation(8)
        c = ctx(None)
        Compaction(selection="auto", steps=[{"kind": "summarize", "keep_groups": 6}], summarizer=rec,
                   max_tokens=total(msgs, c), trigger_ratio=0.5, target_ratio=0.05, on_overflow="warn").apply(msgs, c)
        assert len(rec.spans) == 1


# ----------------------------------------------------------- strategies
class TestStrategies:
    def test_recent_keeps_newest_turns_without_a_model(self) -> None:
        """recent keeps the newest K user turns verbatim and never calls the summarizer."""
        msgs = conversation(6)
        c = ctx(None)
        out = Compaction(strategy="recent", keep_groups=2, summarizer=Refusing(), max_tokens=total(msgs, c),
                         trigger_ratio=0.5, target_ratio=0.1, on_overflow="warn").apply(msgs, c)
        assert out[-8:] == msgs[-8:] and stage_of(out[1]) == "trim" and len(out) == 10

    def test_continuity_summarises_older_turns(self) -> None:
        """continuity summarises older turns and keeps the newest K verbatim."""
        msgs = conversation(6)
        c = ctx(None)
        out = Compaction(strategy="continuity", keep_groups=2, max_tokens=total(msgs, c), trigger_ratio=0.5,
                         target_ratio=0.1, on_overflow="warn").apply(msgs, c)
        assert out[-8:] == msgs[-8:] and stage_of(out[1]) == "summarize" and len(out) == 10


# ----------------------------------------------------------- config and report
class TestConfig:
    @pytest.mark.parametrize(
        ("options", "match"),
        [
            ({"trigger_ratio": 0.5, "target_ratio": 0.7}, "must not exceed trigger_ratio"),
            ({"selection": "fixed"}, "needs fixed: trim or fixed: compress"),
            ({"strategy": "recent", "steps": [{"kind": "trim"}]}, "either steps or strategy"),
            ({"steps": [{"kind": "trim"}, {"kind": "trim"}]}, "repeated: trim"),
            ({"summarizer": {"type": "magic"}}, "extractive"),
        ],
    )
    def test_bad_combinations_are_rejected(self, options: dict[str, Any], match: str) -> None:
        """Inconsistent options fail validation with a message saying what to fix."""
        with pytest.raises(ValidationError, match=match):
            CompactionConfig(**options)

    def test_model_selection_needs_a_selector(self) -> None:
        """selection: model without a selector is refused when the filter is created."""
        with pytest.raises(ValueError, match="needs a selector"):
            Compaction(selection="model")

    def test_no_budget_is_an_error(self) -> None:
        """Without max_tokens or a model budget the filter says what to set."""
        with pytest.raises(ValueError, match="no token budget"):
            Compaction().apply([human("hi")], ctx(None))

    @pytest.mark.parametrize(
        ("target", "options", "marks"),
        [
            ({"provider": "anthropic"}, {}, (0.95, 0.3)),
            ({"provider": "anthropic", "cache": "top_level"}, {}, (0.95, 0.3)),
            ({"provider": "anthropic", "cache": "off"}, {}, (0.95, 0.75)),
            ({"provider": "openai"}, {}, (0.95, 0.75)),
            ({"provider": "openai-responses"}, {}, (0.95, 0.75)),
            ({"provider": "anthropic"}, {"target_ratio": 0.6}, (0.95, 0.6)),
            ({"provider": "anthropic"}, {"trigger_ratio": 0.8}, (0.8, 0.3)),
            ({"provider": "anthropic"}, {"trigger_ratio": 0.9, "target_ratio": 0.75}, (0.9, 0.75)),
        ],
    )
    def test_water_marks_follow_the_targets_cache_pricing(
        self, target: dict[str, Any], options: dict[str, Any], marks: tuple[float, float]
    ) -> None:
        """An Anthropic target with caching on defaults to 0.95/0.3; other targets keep 0.95/0.75; a given ratio wins."""
        from ctxcore import Pipeline

        pipeline = Pipeline.from_dict({
            "version": 1, "model": {"context_window": 8000}, "target": target,
            "providers": [{"type": "history"}], "filters": [{"type": "compaction", **options}],
        })
        config = pipeline.builder().filters[0].component.config
        assert (config.trigger_ratio, config.target_ratio) == marks


class TestReport:
    def test_every_replaced_message_is_dropped_or_compressed(self) -> None:
        """The build report gives originals the fate compressed (or dropped for trims) with tokens before/after."""
        msgs = conversation(6)
        counter = ApproximateCounter()
        budget = int(CachedCounter(counter).count_messages(msgs) / 0.95)
        built = ContextBuilder([_History()], [Compaction(max_tokens=budget)], counter).build({"messages": msgs})
        fates = {r.id: r for r in built.report.records}
        out_ids = {m.id for m in built.messages}
        for m in msgs:
            if m.id not in out_ids:
                assert fates[m.id].fate in ("dropped", "compressed")
        compressed = built.report.compressed
        assert compressed and all(r.into in out_ids or r.into for r in compressed)
        for comp in built.report.compressions:
            assert comp.tokens_after < comp.tokens_before
        as_dict = built.report.to_dict()
        assert as_dict["compressions"] and "compressed_tokens" in as_dict["by_zone"]["dynamic"]


class TestCompactionContract(FilterContract):
    """compaction passes the filter contract at every budget."""

    compresses = True
    budgets = (0, 40, 120, 400, 100_000)

    def make_filter(self) -> Compaction:
        return Compaction()
