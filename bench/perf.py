"""The performance guard: ctxcore's build against LangChain's ``trim_messages``, on OpenAI dicts.

Usage: ``make bench`` (or ``.venv/bin/python bench/perf.py [--quick] [--doc PATH] [--json PATH] [--no-write]``).

One process run on :func:`workload.coding_agent_transcript` (a coding agent's
session as OpenAI chat dicts), every side counting with the same loaded
tiktoken cl100k_base encoding:

- **ctxcore**: the pipeline static system prompt + ``history`` + ``token_budget``,
  fed the list of dicts an agent holds. A *next turn* is a build after the same
  list grew by one user message; a *cold* build uses a fresh pipeline and fresh
  dict copies (nothing converted, counted or cached).
- **LangChain** ``trim_messages(strategy="last", include_system=True,
  start_on="human")`` with a per-message memoized counter
  (:class:`langchain_side.MemoizedCl100kCounter`: what a careful user writes);
  its cold call starts with a fresh memo.

The guard rows (:data:`GUARDS`) bound ratios, never absolute times: the next
turn at the largest size at least 5x LangChain's, at the middle size 1.5x, at
the smallest no worse than 0.7x; a cold build of the largest history 30x; the
next turn's tracemalloc peak at most 1 MB; the next turn at the largest size at
most 2x the one at the smallest. Each row takes the worse of the two budgets
(a short and a long window), so a guard holds for both.

Before any number counts, every window is checked: the system prompt first,
then a user message, no tool call split from its results, within the budget by
an *independent* count (LangChain's exact counter on the window converted to
LangChain messages), and ctxcore's window within :data:`WINDOW_SLACK` messages
of LangChain's. A failed check exits 2 and writes nothing; a failed guard row
writes the table and exits 1. Times are medians of CPU time
(``time.process_time``: the machine is shared and wall time swings with its
load), each run after ``gc.collect()`` so no earlier garbage is paid for. The Markdown goes
between the ``bench:perf`` markers of docs/performance.md, the raw numbers to
bench/results/perf.json; ``--quick`` (the smoke mode of tests/test_bench_smoke.py)
runs every path at small sizes, writes nothing unless given paths and judges no
guard, since its sizes are not the guard's.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))

import ctxcore_counters.plugin  # noqa: E402
import ctxcore_filters.plugin  # noqa: E402
import ctxcore_providers.plugin  # noqa: E402
from bench_rows import report_row  # noqa: E402
from ctxcore_counters.tiktoken_counter import TiktokenCounter  # noqa: E402
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage, trim_messages  # noqa: E402
from langchain_side import ExactCl100kCounter, MemoizedCl100kCounter, to_langchain  # noqa: E402
from report_table import markdown_table, write_section  # noqa: E402
from workload import coding_agent_transcript  # noqa: E402

from ctxcore import CachedCounter, Pipeline  # noqa: E402
from ctxcore.engine.builder import BuiltContext  # noqa: E402
from ctxcore.errors import InvalidHistory  # noqa: E402
from ctxcore.model.messages import Message  # noqa: E402
from ctxcore.model.transactions import check_tool_pairing  # noqa: E402
from ctxcore.testing import fresh_host  # noqa: E402

__all__ = ["Config", "Guard", "Results", "run", "render", "main", "SYSTEM_PROMPT", "SECTION", "GUARDS"]

SECTION = "perf"
DOC = ROOT / "docs" / "performance.md"
JSON_OUT = BENCH / "results" / "perf.json"
MEMORY_LIMIT = 1_000_000  # bytes: the next turn's peak bound
WINDOW_SLACK = 12  # messages: "the same window within a few messages"
SYSTEM_PROMPT = (
    "You are a careful coding agent working in a Python repository. Read files before changing them, "
    "run the tests after every change, explain what you did and why in a few sentences, and never "
    "invent file contents or test results: call a tool when you need to know something."
)

#: The guard's bounds: (key, operator, bound). Ratios are LangChain / ctxcore unless the row says otherwise.
GUARDS: dict[str, tuple[str, float]] = {
    "next_big": (">=", 5.0),
    "next_middle": (">=", 1.5),
    "next_small": (">=", 0.7),
    "cold_big": (">=", 30.0),
    "peak_big": ("<=", 1.0),
    "flat": ("<=", 2.0),
}


class HarnessError(RuntimeError):
    """The sides did not produce comparable, valid outputs: the numbers would mean nothing."""


@dataclass(frozen=True)
class Config:
    """Sizes and repetitions of one run; ``sizes`` are (smallest, middle, largest)."""

    sizes: tuple[int, int, int] = (200, 2_000, 20_000)
    budgets: tuple[int, ...] = (8_000, 128_000)
    seed: int = 0
    reps: int = 15  # next-turn builds (and LangChain calls) per cell
    cold_reps: int = 5
    judged: bool = True  # False at smoke sizes: the bounds are the guard's only at the guard's sizes

    @classmethod
    def quick(cls) -> Config:
        """The smoke sizes: every code path once, in seconds."""
        return cls(sizes=(60, 120, 300), budgets=(8_000, 20_000), reps=1, cold_reps=1, judged=False)


@dataclass
class Guard:
    """One row of the guard table: both measured values, their ratio and whether the bound holds."""

    key: str
    name: str
    ctxcore: float
    reference: float
    reference_name: str
    unit: str  # "s" or "bytes"
    ratio: float
    ratio_meaning: str
    op: str  # ">=" or "<="
    bound: float
    met: bool


@dataclass
class Results:
    """Everything one run measured; ``outputs`` (not serialised) holds the last built window."""

    command: str
    config: dict[str, Any]
    machine: dict[str, Any]
    guards: list[Guard]
    cells: list[dict[str, Any]]
    outputs: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def failed(self) -> list[Guard]:
        """The guard rows whose bound does not hold."""
        return [g for g in self.guards if not g.met]

    def to_json(self) -> dict[str, Any]:
        """The raw results as written to bench/results/perf.json."""
        return {"command": self.command, "config": self.config, "machine": self.machine,
                "guards": [asdict(g) for g in self.guards], "cells": self.cells}


def guard(key: str, name: str, ours: float, ref: float, ref_name: str, unit: str, ratio: float, meaning: str) -> Guard:
    """A guard row for ``key`` of :data:`GUARDS`, judged against its bound."""
    op, bound = GUARDS[key]
    met = ratio >= bound if op == ">=" else ratio <= bound
    return Guard(key, name, ours, ref, ref_name, unit, ratio, meaning, op, bound, met)


# ----------------------------------------------------------------- ctxcore


def pipeline_yaml(budget: int) -> str:
    """The ctxcore pipeline under test: static system prompt, history, token_budget, exact cl100k."""
    return (
        "version: 1\n"
        f"model: {{context_window: {budget}}}\n"
        "counter: {type: tiktoken, encoding: cl100k_base}\n"
        f"providers: [{{type: static_prompt, text: {json.dumps(SYSTEM_PROMPT)}}}, history]\n"
        "filters: [token_budget]\n"
    )


def make_pipeline(budget: int) -> Pipeline:
    """A compiled pipeline on a fresh plugin host; the encoding is loaded here, outside any timing."""
    host = fresh_host(
        ("ctxcore-providers", ctxcore_providers.plugin),
        ("ctxcore-filters", ctxcore_filters.plugin),
        ("ctxcore-counters", ctxcore_counters.plugin),
    )
    pipeline = Pipeline.from_string(pipeline_yaml(budget), file="<bench/perf.py>", host=host)
    pipeline.builder()
    if pipeline.budget.max_input_tokens != budget:
        raise HarnessError(f"the pipeline's input budget is {pipeline.budget.max_input_tokens}, expected {budget}")
    return pipeline


def growth(count: int, seed: int) -> list[dict[str, Any]]:
    """``count`` user requests (from another transcript) that grow a history by one message each.

    A user message keeps any history legal, so every next-turn build is a valid request.
    """
    pool = [d for d in coding_agent_transcript(max(40, count * 12), seed=seed + 1) if d["role"] == "user"]
    if len(pool) < count:
        raise HarnessError(f"only {len(pool)} user messages for {count} growth steps")
    return [{"role": "user", "content": f"{d['content']} (turn {i})"} for i, d in enumerate(pool[:count])]


def encoding_of(counter: CachedCounter) -> Any:
    """The loaded tiktoken encoding behind a builder's counter (shared with LangChain's side)."""
    inner = counter.counter
    if not isinstance(inner, TiktokenCounter):
        raise HarnessError(f"the pipeline counts with {type(inner).__name__}, not the tiktoken counter")
    return inner._encoding


def _timed(call: Callable[..., Any], *args: Any) -> tuple[float, Any]:
    """CPU time of ``call(*args)`` after a collection (so no earlier garbage is paid for), and its result."""
    gc.collect()
    started = time.process_time()
    out = call(*args)
    return time.process_time() - started, out


def ctxcore_next_turn(dicts: list[dict[str, Any]], extra: list[dict[str, Any]], budget: int) -> tuple[list[float], BuiltContext, Pipeline, list[dict[str, Any]]]:
    """Times of builds that each follow a build of the same list minus its newest dict."""
    pipeline = make_pipeline(budget)
    history = [dict(d) for d in dicts]
    state = {"messages": history}
    built = pipeline.build(state)  # the previous turn's build
    times = []
    for d in extra:
        history.append(dict(d))
        elapsed, built = _timed(pipeline.build, state)
        times.append(elapsed)
    return times, built, pipeline, history


def ctxcore_cold(dicts: list[dict[str, Any]], reps: int, budget: int) -> list[float]:
    """Times of first builds: a fresh pipeline and fresh dict copies each time."""
    times = []
    for _ in range(reps):
        pipeline = make_pipeline(budget)
        state = {"messages": [dict(d) for d in dicts]}
        elapsed, _built = _timed(pipeline.build, state)
        times.append(elapsed)
    return times


def memory_peak(pipeline: Pipeline, history: list[dict[str, Any]], item: dict[str, Any]) -> int:
    """tracemalloc peak (bytes) of one next-turn build: the history grows by ``item``."""
    history.append(dict(item))
    state = {"messages": history}
    gc.collect()
    tracemalloc.start()
    try:
        pipeline.build(state)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


# ----------------------------------------------------------------- LangChain


def trim(history: list[BaseMessage], budget: int, counter: Any) -> list[BaseMessage]:
    """LangChain's sliding window: the newest messages that fit, the system prompt kept, starting on a human."""
    return trim_messages(history, strategy="last", include_system=True, start_on="human", max_tokens=budget,
                         token_counter=counter)


