"""Tests for sanitize_tool_call_history and legal_start (ctxcore.model.transactions)."""

from __future__ import annotations

import pytest

from ctxcore.errors import InvalidHistory
from ctxcore.model.messages import Message, ToolCall, ai, human, system, tool
from ctxcore.model.transactions import (
    INTERRUPTED_RESULT,
    check_tool_pairing,
    legal_start,
    sanitize_tool_call_history,
)


def call(*ids: str, name: str = "read_file") -> Message:
    return ai(tool_calls=[{"id": i, "name": name, "arguments": {}} for i in ids])


def ids(messages) -> list[str]:
    return [m.id for m in messages]


class TestSanitize:
    def test_legal_history_unchanged(self) -> None:
        """A legal history comes back as the same objects with no notes."""
        msgs = [system("s"), human("q"), call("a", "b"), tool("rb", tool_call_id="b"), tool("ra", tool_call_id="a"), ai("ok")]
        result = sanitize_tool_call_history(msgs)
        assert result.messages == msgs and all(x is y for x, y in zip(result.messages, msgs, strict=True))
        assert not (result.removed or result.backfilled or result.repaired or result.notes)

    def test_past_unanswered_call_removed_whole(self) -> None:
        """A past call whose result never came is removed with the results it did get."""
        msgs = [human("q"), call("a", "b"), tool("ra", tool_call_id="a"), human("next"), ai("ok")]
        result = sanitize_tool_call_history(msgs)
        assert ids(result.messages) == ids([msgs[0], msgs[3], msgs[4]])
        assert ids(result.removed) == ids(msgs[1:3])
        assert "tool call 'b' is never answered" in result.notes[0]
        check_tool_pairing(result.messages)

    def test_orphan_result_removed(self) -> None:
        """A tool result without a declared call before it is removed."""
        msgs = [human("q"), tool("x", tool_call_id="zzz"), ai("answer"), human("more")]
        result = sanitize_tool_call_history(msgs)
        assert ids(result.messages) == ids([msgs[0], msgs[2], msgs[3]])
        assert "has no open call" in result.notes[0]

    def test_late_result_is_an_orphan(self) -> None:
        """A result that comes after another message no longer answers its call: both halves go."""
        msgs = [human("q"), call("a"), human("interrupt"), tool("ra", tool_call_id="a"), human("again")]
        result = sanitize_tool_call_history(msgs)
        assert ids(result.messages) == ids([msgs[0], msgs[2], msgs[4]])

    def test_backfill_adds_interrupted_placeholders(self) -> None:
        """With backfill the missing results are filled with a placeholder naming the tool, right after the unit."""
        msgs = [human("q"), call("a", "b", name="run_tests"), tool("ra", tool_call_id="a"), human("next")]
        result = sanitize_tool_call_history(msgs, backfill=True)
        [filler] = result.backfilled
        assert filler.role == "tool" and filler.tool_call_id == "b"
        assert filler.text == INTERRUPTED_RESULT.format(name="run_tests") and "interrupted" in filler.text
        assert ids(result.messages) == [*ids(msgs[:3]), filler.id, msgs[3].id]
        check_tool_pairing(result.messages)

    def test_backfill_ids_are_stable(self) -> None:
        """The same broken history gives the same placeholder ids on every build (cacheable prefix)."""
        msgs = [human("q"), call("a"), human("next")]
        first = sanitize_tool_call_history(msgs, backfill=True).backfilled[0].id
        assert sanitize_tool_call_history(msgs, backfill=True).backfilled[0].id == first

    def test_backfill_still_removes_orphans(self) -> None:
        """An orphan result has no call to attach to: removed even with backfill."""
        msgs = [human("q"), tool("x", tool_call_id="zzz"), human("next")]
        assert ids(sanitize_tool_call_history(msgs, backfill=True).messages) == ids([msgs[0], msgs[2]])

    def test_broken_current_tail_raises(self) -> None:
        """A trailing call without its results is the current turn: InvalidHistory, never silently dropped."""
        msgs = [human("q"), call("a", "b"), tool("ra", tool_call_id="a")]
        with pytest.raises(InvalidHistory, match="current turn") as info:
            sanitize_tool_call_history(msgs, backfill=True)
        assert info.value.index == 1

    def test_trailing_orphan_raises(self) -> None:
        """A trailing orphan result is a broken current tail too."""
        with pytest.raises(InvalidHistory) as info:
            sanitize_tool_call_history([human("q"), ai("a"), tool("x", tool_call_id="nope")])
        assert info.value.index == 2

    def test_trailing_system_messages_do_not_hide_the_tail(self) -> None:
        """System messages placed after the history (reminders) do not make the broken turn 'past'."""
        with pytest.raises(InvalidHistory):
            sanitize_tool_call_history([human("q"), call("a"), system("reminder")])

    def test_missing_call_id_repaired_from_adjacent_result(self) -> None:
        """One id-less call followed by one result takes the result's id."""
        broken = Message(role="assistant", tool_calls=(ToolCall(id="", name="f"),))
        msgs = [human("q"), broken, tool("r", tool_call_id="call_9"), ai("done")]
        result = sanitize_tool_call_history(msgs)
        assert result.messages[1].tool_call_ids == ("call_9",) and result.messages[1].id == broken.id
        assert result.repaired == [broken.id]
        check_tool_pairing(result.messages)

    def test_missing_ids_repaired_by_tool_name(self) -> None:
        """Several id-less calls are paired with results by tool name when each name is unique."""
        broken = Message(role="assistant", tool_calls=(ToolCall(id="", name="ls"), ToolCall(id="", name="cat")))
        msgs = [human("q"), broken, tool("c", tool_call_id="k2", name="cat"), tool("l", tool_call_id="k1", name="ls"), ai("ok")]
        result = sanitize_tool_call_history(msgs)
        assert result.messages[1].tool_call_ids == ("k1", "k2")

    def test_ambiguous_missing_ids_removed(self) -> None:
        """Two id-less calls and two unnamed results cannot be paired: the transaction is removed."""
        broken = Message(role="assistant", tool_calls=(ToolCall(id="", name="f"), ToolCall(id="", name="f")))
        msgs = [human("q"), broken, tool("1", tool_call_id="x"), tool("2", tool_call_id="y"), human("next")]
        result = sanitize_tool_call_history(msgs)
        assert ids(result.messages) == ids([msgs[0], msgs[4]])
        assert not result.repaired


