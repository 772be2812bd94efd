"""Contract and property tests for compaction's run limits: ``reserve_calls`` and ``timeout``.

- reserve_calls: the selector and the summarizers together never make more
  model calls than the run has left minus the reserve;
- timeout: a step still running at the deadline is abandoned and its result,
  however late it arrives, is never committed (not in the output, not in the
  memo the next build replays); a caller's cancellation stops the build.

The "model" here is a summarizer object that counts its calls or blocks on an
event the test releases only after the build returned, so the results do not
depend on how fast the machine is.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
from ctxcore_counters import ApproximateCounter
from ctxcore_filters import Compaction, CompactionCancelled, CompactionTimeout, ExtractiveSummarizer
from ctxcore_filters.compaction_stages import stage_of
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from ctxcore import BuildReport, CachedCounter, FilterContext, Message, ai, human, system


class Counting(ExtractiveSummarizer):
    """An extractive summarizer that declares ``max_calls`` model calls and counts the calls it gets."""

    def __init__(self, max_calls: int) -> None:
        super().__init__()
        self.max_calls = max_calls
        self.calls = 0

    def summarize(self, messages: Any, target_tokens: int) -> str:
        self.calls += 1
        return super().summarize(messages, target_tokens)


class CountingSelector:
    """Picks every step; counts its calls."""

    def __init__(self, max_calls: int = 1) -> None:
        self.max_calls = max_calls
        self.calls = 0

    def select(self, candidates: list[dict[str, Any]], pressure: dict[str, Any]) -> list[str]:
        self.calls += 1
        return [c["id"] for c in candidates]


class Late(ExtractiveSummarizer):
    """A summarizer whose answer comes only after ``release`` is set (after the build gave up on it)."""

    max_calls = 1

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()
        self.started = threading.Event()
        self.finished = threading.Event()

    def summarize(self, messages: Any, target_tokens: int) -> str:
        self.started.set()
        self.release.wait(30)
        try:
            return "LATE SUMMARY " + super().summarize(messages, target_tokens)
        finally:
            self.finished.set()


def history(turns: int) -> list[Message]:
    msgs = [system("You are terse.")]
    for t in range(turns):
        msgs += [human(f"question {t} " + "word " * 40), ai(f"answer {t} " + "word " * 40)]
    return msgs


def context(runtime: dict[str, Any] | None = None) -> FilterContext:
    return FilterContext(counter=CachedCounter(ApproximateCounter()), budget=None, runtime=runtime or {},
                         report=BuildReport(), step_id="compaction")


def two_summaries(summarizer: Any, **options: Any) -> Compaction:
    steps = [{"kind": "summarize", "id": "first", "keep_groups": 6}, {"kind": "summarize", "id": "second", "keep_groups": 1}]
    return Compaction(steps=steps, summarizer=summarizer, trigger_ratio=0.5, target_ratio=0.1, on_overflow="warn", **options)


def budget_for(msgs: list[Message]) -> int:
    return CachedCounter(ApproximateCounter()).count_messages(msgs)


class TestReserveCalls:
    def test_default_and_minimum_is_one(self) -> None:
        """reserve_calls defaults to 1 and refuses 0 (the final answer always keeps a call)."""
        assert Compaction().config.reserve_calls == 1
        with pytest.raises(ValidationError):
            Compaction(reserve_calls=0)

    def test_reserve_is_kept_back_from_the_runs_calls(self) -> None:
        """With 2 calls left and the default reserve, one summarize step runs; the other is skipped and reported."""
        msgs = history(10)
        summarizer = Counting(max_calls=5)
        c = context({"model_calls_left": 2})
        two_summaries(summarizer, max_tokens=budget_for(msgs)).apply(msgs, c)
        assert summarizer.calls == 1
        assert c.report is not None
        assert any("'second' skipped" in w and "reserve_calls 1" in w for w in c.report.warnings)
        assert any("1 model call(s) spent of 1 available" in n for n in c.report.notes)

    def test_nothing_left_means_no_model_step(self) -> None:
        """When the run has only the reserve left, no model-backed step runs (local steps still do)."""
        msgs = history(10)
        summarizer = Counting(max_calls=5)
        steps = [{"kind": "trim", "keep_first": 0, "keep_last": 2}, {"kind": "summarize"}]
        out = Compaction(steps=steps, summarizer=summarizer, max_tokens=budget_for(msgs), trigger_ratio=0.5, target_ratio=0.1,
                         max_model_calls=1, on_overflow="warn").apply(msgs, context())
        assert summarizer.calls == 0 and any(stage_of(m) == "trim" for m in out)

    def test_selector_shares_the_pool(self) -> None:
        """A model selector's call comes out of the same pool: with 2 left and reserve 1 the summarizer gets none."""
        msgs = history(10)
        summarizer, selector = Counting(max_calls=5), CountingSelector()
        c = context({"model_calls_left": 2})
        two_summaries(summarizer, max_tokens=budget_for(msgs), selection="model", selector=selector).apply(msgs, c)
        assert (selector.calls, summarizer.calls) == (1, 0)

    def test_bad_runtime_value_is_refused(self) -> None:
        """runtime['model_calls_left'] must be a whole number >= 0."""
        msgs = history(10)
        with pytest.raises(ValueError, match="model_calls_left"):
            two_summaries(Counting(1), max_tokens=budget_for(msgs)).apply(msgs, context({"model_calls_left": -1}))

    @settings(max_examples=60, deadline=None)
    @given(left=st.integers(0, 6), reserve=st.integers(1, 4), per_handler=st.integers(0, 4), turns=st.integers(4, 14),
           model_selector=st.booleans(), steps=st.integers(1, 4))
    def test_reserve_is_never_spent(self, left: int, reserve: int, per_handler: int, turns: int, model_selector: bool,
                                    steps: int) -> None:
        """Whatever the pool, reserve, handler limits and steps: calls made <= max(0, left - reserve)."""
        msgs = history(turns)
        summarizer, selector = Counting(per_handler), CountingSelector()
        config: dict[str, Any] = {"selection": "model", "selector": selector} if model_selector else {}
        step_list = [{"kind": "summarize", "id": f"s{i}", "keep_groups": max(turns - 2 * (i + 1), 0)} for i in range(steps)]
        Compaction(steps=step_list, summarizer=summarizer, max_tokens=budget_for(msgs), trigger_ratio=0.3, target_ratio=0.05,
                   reserve_calls=reserve, on_overflow="warn", **config).apply(msgs, context({"model_calls_left": left}))
        model_calls = summarizer.calls if per_handler > 0 else 0  # max_calls 0: a local summarizer, no model
        assert model_calls + selector.calls <= max(0, left - reserve)
        assert model_calls <= per_handler


