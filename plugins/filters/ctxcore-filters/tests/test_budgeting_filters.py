"""Tests for token_budget zones and priorities, merge_same_role and budget_hint."""

from __future__ import annotations

import pytest
from ctxcore_counters import ApproximateCounter
from ctxcore_filters import BudgetHint, MergeSameRole, TokenBudget

from ctxcore import (
    BudgetExceeded,
    BuildReport,
    CachedCounter,
    ContextBuilder,
    FilterContext,
    ImageBlock,
    TextBlock,
    ai,
    human,
    system,
    tool,
)
from ctxcore.testing.contracts import FilterContract


def ctx(budget: int | None = None) -> FilterContext:
    return FilterContext(counter=CachedCounter(ApproximateCounter()), budget=budget, report=BuildReport(), step_id="f")


def cost(*msgs) -> int:
    return CachedCounter(ApproximateCounter()).count_messages(list(msgs))


class TestZonesAndPriorities:
    def test_protected_message_survives_anywhere(self, token_budget) -> None:
        """A protected message in the middle of the history is kept however old it is."""
        s, old, rules, mid, new = system("s"), human("old " * 30), human("RULES: never push to main", zone="protected"), ai("mid " * 30), human("now")
        out = token_budget(max_tokens=cost(s, rules, new)).apply([s, old, rules, mid, new], ctx())
        assert out == [s, rules, new]

    def test_lowest_priority_dropped_first(self, token_budget) -> None:
        """A low-priority recent unit goes before a high-priority older one."""
        s = system("s")
        important = human("keep me " * 10, priority=5)
        chatter = ai("noise " * 10, priority=-1)
        current = human("current question")
        msgs = [s, important, chatter, current]
        out = token_budget(max_tokens=cost(s, important, current) + 2).apply(msgs, ctx())
        assert out == [s, important, current]

    def test_oldest_first_within_a_priority(self, token_budget) -> None:
        """Within one priority the oldest unit is dropped first."""
        s, a, b, c = system("s"), human("a " * 20), ai("b " * 20), human("c")
        out = token_budget(max_tokens=cost(s, b, c)).apply([s, a, b, c], ctx())
        assert out == [s, b, c]

    def test_protected_over_budget_raises_with_report(self, token_budget) -> None:
        """Pinned plus protected alone over budget raises BudgetExceeded carrying the report."""
        c = ctx()
        msgs = [system("s"), human("memory " * 40, zone="protected"), human("q")]
        with pytest.raises(BudgetExceeded, match="protected messages alone need") as info:
            token_budget(max_tokens=20).apply(msgs, c)
        assert info.value.report is c.report and info.value.required > 20

    def test_warn_policy_keeps_protected_and_warns(self, token_budget) -> None:
        """on_overflow=warn returns pinned and protected content over budget, with a warning."""
        c = ctx()
        memory = human("memory " * 40, zone="protected")
        out = token_budget(max_tokens=20, on_overflow="warn").apply([system("s"), memory, human("q")], c)
        assert [m.id for m in out][1] == memory.id and len(out) == 2
        assert c.report.warnings and "on_overflow: warn" in c.report.warnings[0]

    def test_tool_unit_with_protected_part_is_kept_whole(self, token_budget) -> None:
        """Protection applies to the whole unit: a protected result keeps its call."""
        s = system("s")
        c = ai(tool_calls=[{"id": "k", "name": "load_skill", "arguments": {}}])
        r = tool("skill text " * 20, tool_call_id="k", zone="protected")
        out = token_budget(max_tokens=cost(s, c, r, human("q"))).apply([s, human("old " * 50), c, r, human("q")], ctx())
        assert [m.role for m in out] == ["system", "assistant", "tool", "user"]


class TestMaxMessagesZones:
    def test_protected_units_kept_and_not_counted(self) -> None:
        """A protected message outside the pinned prefix survives max_messages and does not use up N."""
        from ctxcore_filters import MaxMessages

        s, memory, u1, a1, u2, a2 = system("s"), human("memory", zone="protected"), human("u1"), ai("a1"), human("u2"), ai("a2")
        assert MaxMessages(2).apply([s, memory, u1, a1, u2, a2]) == [s, memory, u2, a2]
        assert MaxMessages(0).apply([s, memory, u1]) == [s, memory]


