"""Tests for ctxcore-filters: max_messages and token_budget keep whole units within limits."""

from __future__ import annotations

import itertools

import pytest
from ctxcore_counters import ApproximateCounter
from ctxcore_filters import MaxMessages, TokenBudget
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxcore import (
    BudgetExceeded,
    BuildReport,
    CachedCounter,
    ContextBuilder,
    FilterContext,
    ai,
    check_tool_pairing,
    group_units,
    human,
    system,
    tool,
)
from ctxcore.kit import LazyMessages, MessageChain, Snapshot


def call(*ids: str):
    return ai(tool_calls=[{"id": i, "name": "read_file", "arguments": {"path": i}} for i in ids])


def ctx(budget: int | None = None, counter=None) -> FilterContext:
    return FilterContext(counter=CachedCounter(counter or ApproximateCounter()), budget=budget, report=BuildReport(), step_id="f")


class TestMaxMessages:
    def test_seed_example_pure_count(self) -> None:
        """[sys1, sys2, u1, a1, u2, a2, u3, a3] with max 5 keeps sys1, sys2 and the newest five."""
        sys1, sys2, u1, a1, u2, a2, u3, a3 = system("s1"), system("s2"), human("u1"), ai("a1"), human("u2"), ai("a2"), human("u3"), ai("a3")
        b = ContextBuilder([], [MaxMessages(5)], ApproximateCounter())
        assert b.transform([sys1, sys2, u1, a1, u2, a2, u3, a3]) == [sys1, sys2, a1, u2, a2, u3, a3]

    def test_window_narrows_to_unit_boundary(self) -> None:
        """A tool unit that would cross the limit is dropped whole, never split."""
        msgs = [human("u1"), call("a", "b"), tool("ra", tool_call_id="a"), tool("rb", tool_call_id="b"), human("u2"), ai("a2")]
        assert MaxMessages(4).apply(msgs) == msgs[4:]
        assert MaxMessages(5).apply(msgs) == msgs[1:]

    def test_newest_unit_always_kept(self) -> None:
        """The current tool round survives even when alone larger than the limit."""
        msgs = [human("u"), call("a", "b", "c"), *(tool("r", tool_call_id=i) for i in "abc")]
        assert MaxMessages(2).apply(msgs) == msgs[1:]

    def test_zero_keeps_only_pinned(self) -> None:
        """max_messages 0 leaves the pinned prefix."""
        msgs = [system("s"), human("u")]
        assert MaxMessages(0).apply(msgs) == msgs[:1]

    def test_pinned_roles_configurable(self) -> None:
        """With no pinned roles a dynamic system message counts like any message (a protected one is still kept)."""
        msgs = [system("s", zone="dynamic"), human("u"), ai("a")]
        assert MaxMessages(2, pinned_roles=()).apply(msgs) == msgs[1:]
        protected = [system("s"), human("u"), ai("a")]
        assert MaxMessages(1, pinned_roles=()).apply(protected) == [protected[0], protected[2]]

    def test_negative_rejected(self) -> None:
        """A negative limit is a configuration error."""
        with pytest.raises(ValueError):
            MaxMessages(-1)


