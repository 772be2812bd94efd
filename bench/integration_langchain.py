"""Per-turn cost of ctxcore-langchain's conversion versus the ctxcore build, on a 2,000-message tool-using history.

Usage (in the integration's venv, as ``make bench`` runs it):
``.venv-ctxcore-langchain/bin/python bench/integration_langchain.py [--messages 2000] [--rounds 30] [--no-write]``.

The history is bench/workload.py's coding-agent transcript (tool calls and
results) as LangChain messages. Each round appends one HumanMessage and does
what ContextMiddleware does around a model call: convert the history (the
per-message cache warm: only the new message is converted), build, convert the
window back. "conversion" is the two conversions, "build" the
``pipeline.build``; "cold conversion" converts the whole history with a fresh
cache (the first call of a process). "checkpointed conversion" is the warm
conversion when every turn's history is freshly deserialized (a LangGraph
checkpointer's serializer, ``JsonPlusSerializer``, round-trips it before the
turn, outside the timing): new objects with equal content, built by a
pipeline of its own (one pipeline building two histories in turn would evict
its build memo every turn and slow the build measured). Medians of the
rounds, CPU time (``time.process_time``: the machine may be shared). "checkpointer load" is
what the checkpointer itself spends handing the turn its history (``loads_typed``
of the stored bytes), for scale. The goals are conversion <= build and
checkpointed conversion <= 1.5x build. Writes the ``integration-langchain``
section of docs/performance.md unless ``--no-write``.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import perf  # noqa: E402
from ctxcore_langchain.adapter import _Builder  # noqa: E402
from ctxcore_langchain.cache import ConversionCache  # noqa: E402
from langchain_core.messages import HumanMessage, SystemMessage, convert_to_messages  # noqa: E402
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer  # noqa: E402
from report_table import markdown_table, write_section  # noqa: E402
from workload import coding_agent_transcript  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def measure(messages: int, budget: int, rounds: int) -> dict[str, float]:
    """Median seconds per turn of the warm conversion, the build and a cold conversion."""
    pipeline = perf.make_pipeline(budget)
    history = convert_to_messages(coding_agent_transcript(messages, seed=0))
    extra = [HumanMessage(d["content"], id=f"g{i}") for i, d in enumerate(perf.growth(rounds, 0))]
    system = SystemMessage("You are a careful coding agent.")
    adapter = _Builder(pipeline, state_key="messages", runtime=None, max_threads=1)
    cache = adapter.cache(None)
    adapter.window(cache, pipeline.build(adapter.state(cache, history, system, ())))  # the previous turn
    serde = JsonPlusSerializer()
    # its own pipeline: the two threads sharing one would evict each other's build memo every turn
    rpipeline = perf.make_pipeline(budget)
    reloaded = _Builder(rpipeline, state_key="messages", runtime=None, max_threads=1)
    rcache = reloaded.cache(None)
    reloaded.window(rcache, rpipeline.build(reloaded.state(rcache, history, system, ())))
    warm, build, cold, checkpointed, load = [], [], [], [], []
    clock = time.process_time
    for message in extra:
        history = [*history, message]  # LangGraph's reducer hands a new list with the same message objects
        gc.collect()
        started = clock()
        state = adapter.state(cache, history, system, ())
        converted = clock()
        built = pipeline.build(state)
        done = clock()
        window = adapter.window(cache, built)
        back = clock()
        warm.append((converted - started) + (back - done))
        build.append(done - converted)
        fresh = ConversionCache()
        started = clock()
        fresh.convert(history)
        fresh.to_langchain(built.messages)
        cold.append(clock() - started)
        if len(window) != len(built.messages):
            raise perf.HarnessError("the window back has another length than the build")
        stored = serde.dumps_typed(history)
        started = clock()
        loaded = serde.loads_typed(stored)  # what a checkpointer hands the next turn
        load.append(clock() - started)
        gc.collect()
        started = clock()
        state = reloaded.state(rcache, loaded, system, ())
        converted = clock()
        again = rpipeline.build(state)
        done = clock()
        reloaded.window(rcache, again)
        checkpointed.append((converted - started) + (clock() - done))
    if rcache.conversions != len(history):
        raise perf.HarnessError(f"the reloaded history was converted again ({rcache.conversions} conversions)")
    return {"warm": statistics.median(warm), "build": statistics.median(build), "cold": statistics.median(cold),
            "checkpointed": statistics.median(checkpointed), "load": statistics.median(load),
            "window": len(built.messages)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--no-write", action="store_true", help="print only; leave docs/performance.md alone")
    args = parser.parse_args()
    rows = []
    for budget in (8_000, 128_000):
        r = measure(args.messages, budget, args.rounds)
        rows.append([f"{budget:,}", r["window"], f"{r['warm'] * 1e3:.2f}", f"{r['build'] * 1e3:.2f}",
                     f"{r['warm'] / r['build']:.2f}", f"{r['checkpointed'] * 1e3:.2f}",
                     f"{r['checkpointed'] / r['build']:.2f}", f"{r['load'] * 1e3:.1f}",
                     f"{r['checkpointed'] / r['load']:.1%}", f"{r['cold'] * 1e3:.1f}",
                     "yes" if r["warm"] <= r["build"] else "no",
                     "yes" if r["checkpointed"] <= 1.5 * r["build"] else "no"])
    table = markdown_table(["budget (tokens)", "window (messages)", "conversion ms/turn", "build ms/turn",
                            "conversion / build", "checkpointed conversion ms/turn", "checkpointed / build",
                            "checkpointer load ms/turn", "checkpointed / load", "cold conversion ms", "conversion <= build", "checkpointed <= 1.5x build"], rows)
    body = (f"{args.messages:,}-message tool-using history (bench/workload.py) as LangChain messages, one "
            f"HumanMessage appended per turn, medians of {args.rounds} turns, CPU time; conversion = history to ctxcore "
            "with the cache warm plus the window back, as `ContextMiddleware` does it; checkpointed = the same when "
            "every turn's history is freshly deserialized by LangGraph's `JsonPlusSerializer` (a checkpointer); checkpointer load = its `loads_typed` of the "
            "stored history, which the thread pays every turn anyway.\n"
            "`.venv-ctxcore-langchain/bin/python bench/integration_langchain.py`\n\n" + table)
    print(body)
    if not args.no_write:
        write_section(ROOT / "docs" / "performance.md", "integration-langchain", body)


if __name__ == "__main__":
    main()