def langchain_next_turn(dicts: list[dict[str, Any]], extra: list[dict[str, Any]], budget: int, counter: Any) -> tuple[list[float], list[BaseMessage]]:
    """Times of ``trim_messages`` calls after one call on the history minus its newest message (the memo warm)."""
    history = to_langchain(dicts, SYSTEM_PROMPT)
    kept = trim(history, budget, counter)
    times: list[float] = []
    for message in to_langchain(extra):
        history.append(message)
        elapsed, kept = _timed(trim, history, budget, counter)
        times.append(elapsed)
    return times, kept


def langchain_cold(dicts: list[dict[str, Any]], reps: int, budget: int, encoding: Any) -> list[float]:
    """Times of first ``trim_messages`` calls, each with a fresh memo (the messages are built before the timing)."""
    times = []
    for _ in range(reps):
        history = to_langchain(dicts, SYSTEM_PROMPT)
        elapsed, _kept = _timed(trim, history, budget, MemoizedCl100kCounter(encoding))
        times.append(elapsed)
    return times


# ----------------------------------------------------------------- fairness checks


def independent_count(messages: Sequence[Message], encoding: Any) -> int:
    """Tokens of a ctxcore window by LangChain's exact counter (not ctxcore's): the fairness count."""
    return ExactCl100kCounter(encoding)(to_langchain([m.to_openai() for m in messages]))