class TestTokenBudget:
    def test_drops_oldest_units_first(self, token_budget) -> None:
        """With a tight budget the newest units survive and the system prompt stays."""
        counter = CachedCounter(ApproximateCounter())
        msgs = [system("sys"), human("old " * 50), ai("old answer " * 20), human("new question"), ai("new answer")]
        need = counter.priming + sum(counter.count_message(m) for m in (msgs[0], msgs[3], msgs[4]))
        out = token_budget(max_tokens=need).apply(msgs, ctx())
        assert out == [msgs[0], msgs[3], msgs[4]]

    def test_trim_from_end_keeps_oldest(self, token_budget) -> None:
        """trim_from_start=False keeps the oldest units instead."""
        msgs = [system("sys"), human("a"), ai("b"), human("c" * 400)]
        out = token_budget(max_tokens=40, trim_from_start=False).apply(msgs, ctx())
        assert out == msgs[:3]

    def test_default_budget_comes_from_context(self, token_budget) -> None:
        """Without max_tokens the pipeline's model budget applies."""
        msgs = [human("x" * 400), human("y")]
        assert token_budget().apply(msgs, ctx(budget=20)) == msgs[1:]
        with pytest.raises(ValueError, match="no token budget"):
            token_budget().apply(msgs, ctx(budget=None))

    def test_pinned_over_budget_raises_with_report(self, token_budget) -> None:
        """The system prompt alone over budget raises BudgetExceeded carrying the report."""
        c = ctx()
        with pytest.raises(BudgetExceeded, match="pinned prefix alone needs") as info:
            token_budget(max_tokens=5).apply([system("s" * 100), human("hi")], c)
        assert info.value.report is c.report and info.value.budget == 5

    def test_pinned_over_budget_warn_policy(self, token_budget) -> None:
        """on_overflow='warn' returns the prefix and records a warning, never silently."""
        c = ctx()
        out = token_budget(max_tokens=5, on_overflow="warn").apply([system("s" * 100), human("hi")], c)
        assert [m.role for m in out] == ["system"]
        assert "sent without the conversation" in c.report.warnings[0]

    def test_current_turn_that_does_not_fit_overflows(self, token_budget) -> None:
        """If not even the newest unit fits, the build fails instead of sending no conversation."""
        msgs = [system("s"), human("q" * 400)]
        with pytest.raises(BudgetExceeded, match="plus the newest unit"):
            token_budget(max_tokens=30).apply(msgs, ctx())
        c = ctx()
        assert token_budget(max_tokens=30, on_overflow="warn").apply(msgs, c) == msgs[:1]
        assert c.report.warnings

    def test_counts_only_what_it_inspects(self) -> None:
        """The fast path's counting starts at the newest end and stops at the first unit that does not fit."""

        class Counting(ApproximateCounter):
            calls = 0

            def count_message(self, message):
                Counting.calls += 1
                return super().count_message(message)

        msgs = [human(f"message {i} " + "z" * 100) for i in range(5000)]
        out = TokenBudget(max_tokens=300).apply(msgs, ctx(counter=Counting()))
        assert 0 < len(out) < 20
        assert Counting.calls == len(out) + 1


# ----------------------------------------------------------------- properties
@st.composite
def histories(draw):
    """Legal histories: system prefix, users, assistants, parallel tool rounds in any order."""
    msgs = [system(draw(st.text(min_size=1, max_size=30))) for _ in range(draw(st.integers(0, 2)))]
    for turn in range(draw(st.integers(0, 12))):
        kind = draw(st.sampled_from(["user", "assistant", "tools"]))
        text = draw(st.text(max_size=120))
        if kind == "user":
            msgs.append(human(text))
        elif kind == "assistant":
            msgs.append(ai(text))
        else:
            ids = [f"t{turn}_{k}" for k in range(draw(st.integers(1, 3)))]
            msgs.append(call(*ids))
            for i in draw(st.permutations(ids)):
                msgs.append(tool(text, tool_call_id=i))
    return msgs


def _is_prefix_plus_suffix(out, msgs, pinned: int) -> bool:
    if out[:pinned] != msgs[:pinned]:
        return False
    tail = out[pinned:]
    return not tail or msgs[len(msgs) - len(tail):] == tail


def _kept(f: TokenBudget, messages, budget: int, counter: CachedCounter):
    """What ``f`` keeps (ids), or the overflow's required tokens."""
    try:
        return [m.id for m in f.apply(messages, FilterContext(counter=counter, budget=budget, report=BuildReport()))]
    except BudgetExceeded as exc:
        return exc.required


@settings(max_examples=300, deadline=None)
@given(histories(), st.lists(histories(), max_size=4), st.integers(0, 800), st.integers(-40, 40), st.booleans(),
       st.booleans())
def test_fast_equals_reference_as_the_history_grows(first, turns, budget, drift, after, priorities) -> None:
    """One long-lived fast token_budget, fed a growing history as a lazy chain (with a fresh part after it when
    ``after``), keeps exactly what a fresh reference keeps from the same list, build after build."""
    counter = CachedCounter(ApproximateCounter())
    fast = TokenBudget()
    store: list = []
    for k, more in enumerate([first, *turns]):
        store.extend(m for m in more if m.role != "system" or not store)
        if priorities and store:
            store.append(human(f"low {k}", priority=-1))
        parts = [LazyMessages([system("prompt")]), LazyMessages(Snapshot(store))]
        if after:
            parts.append([human(f"now {k}")])
        chain = MessageChain(parts)
        spent = budget + k * drift
        assert _kept(fast, chain, spent, counter) == _kept(fast.reference(), list(chain), spent, counter)