class TestTimeout:
    def test_late_result_is_never_committed(self) -> None:
        """The summary arriving after the deadline is in neither this build's output nor the next build's."""
        msgs = history(10)
        late = Late()
        compaction = two_summaries(late, max_tokens=budget_for(msgs), timeout=0.05)
        c = context()
        out = compaction.apply(msgs, c)
        assert late.started.is_set() and not late.finished.is_set()
        assert not any("LATE SUMMARY" in m.text for m in out)
        assert c.report is not None and any("deadline" in w and "discarded" in w for w in c.report.warnings)
        late.release.set()
        assert late.finished.wait(10)  # the abandoned call has now returned its result ...
        remembered = [d.message.text for d in compaction._memo._by_first.values()]
        assert not any("LATE SUMMARY" in t for t in remembered)  # ... which the next build will not replay

    def test_on_error_raise_gives_a_typed_error(self) -> None:
        """With on_error: raise, passing the deadline raises CompactionTimeout."""
        msgs = history(10)
        late = Late()
        try:
            with pytest.raises(CompactionTimeout, match="deadline"):
                two_summaries(late, max_tokens=budget_for(msgs), timeout=0.05, on_error="raise").apply(msgs, context())
        finally:
            late.release.set()

    def test_runtime_deadline_composes_with_timeout(self) -> None:
        """A caller's deadline already in the past stops the reductions before any model call, with no timeout set."""
        import time

        msgs = history(10)
        summarizer = Counting(max_calls=5)
        c = context({"deadline": time.monotonic() - 1})
        two_summaries(summarizer, max_tokens=budget_for(msgs), timeout=60).apply(msgs, c)
        assert summarizer.calls == 0

    def test_caller_cancellation_stops_the_build(self) -> None:
        """Setting runtime['cancel'] while a step runs raises CompactionCancelled; the late result is dropped."""
        msgs = history(10)
        late = Late()
        cancel = threading.Event()
        threading.Thread(target=lambda: (late.started.wait(10), cancel.set()), daemon=True).start()
        try:
            with pytest.raises(CompactionCancelled):
                two_summaries(late, max_tokens=budget_for(msgs)).apply(msgs, context({"cancel": cancel}))
        finally:
            late.release.set()

    def test_no_deadline_runs_inline(self) -> None:
        """Without timeout, deadline or cancel the steps run in the build's own thread (no worker thread)."""
        msgs = history(10)
        seen: list[str] = []

        class Where(ExtractiveSummarizer):
            max_calls = 1

            def summarize(self, messages: Any, target_tokens: int) -> str:
                seen.append(threading.current_thread().name)
                return super().summarize(messages, target_tokens)

        two_summaries(Where(), max_tokens=budget_for(msgs)).apply(msgs, context())
        assert seen and set(seen) == {threading.current_thread().name}


