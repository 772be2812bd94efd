"""Quick look at build cost: cold vs next-turn builds at 2,000 and 20,000 messages.

Not the benchmark suite (that is issue 7's ``make bench``); a ratio check run
in one process on the shared coding-agent workload (``bench/workload.py``),
with Message objects constructed outside the timing:
``.venv/bin/python bench/quick_build.py``.
"""

from __future__ import annotations

import statistics
import sys
import time
import tracemalloc
from pathlib import Path

import ctxcore_counters.plugin
import ctxcore_filters.plugin
import ctxcore_providers.plugin

from ctxcore import Pipeline
from ctxcore.model.messages import Message
from ctxcore.testing import fresh_host

sys.path.insert(0, str(Path(__file__).resolve().parent))
from workload import as_messages, coding_agent_transcript  # noqa: E402

PIPELINE = """\
version: 1
model: {context_window: 8000}
counter: {type: tiktoken, encoding: cl100k_base}
providers: [{type: static_prompt, text: You are a coding agent.}, history]
filters: [token_budget]
"""
TURNS = 5  # next-turn builds per size; the median is reported


def pipeline() -> Pipeline:
    host = fresh_host(
        ("ctxcore-providers", ctxcore_providers.plugin),
        ("ctxcore-filters", ctxcore_filters.plugin),
        ("ctxcore-counters", ctxcore_counters.plugin),
    )
    built = Pipeline.from_string(PIPELINE, host=host)
    built.builder()  # load the encoding outside the timing
    return built


def measure(messages: list[Message], n: int) -> tuple[float, float, int]:
    """Cold build of ``n`` messages, median next-turn build, and a next turn's tracemalloc peak (bytes)."""
    p = pipeline()
    while messages[n].role == "tool":  # cut between units, never inside a tool transaction
        n += 1
    state = {"messages": messages[:n]}
    started = time.perf_counter()
    p.build(state)
    cold = time.perf_counter() - started
    turns = []
    at = n
    for _ in range(TURNS):
        at = _grow(state["messages"], messages, at)
        started = time.perf_counter()
        p.build(state)
        turns.append(time.perf_counter() - started)
    _grow(state["messages"], messages, at)
    tracemalloc.start()
    p.build(state)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return cold, statistics.median(turns), peak


def _grow(history: list[Message], messages: list[Message], at: int) -> int:
    """Append the next unit (a message, or a tool call with its results); return where the next one starts."""
    end = at + 1 + len(messages[at].tool_calls)
    history.extend(messages[at:end])
    return end


def main() -> None:
    messages = as_messages(coding_agent_transcript(20_000 + 4 * (TURNS + 1)))
    small, large = measure(messages, 2_000), measure(messages, 20_000)
    print("| messages | cold build ms | next-turn build ms (median) | next-turn peak KB |")
    print("|---:|---:|---:|---:|")
    for n, (cold, warm, peak) in ((2_000, small), (20_000, large)):
        print(f"| {n} | {cold * 1000:.1f} | {warm * 1000:.2f} | {peak / 1024:.0f} |")
    print(f"\nnext-turn 20k / 2k: {large[1] / small[1]:.2f}x; cold / next-turn at 20k: {large[0] / large[1]:.0f}x")


if __name__ == "__main__":
    main()
