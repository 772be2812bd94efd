"""CI smoke run of bench/cache_economics.py (target 6): the harness is correct on a small transcript (no timing)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import cache_economics as ce  # noqa: E402
from workload import coding_agent_transcript  # noqa: E402

N, BUDGET = 160, 6000


@pytest.fixture(scope="module")
def messages() -> list[dict[str, Any]]:
    return coding_agent_transcript(N)


def test_ctxcore_side_stays_within_budget_and_caches_at_most_its_input(host: Any, messages: list[dict[str, Any]]) -> None:
    """Every ctxcore request fits the budget, and no request has more cached tokens than input tokens."""
    result = ce.run_ctxcore(messages, BUDGET, host=host)
    assert len(result.calls) == sum(1 for m in messages if m["role"] == "assistant")
    assert all(c.input_tokens <= BUDGET and c.over_budget is False for c in result.calls)
    assert all(0 <= c.cached_tokens <= c.input_tokens for c in result.calls)
    assert result.totals["reductions"] > 0, "the small budget must make compaction run"


def test_ctxcore_prefix_is_stable_between_batches(host: Any, messages: list[dict[str, Any]]) -> None:
    """A call that made no new reduction re-sends the whole previous request as its cached prefix."""
    from ctxcore_counters import TiktokenCounter

    priming = TiktokenCounter("cl100k_base").count_messages([])
    calls = ce.run_ctxcore(messages, BUDGET, host=host).calls
    quiet = [(a, b) for a, b in zip(calls, calls[1:], strict=False) if b.new_reductions == 0]
    assert quiet, "some calls must only append"
    assert all(b.cached_tokens == a.input_tokens - priming for a, b in quiet)


def test_langchain_side_uses_the_same_metric(messages: list[dict[str, Any]]) -> None:
    """LangChain's sliding window is measured per call too: within budget, cached at most the input."""
    result = ce.run_langchain(messages, BUDGET)
    assert all(0 <= c.cached_tokens <= c.input_tokens <= BUDGET for c in result.calls)
    assert any(c.removed > 0 for c in result.calls), "the window must have slid"


def test_report_has_both_rows_and_every_target(host: Any, tmp_path: Path) -> None:
    """The quick run's markdown names both strategies and the four targets, and replaces only the marked section."""
    data = ce.run(N, BUDGET, do_sweep=False, command="python bench/cache_economics.py --quick", host=host)
    text = ce.markdown(data)
    for row in ("| ctxcore compaction (trigger", "| LangChain trim_messages sliding window |", "| cached share |",
                "| cost, LangChain / ctxcore |", "| mean fill |", "| requests over budget |"):
        assert row in text
    assert set(data["targets"]) == {"cached_share", "cost_ratio", "mean_fill", "over_budget"}
    doc = tmp_path / "performance.md"
    doc.write_text(f"# Performance\n\nbefore\n\n{ce.MARK_START}\nold\n{ce.MARK_END}\n\nafter\n")
    ce.write_docs(text, doc)
    written = doc.read_text()
    assert "old" not in written and text in written and written.startswith("# Performance\n\nbefore") and written.endswith("after\n")