class TestProperties:
    @settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(histories(), st.integers(0, 800))
    def test_token_budget_invariants(self, token_budget, msgs, budget) -> None:
        """BudgetExceeded exactly when not even one unit fits; else within budget, pinned kept, legal, newest suffix, idempotent."""
        counter = CachedCounter(ApproximateCounter())
        c = FilterContext(counter=counter, budget=budget, report=BuildReport())
        f = token_budget()
        pinned = sum(1 for _ in itertools.takewhile(lambda m: m.role == "system", msgs))
        pinned_cost = counter.priming + sum(counter.count_message(m) for m in msgs[:pinned])
        dynamic = msgs[pinned:]
        newest = group_units(dynamic)[-1].slice(dynamic) if dynamic else []
        newest_cost = sum(counter.count_message(m) for m in newest)
        if pinned_cost > budget or (dynamic and pinned_cost + newest_cost > budget):
            with pytest.raises(BudgetExceeded):
                f.apply(msgs, c)
            return
        out = f.apply(msgs, c)
        assert counter.count_messages(out) <= budget
        assert _is_prefix_plus_suffix(out, msgs, pinned)
        check_tool_pairing(out)
        assert f.apply(out, c) == out

    @settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(histories(), st.integers(0, 600), st.integers(0, 200))
    def test_token_budget_monotone(self, token_budget, msgs, budget, extra) -> None:
        """A bigger budget keeps everything a smaller one keeps."""
        counter = CachedCounter(ApproximateCounter())
        try:
            small = token_budget(max_tokens=budget).apply(msgs, FilterContext(counter=counter, budget=None))
        except BudgetExceeded:
            return
        big = token_budget(max_tokens=budget + extra).apply(msgs, FilterContext(counter=counter, budget=None))
        assert {m.id for m in small} <= {m.id for m in big}

    @settings(max_examples=300, deadline=None)
    @given(histories(), st.integers(0, 15))
    def test_max_messages_invariants(self, msgs, limit) -> None:
        """Pinned kept, legal pairing, contiguous newest suffix, at most the limit unless one unit exceeds it."""
        out = MaxMessages(limit).apply(msgs)
        pinned = sum(1 for _ in itertools.takewhile(lambda m: m.role == "system", msgs))
        assert _is_prefix_plus_suffix(out, msgs, pinned)
        check_tool_pairing(out)
        kept = len(out) - pinned
        assert kept <= limit or (limit > 0 and out[pinned].tool_calls and all(m.role == "tool" for m in out[pinned + 1:]))
        assert MaxMessages(limit).apply(out) == out


# ------------------------------------------------------------------ contracts
from ctxcore.testing.contracts import FilterContract  # noqa: E402


class TestMaxMessagesContract(FilterContract):
    """max_messages passes the filter contract."""

    def make_filter(self) -> MaxMessages:
        return MaxMessages(3)


class TestTokenBudgetContract(FilterContract):
    """token_budget passes the filter contract at every budget."""

    budgets = (0, 40, 120, 400, 100_000)

    def make_filter(self) -> TokenBudget:
        return TokenBudget()


class TestTokenBudgetReferenceContract(TestTokenBudgetContract):
    """The reference implementation passes the filter contract too."""

    def make_filter(self) -> TokenBudget:
        return TokenBudget().reference()


def test_loading_the_plugin_does_not_import_compaction() -> None:
    """Importing the package and its plugin module leaves the compaction ladder unimported until it is used."""
    import subprocess
    import sys

    code = ("import sys, ctxcore_filters, ctxcore_filters.plugin; "
            "before = 'ctxcore_filters.compaction' in sys.modules; "
            "ctxcore_filters.Compaction; "
            "print(before, 'ctxcore_filters.compaction' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True).stdout
    assert out.split() == ["False", "True"]