def check_ctxcore_output(built: BuiltContext, encoding: Any, budget: int) -> dict[str, Any]:
    """Within budget by the independent count, system prompt first, then a user message, no split tool call."""
    messages = list(built.messages)
    tokens = independent_count(messages, encoding)
    if tokens > budget:
        raise HarnessError(f"ctxcore output is {tokens} tokens, over the {budget}-token budget")
    if not messages or messages[0].role != "system" or messages[0].text != SYSTEM_PROMPT:
        raise HarnessError("ctxcore output does not start with the system prompt")
    rest = [m for m in messages if m.role != "system"]
    if not rest or rest[0].role != "user":
        raise HarnessError(f"ctxcore output starts on {rest[0].role if rest else 'nothing'} after the system messages, not user")
    try:
        check_tool_pairing(messages)
    except InvalidHistory as exc:
        raise HarnessError(f"ctxcore output splits a tool call from its results: {exc}") from exc
    return {"tokens": tokens, "messages": len(messages)}


def check_langchain_output(kept: list[BaseMessage], encoding: Any, budget: int) -> dict[str, Any]:
    """Within budget by the exact count, the system prompt first, then a human message."""
    tokens = ExactCl100kCounter(encoding)(kept)
    if tokens > budget:
        raise HarnessError(f"LangChain output is {tokens} tokens, over the {budget}-token budget")
    if len(kept) < 2 or not isinstance(kept[0], SystemMessage) or kept[0].content != SYSTEM_PROMPT:
        raise HarnessError("LangChain output does not start with the system prompt")
    if not isinstance(kept[1], HumanMessage):
        raise HarnessError(f"LangChain output starts on {kept[1].type} after the system prompt, not human")
    return {"tokens": tokens, "messages": len(kept)}


