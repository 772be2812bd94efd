"""Tests for ctxcore.model.transactions: unit grouping and tool-call pairing checks."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctxcore.errors import InvalidHistory
from ctxcore.model.messages import ai, human, system, tool
from ctxcore.model.transactions import (
    check_tool_pairing,
    group_units,
    pinned_prefix_length,
)


def call(*ids: str):
    return ai(tool_calls=[{"id": i, "name": "f", "arguments": {}} for i in ids])


class TestGroupUnits:
    def test_call_and_results_form_one_unit(self) -> None:
        """An assistant call plus the results answering it is one unit."""
        msgs = [human("q"), call("a"), tool("r", tool_call_id="a"), ai("done")]
        assert [(u.start, u.end) for u in group_units(msgs)] == [(0, 1), (1, 3), (3, 4)]

    def test_parallel_results_in_any_order(self) -> None:
        """Several calls answered in any order stay one unit."""
        msgs = [call("a", "b", "c"), tool("rc", tool_call_id="c"), tool("ra", tool_call_id="a"), tool("rb", tool_call_id="b")]
        assert [(u.start, u.end) for u in group_units(msgs)] == [(0, 4)]

    def test_orphan_result_is_its_own_unit(self) -> None:
        """A tool result answering no open call is not glued to an unrelated call."""
        msgs = [call("a"), tool("r", tool_call_id="a"), tool("x", tool_call_id="zzz")]
        assert [(u.start, u.end) for u in group_units(msgs)] == [(0, 2), (2, 3)]

    def test_duplicate_result_not_absorbed(self) -> None:
        """A second result for the same call id ends the unit."""
        msgs = [call("a"), tool("r", tool_call_id="a"), tool("r2", tool_call_id="a")]
        assert [(u.start, u.end) for u in group_units(msgs)] == [(0, 2), (2, 3)]

    @given(st.lists(st.sampled_from(["u", "a", "c1", "c2", "t"]), max_size=30))
    def test_units_partition_the_sequence(self, kinds: list[str]) -> None:
        """Units are contiguous, non-empty and cover every message exactly once."""
        msgs = []
        for i, k in enumerate(kinds):
            if k == "u":
                msgs.append(human(str(i)))
            elif k == "a":
                msgs.append(ai(str(i)))
            elif k == "c1":
                msgs.append(call(f"x{i}"))
            elif k == "c2":
                msgs.append(call(f"x{i}", f"y{i}"))
            else:
                msgs.append(tool(str(i), tool_call_id=f"x{i - 1}"))
        units = group_units(msgs)
        position = 0
        for u in units:
            assert u.start == position and u.end > u.start
            position = u.end
        assert position == len(msgs)


class TestPairing:
    def test_legal_history_passes(self) -> None:
        """Answered calls and plain messages pass the check."""
        check_tool_pairing([system("s"), human("q"), call("a", "b"), tool("1", tool_call_id="b"), tool("2", tool_call_id="a"), ai("ok")])

    def test_result_without_call(self) -> None:
        """A leading tool result is reported with its index."""
        with pytest.raises(InvalidHistory, match=r"message 1: tool result for call 'a' does not answer a call of the assistant message before it"):
            check_tool_pairing([human("q"), tool("r", tool_call_id="a")])

    def test_unanswered_call_in_the_middle(self) -> None:
        """A call followed by a user message without its result is rejected."""
        with pytest.raises(InvalidHistory, match="message 1: tool call 'a' is not answered before message 2"):
            check_tool_pairing([human("q"), call("a"), human("next")])

    def test_unanswered_call_at_the_end(self) -> None:
        """A trailing call without its result is rejected."""
        with pytest.raises(InvalidHistory, match="never answered") as info:
            check_tool_pairing([human("q"), call("a", "b"), tool("r", tool_call_id="a")])
        assert info.value.index == 1


def test_pinned_prefix_length() -> None:
    """Only the leading run of pinned roles counts."""
    msgs = [system("a"), system("b"), human("u"), system("late")]
    assert pinned_prefix_length(msgs, ("system",)) == 2
    assert pinned_prefix_length(msgs, ()) == 0
