"""ctxcore-pydantic-ai: what converting a pydantic-ai history costs per turn, against the ctxcore build.

A tool-using history of ``--size`` pydantic-ai messages (default 2,000: user
prompt, a response calling a tool, the tool's return, the answer, repeated).
Each measured turn appends an answer and a user prompt and runs the adapter the
way a model call does: convert the history (the conversion cache warm from the
turn before), build with the pipeline, turn the window back into pydantic-ai
messages. Two cases: the same message objects handed back, and the history
loaded from JSON every turn (``ModelMessagesTypeAdapter``: new objects equal by
value, as a user persisting history gets; the loading is not timed).
Reported: medians of ``--turns`` turns in one run, and a cold conversion
(empty cache). Times are the process's CPU time (``time.process_time``), so
other work on a shared machine does not land in them. Goals: conversion <=
build with the same objects, <= 1.5x the build for a history loaded again.

Run by ``make bench`` in the integration's venv; writes its table into
docs/performance.md (section ``integration-pydantic-ai``) unless ``--no-write``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ctxcore_pydantic_ai import ContextProcessor, to_pydantic_ai
from ctxcore_pydantic_ai.cache import ConversionCache
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
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


def _turns(processor: ContextProcessor, histories: Iterator[list[ModelMessage]]) -> dict[str, Any]:
    """Median milliseconds of conversion in, build and conversion out over the turns ``histories`` gives."""
    convert_in, convert_out, build, total = [], [], [], []
    state: dict[str, Any] = {}
    for messages in histories:
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
    ms = 1000.0
    cache = processor.cache_for(None)
    return {"ctx_messages": len(state["messages"]), "window": len(built.messages), "way": cache.way,
            "misses": cache.misses, "convert_in": statistics.median(convert_in) * ms,
            "convert_out": statistics.median(convert_out) * ms, "conversion": statistics.median(total) * ms,
            "build": statistics.median(build) * ms, "ratio": statistics.median(total) / statistics.median(build)}


def _appended(messages: list[ModelMessage], turn: int) -> list[ModelMessage]:
    return [*messages, ModelResponse(parts=[TextPart(f"Answer {turn}.")]),
            ModelRequest(parts=[UserPromptPart(f"Follow-up {turn}.")])]


def measure(size: int, turns: int) -> dict[str, Any]:
    """Both cases (the same objects handed back; a history loaded from JSON every turn) and a cold conversion."""
    processor = ContextProcessor(Pipeline.from_string(PIPELINE))
    start = history(size)
    processor.build(None, start)  # warms the cache, the count cache and the history provider

    def same_objects() -> Iterator[list[ModelMessage]]:
        messages = start
        for turn in range(turns):
            messages = _appended(messages, turn)
            yield messages

    warm = _turns(processor, same_objects())
    loaded = ContextProcessor(Pipeline.from_string(PIPELINE))
    stored = ModelMessagesTypeAdapter.dump_json(start)
    loaded.build(None, ModelMessagesTypeAdapter.validate_json(stored))

    loading: list[float] = []

    def deserialized() -> Iterator[list[ModelMessage]]:
        nonlocal stored
        for turn in range(turns):  # as a user persisting history does: load, append, run, store
            t0 = time.process_time()
            messages = ModelMessagesTypeAdapter.validate_json(stored)
            loading.append(time.process_time() - t0)
            messages = _appended(messages, turn)
            yield messages
            stored = ModelMessagesTypeAdapter.dump_json(messages)

    reloaded = _turns(loaded, deserialized())
    reloaded["loading"] = statistics.median(loading) * 1000.0
    messages = ModelMessagesTypeAdapter.validate_json(stored)
    processor.build(None, messages)
    built = processor.last_built
    assert built is not None
    cold = []
    for _ in range(max(3, turns // 3)):
        t0 = time.process_time()
        ConversionCache().convert(messages)
        to_pydantic_ai(built.messages, merge=True)
        cold.append(time.process_time() - t0)
    return {"warm": warm, "reloaded": reloaded, "cold": statistics.median(cold) * 1000.0}


def table(size: int, turns: int, r: dict[str, Any]) -> str:
    warm, loaded = r["warm"], r["reloaded"]
    rows = [
        ["history in (only the new messages converted)", f"{warm['convert_in']:.2f}",
         f"{loaded['convert_in']:.2f}"],
        ["window out (to_pydantic_ai, adjacent requests merged)", f"{warm['convert_out']:.2f}", f"{loaded['convert_out']:.2f}"],
        ["**conversion per turn** (in + out)", f"**{warm['conversion']:.2f}**", f"**{loaded['conversion']:.2f}**"],
        ["ctxcore build (next turn)", f"{warm['build']:.2f}", f"{loaded['build']:.2f}"],
        ["conversion / build", f"{warm['ratio']:.2f}", f"{loaded['ratio']:.2f}"],
        ["messages converted in the last turn (cache way)", f"{warm['misses']} ({warm['way']})",
         f"{loaded['misses']} ({loaded['way']})"],
        ["for comparison: loading the history from JSON (the user's own step)", "—", f"{loaded['loading']:.2f}"],
    ]
    return (
        f"{size:,} pydantic-ai messages ({warm['ctx_messages']:,} ctxcore messages, window "
        f"{warm['window']:,}), medians of {turns} turns, CPU ms. Two cases: the same message objects handed "
        f"back (an agent run, or `result.all_messages()` passed on), and a history **loaded from JSON every turn** "
        f"(`ModelMessagesTypeAdapter.validate_json`, new objects equal by value; the loading itself is not in the conversion). "
        f"Goals: conversion <= build (same objects: {warm['ratio']:.2f}, "
        f"{'met' if warm['ratio'] <= 1 else 'missed'}); conversion <= 1.5x build (loaded: {loaded['ratio']:.2f}, "
        f"{'met' if loaded['ratio'] <= 1.5 else 'missed'}). Cold conversion (empty cache, in + out): "
        f"{r['cold']:.1f} ms. `python bench/integration_pydantic_ai.py` in `.venv-ctxcore-pydantic-ai`.\n\n"
        + markdown_table(["step (ms)", "same objects", "loaded from JSON"], rows)
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
