"""The per-turn cost of ctxcore-openai-agents' conversion against the ctxcore build it wraps.

Usage: ``.venv-ctxcore-openai-agents/bin/python bench/integration_openai_agents.py [--messages 2000]
[--turns 40] [--budget 8000] [--no-write]`` (``make bench`` runs it in the integration's venv).

Workload: bench/workload.py's coding-agent transcript (2,000 chat messages, tool
calls and results) as the Responses input items the Agents SDK sends: user
messages, assistant output messages (``output_text`` parts, ids, statuses),
``function_call`` and ``function_call_output`` items. Each next turn the runner
hands the filter a fresh list of fresh dicts (it copies every item, as the SDK's
``normalize_input_items_for_api`` does) with one more user message. Timed per
turn, medians over ``--turns`` turns in one run:

- *conversion, warm*: items -> ctxcore messages through the conversion cache,
  plus the window back to Responses items (``ContextFilter`` minus the build);
- *build*: the pipeline's build over those messages (history + token_budget,
  tiktoken cl100k);
- *conversion, cold*: the same with an empty cache (a first call, a restart).

The issue's goal: a warm conversion costs no more than the build.
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from ctxcore_openai_agents import ContextFilter  # noqa: E402
from ctxcore_openai_agents.cache import ConversionCache  # noqa: E402
from report_table import markdown_table, write_section  # noqa: E402
from workload import coding_agent_transcript  # noqa: E402

from ctxcore import Pipeline  # noqa: E402

SECTION = "integration-openai-agents"
DOC = ROOT / "docs" / "performance.md"
INSTRUCTIONS = "You are a coding agent. Read files before changing them."


def responses_items(chat: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The chat transcript as the Responses input items the Agents SDK holds."""
    items: list[dict[str, Any]] = []
    for k, m in enumerate(chat):
        if m["role"] == "user":
            items.append({"role": "user", "content": m["content"]})
        elif m["role"] == "tool":
            items.append({"type": "function_call_output", "call_id": m["tool_call_id"], "output": m["content"]})
        else:
            if m.get("content"):
                items.append({"id": f"msg_{k}", "type": "message", "role": "assistant", "status": "completed",
                              "content": [{"type": "output_text", "text": m["content"], "annotations": [], "logprobs": []}]})
            for c in m.get("tool_calls") or []:
                items.append({"arguments": c["function"]["arguments"], "call_id": c["id"], "name": c["function"]["name"],
                              "type": "function_call", "id": f"fc_{c['id']}", "status": "completed"})
    return items


def make_pipeline(budget: int) -> Pipeline:
    pipeline = Pipeline.from_string(f"""
version: 1
model: {{context_window: {budget + 500}, reserve_output_tokens: 500}}
counter: {{type: tiktoken, encoding: cl100k_base}}
providers: [{{type: history}}]
filters: [{{type: token_budget}}]
""", file="<bench/integration_openai_agents.py>")
    pipeline.builder()
    return pipeline


def run(messages: int, turns: int, budget: int) -> dict[str, Any]:
    """Median seconds per turn of the warm conversion, the build and the cold conversion."""
    chat = coding_agent_transcript(messages, seed=0)
    history = responses_items(chat)
    filt = ContextFilter(make_pipeline(budget), count_tools=False)
    filt.apply(history, INSTRUCTIONS)  # the first call: every item converted, counted
    warm, build, cold, misses = [], [], [], []
    for t in range(turns):
        history = [dict(i) for i in history] + [{"role": "user", "content": f"next request {t}: run the tests"}]
        started = time.perf_counter()
        state, head, spans, listed = filt._prepare(history, INSTRUCTIONS, ())
        prepared = time.perf_counter()
        built = filt.pipeline.build(state)
        built_at = time.perf_counter()
        filt._finish(built, head, spans, listed)
        done = time.perf_counter()
        warm.append((prepared - started) + (done - built_at))
        build.append(built_at - prepared)
        misses.append(filt.cache.last_misses)
        if t < 5:
            cache = ConversionCache()
            started = time.perf_counter()
            cache.convert(history)
            converted = time.perf_counter()
            filt._finish(built, head, spans, listed)
            cold.append(converted - started + (time.perf_counter() - converted))
    return {"items": len(history), "messages": messages, "window": len(built.messages), "warm": statistics.median(warm),
            "build": statistics.median(build), "cold": statistics.median(cold), "misses": max(misses)}


def table(r: dict[str, Any], command: str) -> str:
    ratio = r["warm"] / r["build"]
    rows = [
        ["conversion, warm (cache; the window back to items)", f"{r['warm'] * 1e3:.3f} ms", f"{ratio:.2f}× the build",
         "✅ met" if ratio <= 1 else "❌ not met"],
        ["ctxcore build (history + token_budget)", f"{r['build'] * 1e3:.3f} ms", "—", ""],
        ["conversion, cold (empty cache)", f"{r['cold'] * 1e3:.3f} ms", f"{r['cold'] / r['build']:.2f}× the build", ""],
    ]
    return (f"{r['messages']:,} chat messages of bench/workload.py as {r['items']:,} Responses input items (fresh dicts "
            f"every turn, as the runner sends them), one new user message per turn; window {r['window']} messages; "
            f"at most {r['misses']} conversion(s) per warm turn. Goal: warm conversion <= build.\n\n"
            + markdown_table(["per turn (median)", "time", "vs build", "goal"], rows)
            + f"\n\nMeasured with `{command}`.\n")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument("--budget", type=int, default=8000)
    parser.add_argument("--no-write", action="store_true", help="print only (the suite's smoke test)")
    args = parser.parse_args(argv)
    result = run(args.messages, args.turns, args.budget)
    command = "make bench" if os.environ.get("CTXCORE_BENCH_VIA_MAKE") else shlex.join(
        ["python", "bench/integration_openai_agents.py", *(argv if argv is not None else sys.argv[1:])])
    body = table(result, command)
    print(body)
    if not args.no_write:
        write_section(DOC, SECTION, body)


if __name__ == "__main__":
    main()
