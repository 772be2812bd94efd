"""ctxcore-pydantic-ai: what converting a pydantic-ai history costs per turn, against the ctxcore build.

A tool-using history of ``--size`` pydantic-ai messages (default 2,000: user
prompt, a response calling a tool, the tool's return, the answer, repeated).
Each measured turn appends one user prompt and runs the adapter the way a
model call does: convert the history (the conversion cache warm from the
turn before), build with the pipeline, turn the window back into pydantic-ai
messages. Reported: medians of ``--turns`` turns in one run, and a cold
conversion (empty cache). Times are the process's CPU time
(``time.process_time``), so other work on a shared machine does not land in them. The issue's goal: conversion <= build.

Run by ``make bench`` in the integration's venv; writes its table into
docs/performance.md (section ``integration-pydantic-ai``) unless ``--no-write``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from ctxcore_pydantic_ai import ContextProcessor, to_pydantic_ai
from ctxcore_pydantic_ai.cache import ConversionCache
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from ctxcore import Pipeline

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from report_table import markdown_table, write_section  # noqa: E402

PIPELINE = """
version: 1
model: {context_window: 128000, reserve_output_tokens: 4096}
counter: {type: tiktoken, encoding: o200k_base}
providers:
  - {type: history}
filters:
  - {type: token_budget}
"""


def history(size: int) -> list[ModelMessage]:
    """``size`` pydantic-ai messages of a tool-using conversation."""
    out: list[ModelMessage] = [ModelRequest(parts=[SystemPromptPart("You are a research agent."), UserPromptPart("Start.")])]
    i = 0
    while len(out) < size:
        call = f"call_{i}"
        out.append(ModelResponse(parts=[TextPart(f"Checking item {i}."), ToolCallPart("lookup", {"item": i}, call)]))
        out.append(ModelRequest(parts=[ToolReturnPart("lookup", f"item {i}: " + "value " * 20, call)]))
        out.append(ModelResponse(parts=[TextPart(f"Item {i} is fine.")]))
        out.append(ModelRequest(parts=[UserPromptPart(f"And item {i + 1}?")]))
        i += 1
    return out[:size - 1] + [ModelRequest(parts=[UserPromptPart("Next?")])] if isinstance(out[size - 1], ModelResponse) else out[:size]


def measure(size: int, turns: int) -> dict[str, float]:
    """Median milliseconds per turn: conversion (in and out), build, and a cold conversion."""
    processor = ContextProcessor(Pipeline.from_string(PIPELINE))
    messages = history(size)
    processor.build(None, messages)  # warms the cache, the count cache and the history provider
    convert_in, convert_out, build, total = [], [], [], []
    for turn in range(turns):
        messages = [*messages, ModelResponse(parts=[TextPart(f"Answer {turn}.")]),
                    ModelRequest(parts=[UserPromptPart(f"Follow-up {turn}.")])]
        t0 = time.process_time()
        state, runtime = processor.prepare(None, messages)
        t1 = time.process_time()
        built = processor.pipeline.build(state, runtime)
        t2 = time.process_time()
        processor.finish(None, built)
        t3 = time.process_time()
        convert_in.append(t1 - t0)
        build.append(t2 - t1)
        convert_out.append(t3 - t2)
        total.append((t1 - t0) + (t3 - t2))
    window = [m for m in built.messages]
    cold = []
    for _ in range(max(3, turns // 3)):
        t0 = time.process_time()
        ConversionCache().convert(messages)
        to_pydantic_ai(window, merge=True)
        cold.append(time.process_time() - t0)
    ms = 1000.0
    return {
        "ctx_messages": len(state["messages"]),
        "window": len(built.messages),
        "convert_in": statistics.median(convert_in) * ms,
        "convert_out": statistics.median(convert_out) * ms,
        "conversion": statistics.median(total) * ms,
        "build": statistics.median(build) * ms,
        "cold": statistics.median(cold) * ms,
    }


def table(size: int, turns: int, r: dict[str, float]) -> str:
    rows = [
        ["history in (warm cache: only the new messages converted)", f"{r['convert_in']:.2f}"],
        ["window out (to_pydantic_ai, adjacent requests merged)", f"{r['convert_out']:.2f}"],
        ["**conversion per turn** (in + out)", f"**{r['conversion']:.2f}**"],
        ["ctxcore build (next turn)", f"{r['build']:.2f}"],
        ["cold conversion (empty cache, in + out)", f"{r['cold']:.2f}"],
    ]
    verdict = "meets" if r["conversion"] <= r["build"] else "misses"
    return (
        f"{size:,} pydantic-ai messages ({r['ctx_messages']:,} ctxcore messages, window "
        f"{r['window']:,}), medians of {turns} turns, CPU ms; conversion / build = "
        f"{r['conversion'] / r['build']:.2f} ({verdict} the goal conversion <= build). "
        f"`python bench/integration_pydantic_ai.py` in `.venv-ctxcore-pydantic-ai`.\n\n"
        + markdown_table(["step", "ms"], rows)
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=2000, help="pydantic-ai messages in the history (2000)")
    parser.add_argument("--turns", type=int, default=31, help="measured turns (31)")
    parser.add_argument("--no-write", action="store_true", help="print the table only")
    args = parser.parse_args(argv)
    result = measure(args.size, args.turns)
    body = table(args.size, args.turns, result)
    print(body)
    if not args.no_write:
        write_section(ROOT / "docs" / "performance.md", "integration-pydantic-ai", body)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
