"""Smoke of the thread load test (bench/thread_load.py) at 2 workers x 2 threads x 3 turns, on real servers.

Checks what the bench asserts, never timing: every turn is read back exactly
once, whole and in its writer's order on PostgreSQL and on Redis, StaleWrite
hits only the thread two workers share, and the checker itself notices a lost,
a duplicated and a reordered turn.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import thread_load  # noqa: E402

from ctxcore import Pipeline  # noqa: E402
from ctxcore.testing.harness.postgres import pg_dsn  # noqa: E402, F401
from ctxcore.testing.harness.redis import redis_url  # noqa: E402, F401

pytest.importorskip("ctxcore_redis")
pytest.importorskip("ctxcore_postgres")


@pytest.mark.parametrize("backend", ["postgres", "redis"])
def test_quick_load_loses_duplicates_and_reorders_nothing(backend: str, pg_dsn: str, redis_url: str) -> None:  # noqa: F811
    """Two workers, one private and one shared thread each, three turns: all 12 turns read back intact, stale only where shared."""
    config = thread_load.Config.quick()
    outcome = thread_load.run(backend, thread_load.backends(pg_dsn, redis_url)[backend], config)
    assert outcome.problems == []
    assert (outcome.lost, outcome.duplicated, outcome.reordered, outcome.stale_private) == (0, 0, 0, 0)
    assert outcome.turns == config.processes * config.threads * config.turns
    assert outcome.ok and outcome.percentile(0.99) >= outcome.percentile(0.5) > 0
    assert f"| {backend} | 2 × 2 × 3 | 12 |" in thread_load.render([outcome], "t")


def test_the_checker_counts_lost_duplicated_and_reordered_turns(redis_url: str) -> None:  # noqa: F811
    """A thread written out of order, with a turn twice and one missing, is counted as such by check()."""
    config = thread_load.Config(processes=1, threads=1, turns=3, shared=0)
    yaml_text = thread_load.PIPELINE.format(threads=thread_load.backends("unused", redis_url)["redis"])
    pipeline = Pipeline.from_string(yaml_text, host=thread_load.installed_plugins())
    tid = config.thread_ids(0)[0]
    for i in (1, 0, 0):  # turn 0 after turn 1 (reordered) and twice (duplicated); turn 2 never (lost)
        thread_load.turn(pipeline, tid, f"{tid}/w0/{i}")
    outcome = thread_load.Outcome("redis", config)
    thread_load.check(pipeline, config, outcome)
    assert (outcome.lost, outcome.duplicated) == (1, 1)
    assert outcome.reordered >= 1 and not outcome.ok


def test_render_writes_one_row_per_backend() -> None:
    """The docs table has a numeric row per backend with the counts the run asserts."""
    outcome: Any = thread_load.Outcome("postgres", thread_load.Config.quick(), seconds=2.0, saves_ms=[1.0, 2.0, 3.0])
    outcome.turns = 3
    body = thread_load.render([outcome], "python bench/thread_load.py")
    assert "| postgres | 2 × 2 × 3 | 3 | 2 | 2.0 ms | 3.0 ms | 0 / 0 | 0 / 0 / 0 |" in body
    assert "`python bench/thread_load.py`" in body