def check_same_window(ours: dict[str, Any], theirs: dict[str, Any], where: str) -> None:
    """ctxcore's window is within :data:`WINDOW_SLACK` messages of LangChain's, else the times are not comparable."""
    if abs(ours["messages"] - theirs["messages"]) > WINDOW_SLACK:
        raise HarnessError(f"{where}: ctxcore keeps {ours['messages']} messages, LangChain {theirs['messages']}: "
                           "the windows are not comparable")


# ----------------------------------------------------------------- run


def machine_info() -> dict[str, Any]:
    """Where the numbers come from (absolute times only mean something on this machine)."""
    cpu = platform.processor() or platform.machine()
    try:
        cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                    if line.startswith("model name")), cpu)
    except OSError:
        pass

    def ver(dist: str) -> str:
        try:
            return version(dist)
        except PackageNotFoundError:
            return "not installed"

    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                                timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = ""
    return {
        "cpu": cpu,
        "cpus": os.cpu_count(),
        "load_average": [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "versions": {d: ver(d) for d in ("ctxcore-llm", "langchain-core", "tiktoken")},
        "commit": commit or "unknown",
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }


def measure_cell(n: int, budget: int, dicts: list[dict[str, Any]], extra: list[dict[str, Any]], config: Config,
                 encoding: Any, measure_cold: bool) -> tuple[dict[str, Any], BuiltContext]:
    """Both sides' next turn (and, for the largest size, the cold build and the peak) at one size and budget."""
    lc_times, kept = langchain_next_turn(dicts, extra[:config.reps], budget, MemoizedCl100kCounter(encoding))
    theirs = check_langchain_output(kept, encoding, budget)
    times, built, pipeline, history = ctxcore_next_turn(dicts, extra[:config.reps], budget)
    ours = check_ctxcore_output(built, encoding, budget)
    check_same_window(ours, theirs, f"{n:,} messages, budget {budget:,}")
    ctxcore_s, langchain_s = statistics.median(times), statistics.median(lc_times)
    cell: dict[str, Any] = {"n": n, "budget": budget, "ctxcore_s": ctxcore_s, "langchain_memo_s": langchain_s,
                            "ratio": langchain_s / ctxcore_s, "ctxcore_window": ours, "langchain_window": theirs}
    if measure_cold:
        cell["peak_bytes"] = memory_peak(pipeline, history, extra[-1])
        cell["cold_s"] = statistics.median(ctxcore_cold(dicts, config.cold_reps, budget))
        cell["langchain_cold_s"] = statistics.median(langchain_cold(dicts, config.cold_reps, budget, encoding))
    return cell, built


def guards_of(cells: list[dict[str, Any]], config: Config) -> list[Guard]:
    """The guard rows from the cells; each row takes the worse of the budgets."""
    small, middle, big = config.sizes

    def worst(n: int, key: Callable[[dict[str, Any]], float], highest: bool = False) -> dict[str, Any]:
        at_n = [c for c in cells if c["n"] == n]
        return max(at_n, key=key) if highest else min(at_n, key=key)

    def next_turn(key: str, n: int) -> Guard:
        c = worst(n, lambda c: c["ratio"])
        return guard(key, f"next turn, {n:,} messages ({c['budget']:,} budget)", c["ctxcore_s"], c["langchain_memo_s"],
                     "LangChain", "s", c["ratio"], "LangChain / ctxcore")

    cold = worst(big, lambda c: c["langchain_cold_s"] / c["cold_s"])
    peak = worst(big, lambda c: c["peak_bytes"], highest=True)
    flat = max(((c, next(s for s in cells if s["n"] == small and s["budget"] == c["budget"])) for c in cells if c["n"] == big),
               key=lambda pair: pair[0]["ctxcore_s"] / pair[1]["ctxcore_s"])
    return [
        next_turn("next_big", big),
        next_turn("next_middle", middle),
        next_turn("next_small", small),
        guard("cold_big", f"first build, {big:,} dicts ({cold['budget']:,} budget)", cold["cold_s"],
              cold["langchain_cold_s"], "LangChain, fresh memo", "s", cold["langchain_cold_s"] / cold["cold_s"],
              "LangChain / ctxcore"),
        guard("peak_big", f"next turn's tracemalloc peak, {big:,} messages ({peak['budget']:,} budget)",
              float(peak["peak_bytes"]), float(MEMORY_LIMIT), "the bound", "bytes", peak["peak_bytes"] / MEMORY_LIMIT,
              "peak / 1 MB"),
        guard("flat", f"next turn at {big:,} / at {small:,} messages ({flat[0]['budget']:,} budget)",
              flat[0]["ctxcore_s"], flat[1]["ctxcore_s"], f"ctxcore at {small:,}", "s",
              flat[0]["ctxcore_s"] / flat[1]["ctxcore_s"], f"{big:,} / {small:,}"),
    ]


def run(config: Config, command: str = "", log: Callable[[str], None] = lambda s: None) -> Results:
    """Measure every cell once and judge the guard; raises :class:`HarnessError` when the outputs are not comparable."""
    machine = machine_info()
    extra = growth(config.reps + 1, config.seed)
    encoding = encoding_of(make_pipeline(config.budgets[0]).builder().counter)
    cells: list[dict[str, Any]] = []
    last: BuiltContext | None = None
    for n in config.sizes:
        dicts = coding_agent_transcript(n, config.seed)
        for budget in config.budgets:
            log(f"{n:,} messages, {budget:,}-token budget")
            cell, last = measure_cell(n, budget, dicts, extra, config, encoding, measure_cold=n == config.sizes[-1])
            cells.append(cell)
    assert last is not None
    return Results(command, asdict(config), machine, guards_of(cells, config), cells,
                   outputs={"ctxcore": list(last.messages), "encoding": encoding})


# ----------------------------------------------------------------- report


def _fmt(value: float, unit: str) -> str:
    if unit == "bytes":
        return f"{value / 1e6:.2f} MB"
    return f"{value * 1000:.3f} ms" if value < 1 else f"{value:.2f} s"


def render(results: Results) -> str:
    """The Markdown written between the ``bench:perf`` markers: the guard table, the cells, the setup."""
    judged = results.config["judged"]

    def verdict(g: Guard) -> str:
        return ("✅ met" if g.met else "❌ not met") if judged else "not judged (smoke sizes)"

    rows = [[g.name, _fmt(g.ctxcore, g.unit), f"{_fmt(g.reference, g.unit)} ({g.reference_name})",
             f"{g.ratio:,.2f}× ({g.ratio_meaning})", f"{g.op} {g.bound:g}×", verdict(g)] for g in results.guards]
    table = markdown_table(["guard", "ctxcore", "reference", "measured", "bound", "met"], rows, "lrrrll")
    cell_rows = [[f"{c['n']:,}", f"{c['budget']:,}", _fmt(c["ctxcore_s"], "s"), _fmt(c["langchain_memo_s"], "s"),
                  f"{c['ratio']:,.2f}×", f"{c['ctxcore_window']['messages']} / {c['langchain_window']['messages']}"]
                 for c in results.cells]
    cells = markdown_table(["messages", "budget", "ctxcore", "LangChain", "LangChain / ctxcore",
                            "window (ctxcore / LangChain)"], cell_rows, "rrrrrr")
    m, c = results.machine, results.config
    return "\n".join([
        f"Command: `{results.command}` — {m['date']}, commit `{m['commit']}`.",
        "",
        table,
        "",
        f"Every next turn (CPU time, medians of {c['reps']} builds, each after `gc.collect()`; windows in messages, each "
        "checked legal and within the budget by LangChain's exact counter):",
        "",
        cells,
        "",
        f"- Workload: `coding_agent_transcript(n, seed={c['seed']})` as OpenAI dicts, tiktoken cl100k_base on both "
        f"sides, LangChain `trim_messages` with a per-message memoized counter; first builds: medians of "
        f"{c['cold_reps']}.",
        f"- Machine: {m['cpu']}, {m['cpus']} CPUs (load average {m['load_average']}), Python {m['python']}, "
        + ", ".join(f"{d} {v}" for d, v in m["versions"].items()) + ".",
    ])


def main(argv: Sequence[str] | None = None) -> int:
    """Run the guard, print the tables, write the docs section and the JSON; 1 when a guard row fails, 2 when unfair."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="smoke sizes (300 messages, one repetition), no guard judged; writes nothing unless --doc/--json")
    parser.add_argument("--doc", type=Path, default=None, help=f"page with the bench:{SECTION} markers (default {DOC.relative_to(ROOT)})")
    parser.add_argument("--json", type=Path, default=None, help=f"raw results (default {JSON_OUT.relative_to(ROOT)})")
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args(argv)
    config = Config.quick() if args.quick else Config()
    given = list(argv if argv is not None else sys.argv[1:])
    command = "make bench" if os.environ.get("CTXCORE_BENCH_VIA_MAKE") else shlex.join(["python", "bench/perf.py", *given])
    doc = None if args.no_write else args.doc or (None if args.quick else DOC)
    out = None if args.no_write else args.json or (None if args.quick else JSON_OUT)

    def log(message: str) -> None:
        print(f"== {message}", file=sys.stderr, flush=True)

    try:
        results = run(config, command, log)
    except HarnessError as exc:
        print(f"bench/perf.py: the comparison is not fair, no numbers written: {exc}", file=sys.stderr)
        return 2
    body = render(results)
    print(body)
    if doc is not None:
        write_section(doc, SECTION, body)
        log(f"wrote the table to {doc}")
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(results.to_json(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        log(f"wrote the raw results to {out}")
    if config.judged:
        for g in results.guards:
            report_row("perf.py", g.name, g.met, f"{g.ratio:.2f} {g.op} {g.bound:g}")
    if config.judged and results.failed:
        print("bench/perf.py: guard not met: " + "; ".join(g.name for g in results.failed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
