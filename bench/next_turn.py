"""Time (or profile) next-turn builds of bench/perf.py's pipeline, with and without a collection before each.

Usage: ``.venv/bin/python bench/next_turn.py [--messages 200] [--budget 128000] [--form dict|Message]
[--turns 60] [--profile]``.

The goals table (bench/perf.py) times each build after ``gc.collect()``, so
every build there runs with cold CPU caches; this script shows both figures
for one cell (the "where the time goes" text of docs/performance.md quotes
them), and with ``--profile`` prints cProfile's top functions of the builds.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import pstats
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import perf  # noqa: E402
from workload import coding_agent_transcript  # noqa: E402


def next_turns(messages: int, budget: int, form: str, turns: int, collect: bool, profile: cProfile.Profile | None = None) -> float:
    """Median seconds of ``turns`` builds, each after the history grew by one user message."""
    pipeline = perf.make_pipeline(budget)
    history = perf.history_of(coding_agent_transcript(messages, seed=0), form)
    state = {"messages": history}
    pipeline.build(state)
    times = []
    for i, d in enumerate(perf.growth(turns, 0)):
        history.append(perf.item_of(d, form, i))
        if collect:
            gc.collect()
        if profile is not None:
            profile.enable()
        started = time.perf_counter()
        pipeline.build(state)
        times.append(time.perf_counter() - started)
        if profile is not None:
            profile.disable()
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=200)
    parser.add_argument("--budget", type=int, default=128_000)
    parser.add_argument("--form", choices=perf.FORMS, default="dict")
    parser.add_argument("--turns", type=int, default=60)
    parser.add_argument("--profile", action="store_true", help="print cProfile's top 30 functions (no collection)")
    args = parser.parse_args()
    if args.profile:
        profile = cProfile.Profile()
        next_turns(args.messages, args.budget, args.form, args.turns, False, profile)
        pstats.Stats(profile).sort_stats("tottime").print_stats(30)
        return
    for collect in (False, True):
        median = next_turns(args.messages, args.budget, args.form, args.turns, collect)
        print(f"{args.messages} messages, budget {args.budget}, {args.form}, "
              f"{'after gc.collect()' if collect else 'no collection'}: {median * 1e3:.3f} ms (median of {args.turns})")


if __name__ == "__main__":
    main()