class TestMergeSameRole:
    def test_merges_runs_of_text(self) -> None:
        """Consecutive user messages become one, text joined with a blank line."""
        u1, u2, a = human("first"), human("second"), ai("reply")
        out = MergeSameRole().apply([system("s"), u1, u2, a])
        assert [m.role for m in out] == ["system", "user", "assistant"]
        assert out[1].content == "first\n\nsecond" and out[1].metadata["merged_from"] == [u1.id, u2.id]

    def test_blocks_concatenated(self) -> None:
        """When either side has blocks, blocks are concatenated (strings become text blocks)."""
        img = ImageBlock(url="https://x/y.png")
        out = MergeSameRole().apply([human("look"), human([img])])
        assert out[0].content == (TextBlock(text="look"), img)

    def test_assistant_text_then_call_merges(self) -> None:
        """An assistant text followed by an assistant call becomes one message with both; results stay after it."""
        call = ai(tool_calls=[{"id": "a", "name": "f", "arguments": {}}])
        out = MergeSameRole().apply([human("q"), ai("thinking"), call, tool("r", tool_call_id="a")])
        assert [m.role for m in out] == ["user", "assistant", "tool"]
        assert out[1].text == "thinking" and out[1].tool_call_ids == ("a",)

    def test_never_merges_after_a_call_or_tools(self) -> None:
        """A message after one with tool calls is not merged into it; tool results are never merged."""
        call = ai(tool_calls=[{"id": "a", "name": "f", "arguments": {}}, {"id": "b", "name": "f", "arguments": {}}])
        msgs = [human("q"), call, tool("1", tool_call_id="a"), tool("2", tool_call_id="b")]
        assert MergeSameRole().apply(msgs) == msgs
        with pytest.raises(ValueError):
            MergeSameRole(roles=("tool",))

    def test_provenance_is_conservative(self) -> None:
        """The merge is untrusted if any part is, protected if any part is, as important as its top part."""
        out = MergeSameRole().apply([human("a", trust="untrusted", priority=1), human("b", zone="protected", priority=3)])
        assert (out[0].trust, out[0].zone, out[0].priority) == ("untrusted", "protected", 3)

    def test_stable_ids_and_report(self) -> None:
        """The merged id is the same on every build, so the request prefix stays cacheable."""
        msgs = [human("a"), human("b")]
        b = ContextBuilder([], [MergeSameRole()], ApproximateCounter())
        assert b.transform(msgs)[0].id == b.transform(msgs)[0].id

    def test_different_names_not_merged(self) -> None:
        """Messages from different named speakers stay apart."""
        msgs = [human("a", name="ann"), human("b", name="bob")]
        assert MergeSameRole().apply(msgs) == msgs


class TestBudgetHint:
    def test_appends_numbers(self) -> None:
        """The hint states total, used, remaining and pressure, counting itself."""
        c = ctx(1000)
        msgs = [system("s"), human("question")]
        out = BudgetHint().apply(msgs, c)
        hint = out[-1]
        used = c.counter.count_messages(out)
        assert out[:-1] == msgs and hint.role == "user"
        assert hint.text == f"[Context budget: {used} of 1000 tokens used, {1000 - used} remaining ({used / 1000:.0%} pressure).]"

    def test_left_out_when_it_does_not_fit(self) -> None:
        """A hint that would exceed the budget is omitted, with a report warning."""
        c = ctx(20)
        msgs = [human("q")]
        assert BudgetHint().apply(msgs, c) == msgs
        assert "left out" in c.report.warnings[0]

    def test_replaces_an_earlier_hint(self) -> None:
        """Applying the hint twice leaves one hint (idempotent)."""
        c = ctx(1000)
        once = BudgetHint().apply([human("q")], c)
        assert BudgetHint().apply(once, c) == once

    def test_bad_template_fails_early(self) -> None:
        """A template with an unknown placeholder fails at construction."""
        with pytest.raises(KeyError):
            BudgetHint(template="{nope}")


class TestMergeSameRoleContract(FilterContract):
    """merge_same_role passes the filter contract (it replaces messages: compresses)."""

    compresses = True

    def make_filter(self) -> MergeSameRole:
        return MergeSameRole()


class TestBudgetHintContract(FilterContract):
    """budget_hint passes the filter contract (it adds a message: compresses)."""

    compresses = True
    budgets = (40, 120, 400, 100_000)

    def make_filter(self) -> BudgetHint:
        return BudgetHint()


class TestTokenBudgetPrioritiesContract(FilterContract):
    """token_budget keeping newest-first in reverse (trim_from_start=False) passes the contract too."""

    budgets = (0, 40, 120, 400, 100_000)

    def make_filter(self) -> TokenBudget:
        return TokenBudget(trim_from_start=False)


from ctxcore.testing.contracts.budget_filter import BudgetFilterContract  # noqa: E402


class TestTokenBudgetBudgetContract(BudgetFilterContract):
    """token_budget passes the budget-filter contract (within budget, protected kept, monotone)."""

    def make_filter(self) -> TokenBudget:
        return TokenBudget()


class TestTokenBudgetFromEndBudgetContract(BudgetFilterContract):
    """token_budget trimming the newest end passes it too."""

    def make_filter(self) -> TokenBudget:
        return TokenBudget(trim_from_start=False)


class TestTokenBudgetReferenceBudgetContract(BudgetFilterContract):
    """The reference implementation of token_budget passes the budget-filter contract."""

    def make_filter(self) -> TokenBudget:
        return TokenBudget().reference()


def test_token_budget_keeps_no_window_of_a_plain_list(token_budget) -> None:
    """A plain list given to token_budget may be edited in place afterwards: the next call starts over."""
    tb = token_budget(max_tokens=60)
    history = [human(f"message number {i} with a few words") for i in range(12)]
    first = tb.apply(history, ctx(60))
    history[-3] = human("an edited message that is a good deal longer than the others were")
    history.append(human("and one more"))
    assert tb.apply(history, ctx(60)) == token_budget(max_tokens=60).apply(history, ctx(60)) != first
