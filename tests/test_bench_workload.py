"""The benchmark workload is what every performance figure rests on: check its shape."""

from __future__ import annotations

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))

from workload import MAX_RESULT, MIN_RESULT, as_messages, coding_agent_transcript  # noqa: E402

from ctxcore.model.transactions import sanitize_tool_call_history  # noqa: E402
from ctxcore.render import validate_request  # noqa: E402


def test_exact_length_deterministic_and_seeded() -> None:
    for n in (0, 1, 2, 7, 50, 333):
        assert len(coding_agent_transcript(n)) == n
    assert coding_agent_transcript(200, seed=3) == coding_agent_transcript(200, seed=3)
    assert coding_agent_transcript(200, seed=3) != coding_agent_transcript(200, seed=4)


def test_every_prefix_is_a_legal_history_for_both_providers() -> None:
    for n in (1, 2, 3, 5, 11, 40, 401):
        messages = as_messages(coding_agent_transcript(n, seed=n))
        result = sanitize_tool_call_history(messages)
        assert not result.removed and not result.notes, n
        validate_request(messages, "openai")
        validate_request(messages, "anthropic")


def test_shape_of_a_coding_agent_session() -> None:
    dicts = coding_agent_transcript(3000)
    results = [d for d in dicts if d["role"] == "tool"]
    calls = [d for d in dicts if d.get("tool_calls")]
    assert results and calls and any(d["role"] == "user" for d in dicts)
    assert all(MIN_RESULT <= len(d["content"]) <= MAX_RESULT for d in results)
    widths = {len(d["tool_calls"]) for d in calls}
    assert widths == {1, 2, 3}  # parallel calls of every width occur
    assert [m.id for m in as_messages(dicts[:3])] == ["m0", "m1", "m2"]