class TestConsolidationBoundary:
    """nanobot's consolidation boundary, as a function and as the consolidate stage's ``boundary: user_turn``."""

    def test_reference_example(self) -> None:
        """[u1, a1, u2, a2, u3] at 100 tokens each, remove 150: boundary 2, 200 tokens removed."""
        from ctxcore_filters.compaction_stages import consolidation_boundary

        starts = [True, False, True, False, True]
        assert consolidation_boundary([100] * 5, starts, 150) == (2, 200)
        assert consolidation_boundary([100] * 5, starts, 200) == (2, 200)
        assert consolidation_boundary([100] * 5, starts, 201) == (4, 400)
        assert consolidation_boundary([100] * 5, starts, 401) is None

    @settings(max_examples=100, deadline=None)
    @given(st.lists(st.tuples(st.integers(0, 50), st.booleans()), max_size=30), st.integers(0, 600))
    def test_smallest_boundary(self, items: list[tuple[int, bool]], remove: int) -> None:
        """The answer is a turn start removing at least the request, and no earlier turn start does."""
        from ctxcore_filters.compaction_stages import consolidation_boundary

        tokens, starts = [t for t, _ in items], [s for _, s in items]
        found = consolidation_boundary(tokens, starts, remove)
        candidates = [b for b in range(1, len(items)) if starts[b] and sum(tokens[:b]) >= remove]
        assert found == ((candidates[0], sum(tokens[:candidates[0]])) if candidates else None)

    def test_stage_folds_up_to_the_boundary(self) -> None:
        """consolidate with boundary: user_turn folds the oldest whole turns into one untrusted summary, newest kept."""
        msgs = history(8)
        c = context()
        budget = budget_for(msgs)
        steps = [{"kind": "consolidate", "boundary": "user_turn"}]
        out = Compaction(steps=steps, max_tokens=budget, trigger_ratio=0.5, target_ratio=0.45, on_overflow="warn").apply(msgs, c)
        summaries = [m for m in out if stage_of(m) == "consolidate"]
        assert len(summaries) == 1 and summaries[0].trust == "untrusted"
        assert out[0].role == "system" and out[1] is summaries[0]
        rest = [m for m in out[2:]]
        assert rest[0].role == "user" and rest[-1].text == msgs[-1].text  # starts on a user turn; the newest is kept
        folded = len(msgs) - 1 - len(rest)
        assert folded % 2 == 0  # whole turns (a question and its answer each)


class TestAuditInputs:
    """Fragment-level audit inputs: trusted originals (runtime['audit_original']) and mutable ids."""

    def test_only_declared_ids_may_change(self) -> None:
        """Against the caller's originals, a change to a message not in mutable_ids fails; a declared one passes."""
        from ctxcore_filters import PlanAuditError

        original = [system("rules"), human("old question", id="q1"), ai("old answer", id="a1"), human("now", id="q2")]
        processed = [original[0], human("[summary of q1/a1]"), original[3]]
        f = Compaction(mode="audit", max_tokens=100_000)
        runtime = {"audit_original": original, "mutable_ids": ["q1", "a1"]}
        assert f.apply(processed, context(runtime)) == processed
        with pytest.raises(PlanAuditError, match="mutable_ids"):
            f.apply(processed, context({"audit_original": original, "mutable_ids": ["q1"]}))

    def test_config_ids_and_bad_originals(self) -> None:
        """mutable_ids may be configured; audit_original must hold Messages."""
        original = [human("a", id="x"), human("b", id="y")]
        f = Compaction(mode="audit", max_tokens=100_000, mutable_ids=["x"])
        assert f.apply([human("a2"), original[1]], context({"audit_original": original}))
        with pytest.raises(ValueError, match="audit_original"):
            f.apply(original, context({"audit_original": [{"role": "user", "content": "a"}]}))
