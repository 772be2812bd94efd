"""CI smoke run of bench/caching_rules.py: the provider-rules harness is correct on a small transcript."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import caching_rules as cr  # noqa: E402


def test_quick_run_orders_the_three_builders_sensibly(host: Any) -> None:
    """cache: auto reads and writes, cache: off caches nothing under Anthropic's rules, OpenAI's are unaffected by marks."""
    data = cr.run(160, 6000, "python bench/caching_rules.py --quick", host=host)
    auto, off = data["rows"]["ctxcore, cache: auto"], data["rows"]["ctxcore, cache: off"]
    assert auto["anthropic_cached_share"] > 0.3 and auto["anthropic_written"] > 0
    assert off["anthropic_cached_share"] == 0 and off["anthropic_cost"] == pytest.approx(off["anthropic_cost_without_cache"])
    assert auto["anthropic_cost"] < off["anthropic_cost"]
    other = data["rows"][f"ctxcore, cache: auto, water marks {cr.OTHER_MARKS[0]}/{cr.OTHER_MARKS[1]}"]
    assert other["openai_cached_share"] == off["openai_cached_share"]  # same requests: OpenAI caches without marks
    assert auto["mean_fill"] < off["mean_fill"]  # cache: off keeps the water marks of targets that bill no writes
    long = data["rows"]["ctxcore, cache: auto, cache_ttl: 1h"]
    assert long["anthropic_cached_share"] >= auto["anthropic_cached_share"]  # 1h entries outlive the pauses
    steady = data["rows"]["ctxcore, cache: auto, no idle pauses"]
    assert steady["anthropic_cached_share"] >= auto["anthropic_cached_share"]  # pauses only lose cache
    assert auto["over_budget"] == 0
    assert data["goals"][next(g for g in data["goals"] if g.startswith("breakpoints moved"))][0] == 0
    table = cr.markdown(data)
    assert "| ctxcore, cache: auto |" in table and "cost, LangChain / ctxcore (Anthropic rules)" in table


def test_timestamps_pause_every_tenth_turn() -> None:
    """The synthetic clock: 15 s per step, 60 s before a turn, 600 s before every 10th turn."""
    msgs = [{"role": "user"}, {"role": "assistant"}] * 10
    times = cr.timestamps(msgs)
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    assert gaps[0] == 15.0 and gaps[1] == 60.0 and max(gaps) == 600.0
    assert max(b - a for a, b in zip(cr._steady(times), cr._steady(times)[1:], strict=False)) == 60.0


def test_moved_breakpoints_counts_a_call_that_does_not_read_what_the_last_one_cached() -> None:
    """A call extending the previous request that reads less than it read and wrote counts; one that does not extend it does not."""
    from ctxcore.tools.replay import CallResult, ReplayResult

    def call(index: int, read: int, written: int) -> CallResult:
        return CallResult(index=index, turn=1, history=index, messages=1, input_tokens=5000, cached_tokens=0, budget=None,
                          fill=None, over_budget=False, reductions=0, new_reductions=0, new_stages={}, removed=0,
                          anthropic_read_tokens=read, anthropic_write_tokens=written)

    result = ReplayResult([call(0, 0, 3000), call(1, 3000, 500), call(2, 2000, 1500), call(3, 0, 3500)], 3.0, 0.1)
    assert cr.moved_breakpoints(result, [False, True, True, False]) == 1