class TestLegalStart:
    def test_advances_to_first_user(self) -> None:
        """Leading assistant and tool messages after the system prefix are dropped."""
        s, a, c, r, u, a2 = system("s"), ai("a"), call("x"), tool("r", tool_call_id="x"), human("u"), ai("a2")
        result = legal_start([s, a, c, r, u, a2])
        assert result.messages == [s, u, a2] and result.dropped == [a, c, r]

    def test_seed_example(self) -> None:
        """The seed's max_messages output [sys1, sys2, a1, u2, a2, u3, a3] starts at u2 after legal start."""
        sys1, sys2, a1, u2, a2, u3, a3 = system("1"), system("2"), ai("a1"), human("u2"), ai("a2"), human("u3"), ai("a3")
        assert legal_start([sys1, sys2, a1, u2, a2, u3, a3]).messages == [sys1, sys2, u2, a2, u3, a3]

    def test_already_legal_is_unchanged(self) -> None:
        """A window starting with a user message is returned as is."""
        msgs = [system("s"), human("u"), ai("a")]
        assert legal_start(msgs).messages == msgs

    def test_no_user_keeps_system_only(self) -> None:
        """Without any user message only the system messages remain."""
        s = system("s")
        assert legal_start([s, ai("a")]).messages == [s]

    def test_system_messages_inside_the_dropped_run_are_kept(self) -> None:
        """System messages are never dropped by the legal start."""
        s, a, s2, u = system("s"), ai("a"), system("s2"), human("u")
        assert legal_start([s, a, s2, u]).messages == [s, s2, u]

    def test_protected_assistant_cannot_be_dropped(self) -> None:
        """A protected non-user message before the first user message is an error, naming its index."""
        with pytest.raises(InvalidHistory) as info:
            legal_start([system("s"), ai("rules", zone="protected"), human("u")])
        assert info.value.index == 1

    def test_recovers_nearest_earlier_user_when_it_fits(self) -> None:
        """With the history given, the nearest earlier user message is put back at its place."""
        s, u1, a1, u2, a2 = system("s"), human("u1"), ai("a1"), human("u2"), ai("a2")
        history = [s, u1, a1, u2, a2]
        result = legal_start([s, a2], history=history, fits=lambda m: True)
        assert result.messages == [s, u2, a2] and result.recovered is u2 and not result.dropped

    def test_recovery_respects_the_budget(self) -> None:
        """When the earlier user message does not fit, the window advances instead."""
        s, u1, a1, c, r = system("s"), human("u1"), ai("a1"), call("x"), tool("r", tool_call_id="x")
        u2 = human("u2")
        history = [s, u1, a1, c, r, u2]
        result = legal_start([s, c, r, u2], history=history, fits=lambda m: False)
        assert result.messages == [s, u2] and result.recovered is None

    def test_recovered_message_keeps_history_order(self) -> None:
        """A recovered user message older than a kept system message goes before it (output stays a subsequence)."""
        s1, u1, s2, a1, u2 = system("s1"), human("u1"), system("s2"), ai("a1"), human("u2")
        result = legal_start([s1, s2, a1, u2], history=[s1, u1, s2, a1, u2], fits=lambda m: True)
        assert result.messages == [s1, u1, s2, a1, u2]


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from tests.test_budgeting_properties import histories  # noqa: E402


@settings(max_examples=300, deadline=None)
@given(histories(), st.booleans())
def test_sanitize_properties(msgs, backfill) -> None:
    """Sanitizing gives a legal history (a subsequence plus placeholders) and is idempotent, or refuses the tail."""
    try:
        result = sanitize_tool_call_history(msgs, backfill=backfill)
    except InvalidHistory as exc:
        assert exc.index is not None and exc.index < len(msgs) and msgs[exc.index].role in ("assistant", "tool")
        return
    check_tool_pairing(result.messages)
    source = iter(m.id for m in msgs)
    added = {m.id for m in result.backfilled}
    assert all(m.id in added or m.id in source for m in result.messages)
    assert {m.id for m in result.removed}.isdisjoint(m.id for m in result.messages)
    assert len(result.messages) == len(msgs) - len(result.removed) + len(result.backfilled)
    again = sanitize_tool_call_history(result.messages, backfill=backfill)
    assert again.messages == result.messages and not again.notes
