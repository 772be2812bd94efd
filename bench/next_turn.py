"""Time (or profile) next-turn builds of bench/perf.py's pipeline, with and without a collection before each.

Usage: ``.venv/bin/python bench/next_turn.py [--messages 200] [--budget 128000] [--form dict|Message]
[--turns 60] [--profile] [--runtime-context | --preset agent --recall-changes]``, or ``--replay`` for goal 2's replay with each side's tokenization time.

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
``--preset agent --recall-changes`` builds the real ``agent`` preset (its YAML as
ctxcore-providers ships it, in an empty workspace) with a ``memory_recall``
section added to its system part and a real SQLite memory store holding
ctxcore.testing's labelled memories; every build asks another of its questions
(``state["input"]``), so the recalled block before the history changes (other
memories, or none) each turn, and the store's query is part of the time.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import json
import os
import pstats
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import ctxcore_memory.plugin

from ctxcore.pipeline.presets import preset_text
from ctxcore.testing.harness.memory_recall import RECALL_MEMORIES, RECALL_QUERIES

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


def make_agent_pipeline(budget: int, workspace: Path) -> Any:
    """The shipped ``agent`` preset with ``memory_recall`` in its system part and a SQLite store of labelled memories.

    The preset's text is changed only where the bench must: the budget, the
    exact cl100k counter, the ``memory:`` store and one more section.
    """
    text = preset_text("agent")
    marker = "      - {type: memory_file,"
    model = "model: {context_window: 128000}"
    if marker not in text or model not in text:
        raise perf.HarnessError("the agent preset changed: bench/next_turn.py cannot add memory_recall to it")
    text = text.replace(marker, "      - {type: memory_recall}\n" + marker).replace(model, (
        f"model: {{context_window: {budget}}}\ncounter: {{type: tiktoken, encoding: cl100k_base}}\n"
        f"memory: {{type: sqlite, path: {json.dumps(str(workspace / 'memory.db'))}}}"))
    host = perf.fresh_host(
        ("ctxcore-providers", perf.ctxcore_providers.plugin),
        ("ctxcore-filters", perf.ctxcore_filters.plugin),
        ("ctxcore-counters", perf.ctxcore_counters.plugin),
        ("ctxcore-memory", ctxcore_memory.plugin),
    )
    os.environ["CTX_WORKSPACE"] = str(workspace)
    pipeline = perf.Pipeline.from_string(text, file="<bench/next_turn.py: agent preset>", host=host)
    for memory in RECALL_MEMORIES.values():
        pipeline.memory.record(memory)
    pipeline.builder()
    return pipeline


def next_turns(messages: int, budget: int, form: str, turns: int, collect: bool, profile: cProfile.Profile | None = None,
               runtime_context: bool = False, recall: bool = False) -> float:
    """Median seconds of ``turns`` builds, each after the history grew by one user message.

    With ``runtime_context`` each build also has a new current-turn input
    (``state["input"]``); with ``recall`` the pipeline is the agent preset
    (:func:`make_agent_pipeline`) and the input is another labelled question each build.
    """
    with tempfile.TemporaryDirectory(prefix="next-turn-") as workspace:
        pipeline = make_agent_pipeline(budget, Path(workspace)) if recall else make_pipeline(budget, runtime_context)
        return _timed_turns(pipeline, messages, form, turns, collect, profile, runtime_context or recall, recall)


def _timed_turns(pipeline: Any, messages: int, form: str, turns: int, collect: bool, profile: cProfile.Profile | None,
                 current: bool, recall: bool) -> float:
    history = perf.history_of(coding_agent_transcript(messages, seed=0), form)
    state: dict[str, Any] = {"messages": history}
    if current:
        state["input"] = "first question"
    pipeline.build(state)
    times: list[float] = []
    blocks: list[tuple[str, ...]] = []
    for i, d in enumerate(perf.growth(turns, 0)):
        history.append(perf.item_of(d, form, i))
        if current:
            state["input"] = RECALL_QUERIES[i % len(RECALL_QUERIES)][0] if recall else f"question {i}"
        if collect:
            gc.collect()
        if profile is not None:
            profile.enable()
        started = time.perf_counter()
        built = pipeline.build(state)
        times.append(time.perf_counter() - started)
        if profile is not None:
            profile.disable()
        blocks.append(tuple(m.text for m in built.messages if m.metadata.get("context_kind") == "memory_recall"))
    if recall:  # that the part before the history really changed, not only the question
        changed = sum(a != b for a, b in zip(blocks, blocks[1:], strict=False))
        print(f"  the recalled block changed in {changed} of {turns - 1} next builds ({blocks.count(())} builds without one)")
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
    parser.add_argument("--preset", choices=["agent"], help="the shipped preset instead of bench/perf.py's pipeline "
                        "(needs --recall-changes)")
    parser.add_argument("--recall-changes", action="store_true",
                        help="with --preset agent: memory_recall (SQLite) in the system part, another question each build")
    parser.add_argument("--replay", action="store_true", help="goal 2's replay, with each side's tokenization time")
    args = parser.parse_args()
    if (args.preset is None) != (not args.recall_changes):
        parser.error("--preset agent and --recall-changes go together")
    recall = args.recall_changes
    if args.replay:
        replay_shares(perf.Config().replay_turns)
        return
    if args.profile:
        profile = cProfile.Profile()
        next_turns(args.messages, args.budget, args.form, args.turns, False, profile, args.runtime_context, recall)
        stats = pstats.Stats(profile)
        calls = sum(row[1] for row in stats.stats.values())  # type: ignore[attr-defined]
        stats.sort_stats("tottime").print_stats(30)
        print(f"{calls / args.turns:.0f} function calls per build ({calls} in {args.turns} builds; "
              f"{args.messages} messages, budget {args.budget}, {args.form})")
        return
    for collect in (False, True):
        median = next_turns(args.messages, args.budget, args.form, args.turns, collect, runtime_context=args.runtime_context,
                            recall=recall)
        shape = ", agent preset, recall changes" if recall else ", runtime_context" if args.runtime_context else ""
        print(f"{args.messages} messages, budget {args.budget}, {args.form}{shape}, "
              f"{'after gc.collect()' if collect else 'no collection'}: {median * 1e3:.3f} ms (median of {args.turns})")


if __name__ == "__main__":
    main()
