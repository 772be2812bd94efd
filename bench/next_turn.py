"""Time (or profile) next-turn builds of bench/perf.py's pipeline, with and without a collection before each.

Usage: ``.venv/bin/python bench/next_turn.py [--messages 200] [--budget 128000] [--form dict|Message]
[--turns 60] [--profile] [--runtime-context]``, or ``--replay`` for goal 2's replay with each side's tokenization time.

The goals table (bench/perf.py) times each build after ``gc.collect()``, so
every build there runs with cold CPU caches; this script shows both figures
for one cell (the "where the time goes" text of docs/performance.md quotes
them), and with ``--profile`` prints cProfile's top functions of the builds and the function calls per build.
``--replay`` runs bench/perf.py's replay with both sides' encoder calls timed
(the same loaded cl100k encoding): how much of each side's total is the
tokenization of each new message, which both must do once.
``--runtime-context`` adds the ``agent`` preset's provider after the history
(``runtime_context``: a new current-turn message every build), the shape most
users run: the chain then no longer ends in the history.
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
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import perf  # noqa: E402
from workload import coding_agent_transcript  # noqa: E402


def make_pipeline(budget: int, runtime_context: bool) -> Any:
    """bench/perf.py's pipeline, with ``runtime_context`` after the history when asked."""
    if not runtime_context:
        return perf.make_pipeline(budget)
    yaml = perf.pipeline_yaml(budget).replace(", history]", ", history, runtime_context]")
    host = perf.fresh_host(
        ("ctxcore-providers", perf.ctxcore_providers.plugin),
        ("ctxcore-filters", perf.ctxcore_filters.plugin),
        ("ctxcore-counters", perf.ctxcore_counters.plugin),
    )
    pipeline = perf.Pipeline.from_string(yaml, file="<bench/next_turn.py>", host=host)
    pipeline.builder()
    return pipeline


def next_turns(messages: int, budget: int, form: str, turns: int, collect: bool, profile: cProfile.Profile | None = None,
               runtime_context: bool = False) -> float:
    """Median seconds of ``turns`` builds, each after the history grew by one user message.

    With ``runtime_context`` each build also has a new current-turn input (``state["input"]``).
    """
    pipeline = make_pipeline(budget, runtime_context)
    history = perf.history_of(coding_agent_transcript(messages, seed=0), form)
    state: dict[str, Any] = {"messages": history}
    if runtime_context:
        state["input"] = "first question"
    pipeline.build(state)
    times = []
    for i, d in enumerate(perf.growth(turns, 0)):
        history.append(perf.item_of(d, form, i))
        if runtime_context:
            state["input"] = f"question {i}"
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


def replay_shares(turns: int) -> None:
    """Goal 2's replay (perf.replay) beside the time of tokenizing every message of it once.

    Both sides must tokenize each new message once with the same encoder; the
    replay's texts are encoded once more, alone, to give that shared floor
    (timing each encoder call inside the replay would add a wrapper per call).
    """
    dicts = coding_agent_transcript(max(4 * turns, 200), seed=0)
    encoding = perf.encoding_of(perf.make_pipeline(8_000).builder().counter)
    rep = perf.replay(dicts, turns, perf.Config().replay_budget, encoding)
    floor = rep["shared_tokenization_s"]
    for side, key in (("ctxcore", "ctxcore_s"), ("LangChain", "langchain_s")):
        print(f"{side}: {rep[key]:.3f} s in {turns} builds; tokenizing the {rep['final_messages']:,} messages once "
              f"takes {floor:.3f} s ({floor / rep[key]:.0%} of it); the rest {rep[key] - floor:.3f} s")
    print(f"ratio LangChain / ctxcore {rep['langchain_s'] / rep['ctxcore_s']:.2f}x; "
          f"without the shared tokenization {(rep['langchain_s'] - floor) / (rep['ctxcore_s'] - floor):.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=200)
    parser.add_argument("--budget", type=int, default=128_000)
    parser.add_argument("--form", choices=perf.FORMS, default="dict")
    parser.add_argument("--turns", type=int, default=60)
    parser.add_argument("--profile", action="store_true", help="print cProfile's top 30 functions and the function calls per build (no collection)")
    parser.add_argument("--runtime-context", action="store_true",
                        help="the agent preset's runtime_context provider after the history")
    parser.add_argument("--replay", action="store_true", help="goal 2's replay, with each side's tokenization time")
    args = parser.parse_args()
    if args.replay:
        replay_shares(perf.Config().replay_turns)
        return
    if args.profile:
        profile = cProfile.Profile()
        next_turns(args.messages, args.budget, args.form, args.turns, False, profile, args.runtime_context)
        stats = pstats.Stats(profile)
        calls = sum(row[1] for row in stats.stats.values())  # type: ignore[attr-defined]
        stats.sort_stats("tottime").print_stats(30)
        print(f"{calls / args.turns:.0f} function calls per build ({calls} in {args.turns} builds; "
              f"{args.messages} messages, budget {args.budget}, {args.form})")
        return
    for collect in (False, True):
        median = next_turns(args.messages, args.budget, args.form, args.turns, collect, runtime_context=args.runtime_context)
        print(f"{args.messages} messages, budget {args.budget}, {args.form}{', runtime_context' if args.runtime_context else ''}, "
              f"{'after gc.collect()' if collect else 'no collection'}: {median * 1e3:.3f} ms (median of {args.turns})")


if __name__ == "__main__":
    main()
