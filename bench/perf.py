"""Issue 7 targets 1-5: ctxcore against LangChain's ``trim_messages`` on the same workload.

Usage: ``make bench`` (or ``.venv/bin/python bench/perf.py [--quick] [--doc PATH] [--json PATH]``).

One process run measures, on :func:`workload.coding_agent_transcript`:

1. next-turn build (the history grew by one message since the last build of
   the same pipeline) of an ``n``-message history against LangChain's
   ``trim_messages(strategy="last", include_system=True, start_on="human")``;
2. cold build (fresh pipeline, fresh Message objects, nothing cached; the
   tiktoken encoding already loaded on both sides) against the same LangChain
   call (LangChain keeps no state between calls: its next turn is a cold call);
3. scaling: ctxcore's next-turn build at ``n`` over the one at ``small_n``;
4. a full exact count of a whole transcript through ctxcore's counter
   (a fresh ``CachedCounter`` over the tiktoken counter) over calling the
   tiktoken encoding directly on the same texts;
5. the tracemalloc peak of a ctxcore next-turn build at ``n``.

Both sides count with the same loaded cl100k_base encoding and the same rule
(see :mod:`langchain_side`). Every run also checks that the harness compares
like with like (both outputs within budget, system prompt kept, a user message
first after it, no tool call split from its results, equal counts in target 4)
and stops with an error when it does not. Times are medians of repeated
``time.perf_counter`` runs. The Markdown table goes between the
``bench:perf`` markers of docs/performance.md, the raw numbers to
bench/results/perf.json (``--quick``, the CI smoke mode, writes neither unless
given paths).
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
from ctxcore_counters.tiktoken_counter import TiktokenCounter  # noqa: E402
from langchain_core.messages import (  # noqa: E402
    BaseMessage,
    HumanMessage,
    SystemMessage,
    trim_messages,
)
from langchain_side import ExactCl100kCounter, to_langchain  # noqa: E402
from report_table import markdown_table, write_section  # noqa: E402
from workload import as_messages, coding_agent_transcript  # noqa: E402

from ctxcore import CachedCounter, Pipeline  # noqa: E402
from ctxcore.engine.builder import BuiltContext  # noqa: E402
from ctxcore.errors import InvalidHistory  # noqa: E402
from ctxcore.model.messages import Message  # noqa: E402
from ctxcore.model.transactions import check_tool_pairing  # noqa: E402
from ctxcore.testing import fresh_host  # noqa: E402

__all__ = ["Config", "Target", "Results", "run", "render", "main", "SYSTEM_PROMPT", "SECTION"]

SECTION = "perf"
DOC = ROOT / "docs" / "performance.md"
JSON_OUT = BENCH / "results" / "perf.json"
MEMORY_LIMIT = 5_000_000  # bytes: target 5's "5 MB"
SYSTEM_PROMPT = (
    "You are a careful coding agent working in a Python repository. Read files before changing them, "
    "run the tests after every change, explain what you did and why in a few sentences, and never "
    "invent file contents or test results: call a tool when you need to know something."
)


class HarnessError(RuntimeError):
    """The two sides did not produce comparable, valid outputs: the numbers would mean nothing."""


@dataclass(frozen=True)
class Config:
    """Sizes and repetitions of one run."""

    n: int = 20_000
    small_n: int = 2_000
    budget: int = 8_000
    seed: int = 0
    reps: int = 9  # ctxcore next-turn builds per size
    cold_reps: int = 3
    langchain_reps: int = 3
    count_n: int = 2_000  # transcript length of target 4
    count_reps: int = 5

    @classmethod
    def quick(cls) -> Config:
        """The CI smoke sizes: every code path once, in seconds."""
        return cls(n=300, small_n=100, reps=1, cold_reps=1, langchain_reps=1, count_n=100, count_reps=1)


@dataclass
class Target:
    """One row of the table: what was measured on each side and whether the goal is met."""

    id: int
    name: str
    ctxcore: float
    reference: float
    reference_name: str
    unit: str  # "s" or "bytes"
    ratio: float
    ratio_meaning: str
    op: str  # ">=" or "<="
    goal: float
    met: bool
    ctxcore_runs: list[float] = field(default_factory=list)
    reference_runs: list[float] = field(default_factory=list)


@dataclass
class Results:
    """Everything one run measured; ``outputs`` (not serialised) holds the last built windows."""

    command: str
    config: dict[str, Any]
    machine: dict[str, Any]
    targets: list[Target]
    checks: dict[str, Any]
    outputs: dict[str, Any] = field(default_factory=dict, repr=False)

    def to_json(self) -> dict[str, Any]:
        """The raw results as written to bench/results/perf.json."""
        return {
            "command": self.command,
            "config": self.config,
            "machine": self.machine,
            "targets": [asdict(t) for t in self.targets],
            "checks": self.checks,
        }


def _target(id: int, name: str, ours: list[float], ref: list[float], ref_name: str, unit: str,
            op: str, goal: float, ratio_of: Callable[[float, float], float], meaning: str) -> Target:
    a, b = statistics.median(ours), statistics.median(ref)
    ratio = ratio_of(a, b)
    met = ratio >= goal if op == ">=" else ratio <= goal
    return Target(id, name, a, b, ref_name, unit, ratio, meaning, op, goal, met, ours, ref)


# ----------------------------------------------------------------- the two sides


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
    """The loaded tiktoken encoding behind a builder's counter (shared with the LangChain side)."""
    inner = counter.counter
    if not isinstance(inner, TiktokenCounter):
        raise HarnessError(f"the pipeline counts with {type(inner).__name__}, not the tiktoken counter")
    return inner._encoding


def _timed(call: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[float, Any]:
    """Wall time of ``call(*args, **kwargs)`` (after a collection, so no earlier garbage is paid for) and its result."""
    gc.collect()
    started = time.perf_counter()
    out = call(*args, **kwargs)
    return time.perf_counter() - started, out


def ctxcore_next_turn(dicts: list[dict[str, Any]], extra: list[dict[str, Any]], budget: int) -> tuple[list[float], BuiltContext, Pipeline, list[Message]]:
    """Times of builds that each follow a build of the same history minus its newest message."""
    pipeline = make_pipeline(budget)
    history = as_messages(dicts)
    grown = [Message.from_openai(d, id=f"g{i}") for i, d in enumerate(extra)]
    state = {"messages": history}
    built = pipeline.build(state)  # the previous turn's build
    times = []
    for message in grown:
        history.append(message)
        elapsed, built = _timed(pipeline.build, state)
        times.append(elapsed)
    return times, built, pipeline, history


def ctxcore_cold(dicts: list[dict[str, Any]], reps: int, budget: int) -> tuple[list[float], BuiltContext]:
    """Times of first builds: fresh pipeline and fresh Message objects (no cached fingerprint or count)."""
    times, built = [], None
    for _ in range(reps):
        pipeline = make_pipeline(budget)
        state = {"messages": as_messages(dicts)}
        elapsed, built = _timed(pipeline.build, state)
        times.append(elapsed)
    assert built is not None
    return times, built


def langchain_calls(dicts: list[dict[str, Any]], extra: list[dict[str, Any]], budget: int, encoding: Any) -> tuple[list[float], list[BaseMessage], ExactCl100kCounter]:
    """Times of ``trim_messages`` calls on the history grown by one message before each call."""
    history = to_langchain(dicts, SYSTEM_PROMPT)
    grown = to_langchain(extra)
    counter = ExactCl100kCounter(encoding)
    times: list[float] = []
    kept: list[BaseMessage] = []
    for message in grown:
        history.append(message)
        elapsed, kept = _timed(
            trim_messages, history, strategy="last", include_system=True, start_on="human", max_tokens=budget, token_counter=counter,
        )
        times.append(elapsed)
    return times, kept, counter


def memory_peak(pipeline: Pipeline, history: list[Message], message: Message) -> int:
    """tracemalloc peak (bytes) of one next-turn build: the history grows by ``message``."""
    history.append(message)
    state = {"messages": history}
    gc.collect()
    tracemalloc.start()
    try:
        pipeline.build(state)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def counted_texts(messages: Sequence[Message]) -> list[str]:
    """The strings ctxcore's tiktoken counter tokenizes for ``messages`` (string contents only).

    Role, content, name, tool_call_id and each tool call's id, name and JSON
    arguments: exactly what ``MessageCounter.count_message`` passes to
    ``count_text``; empty strings are left out (neither side encodes them).
    """
    texts: list[str] = []
    for m in messages:
        if not isinstance(m.content, (str, type(None))):
            raise HarnessError(f"message {m.id}: the workload only has string contents")
        texts += [m.role, m.content or "", m.name or "", m.tool_call_id or ""]
        for call in m.tool_calls:
            texts += [call.id, call.name, call.arguments]
    return [t for t in texts if t]


def _count_once(dicts: list[dict[str, Any]], ctxcore_first: bool) -> tuple[float, float, dict[str, int]]:
    """One timed full count on each side, on fresh Message objects (fingerprints are part of ctxcore's cost)."""
    messages = as_messages(dicts)
    counter = CachedCounter(TiktokenCounter("cl100k_base"))
    encode = encoding_of(counter).encode_ordinary  # the very encoding ctxcore counts with
    texts = counted_texts(messages)
    sides: list[tuple[str, Callable[[], int]]] = [
        ("ctxcore", lambda: counter.count_messages(messages)),
        ("tiktoken", lambda: sum(len(encode(t)) for t in texts)),
    ]
    times: dict[str, float] = {}
    totals: dict[str, int] = {}
    for name, fn in sides if ctxcore_first else sides[::-1]:
        times[name], totals[name] = _timed(fn)
    overheads = sum(3 + 3 * len(m.tool_calls) + (1 if m.name else 0) for m in messages) + 3
    if totals["ctxcore"] != totals["tiktoken"] + overheads:
        raise HarnessError(
            f"target 4 counts differ: ctxcore {totals['ctxcore']}, tiktoken {totals['tiktoken']} + overheads {overheads}"
        )
    totals.update(messages=len(messages), texts=len(texts), characters=sum(map(len, texts)))
    return times["ctxcore"], times["tiktoken"], totals


def full_count(dicts: list[dict[str, Any]], reps: int) -> tuple[list[float], list[float], dict[str, int]]:
    """Times of counting every message through ctxcore's counter and of encoding the same texts directly.

    The order alternates between repetitions so neither side always runs on the warmer machine.
    """
    ours: list[float] = []
    direct: list[float] = []
    totals: dict[str, int] = {}
    for rep in range(reps):
        a, b, totals = _count_once(dicts, ctxcore_first=rep % 2 == 0)
        ours.append(a)
        direct.append(b)
    return ours, direct, totals


# ----------------------------------------------------------------- checks


def check_ctxcore_output(built: BuiltContext, counter: Any, budget: int) -> dict[str, Any]:
    """Within budget, system prompt first, a user message first after the system messages, no split tool call."""
    messages = list(built.messages)
    tokens = counter.count_messages(messages)
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


def check_langchain_output(kept: list[BaseMessage], counter: ExactCl100kCounter, budget: int) -> dict[str, Any]:
    """Within budget, the system prompt first, then a human message."""
    tokens = counter(kept)
    if tokens > budget:
        raise HarnessError(f"LangChain output is {tokens} tokens, over the {budget}-token budget")
    if len(kept) < 2 or not isinstance(kept[0], SystemMessage) or kept[0].content != SYSTEM_PROMPT:
        raise HarnessError("LangChain output does not start with the system prompt")
    if not isinstance(kept[1], HumanMessage):
        raise HarnessError(f"LangChain output starts on {kept[1].type} after the system prompt, not human")
    return {"tokens": tokens, "messages": len(kept)}


# ----------------------------------------------------------------- run


def machine_info() -> dict[str, Any]:
    """Where the numbers come from (absolute times only mean something on this machine)."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass

    def ver(dist: str) -> str:
        try:
            return version(dist)
        except PackageNotFoundError:
            return "not installed"

    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = ""
    return {
        "cpu": cpu,
        "cpus": os.cpu_count(),
        "load_average": [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "ctxcore": ver("ctxcore"),
        "langchain-core": ver("langchain-core"),
        "tiktoken": ver("tiktoken"),
        "commit": commit or "unknown",
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }


def run(config: Config, command: str = "", log: Callable[[str], None] = lambda s: None) -> Results:
    """Measure targets 1-5 once; raises :class:`HarnessError` when the outputs are not comparable."""
    machine = machine_info()
    big = coding_agent_transcript(config.n, config.seed)
    small = coding_agent_transcript(config.small_n, config.seed)
    extra = growth(max(config.reps, config.langchain_reps) + 1, config.seed)
    ours_extra, lc_extra, last = extra[:config.reps], extra[:config.langchain_reps], extra[-1]

    log(f"ctxcore next-turn builds at {config.n} and {config.small_n} messages")
    next_big, built, pipeline, history = ctxcore_next_turn(big, ours_extra, config.budget)
    next_small, _, _, _ = ctxcore_next_turn(small, ours_extra, config.budget)
    counter = pipeline.builder().counter
    ctx_check = check_ctxcore_output(built, counter, config.budget)
    log("ctxcore memory peak of a next-turn build")
    peak = memory_peak(pipeline, history, Message.from_openai(last, id="g-last"))
    log(f"ctxcore cold builds at {config.n} messages")
    cold, cold_built = ctxcore_cold(big, config.cold_reps, config.budget)
    check_ctxcore_output(cold_built, counter, config.budget)
    log(f"LangChain trim_messages at {config.n} messages ({config.langchain_reps} calls)")
    lc_times, kept, lc_counter = langchain_calls(big, lc_extra, config.budget, encoding_of(counter))
    lc_counted = lc_counter.messages_counted // len(lc_times)  # before the check below counts once more
    lc_check = check_langchain_output(kept, lc_counter, config.budget)
    log(f"full exact count of a {config.count_n}-message transcript")
    count_ours, count_direct, totals = full_count(coding_agent_transcript(config.count_n, config.seed), config.count_reps)

    targets = [
        _target(1, f"next-turn build, {config.n:,} messages", next_big, lc_times, "LangChain trim_messages", "s",
                ">=", 1000, lambda a, b: b / a, "LangChain time / ctxcore time"),
        _target(2, f"cold build, {config.n:,} messages", cold, lc_times, "LangChain trim_messages", "s",
                ">=", 100, lambda a, b: b / a, "LangChain time / ctxcore time"),
        _target(3, f"scaling: next-turn {config.n:,} vs {config.small_n:,} messages", next_big, next_small,
                f"ctxcore next-turn at {config.small_n:,}", "s", "<=", 1.5, lambda a, b: a / b,
                f"ctxcore at {config.n:,} / ctxcore at {config.small_n:,}"),
        _target(4, f"full exact count, {config.count_n:,} messages", count_ours, count_direct, "tiktoken encode, same texts", "s",
                "<=", 1.1, lambda a, b: a / b, "ctxcore time / tiktoken time"),
        _target(5, f"memory of a next-turn build, {config.n:,} messages", [float(peak)], [float(MEMORY_LIMIT)],
                "limit (5 MB)", "bytes", "<=", 1.0, lambda a, b: a / b, "tracemalloc peak / 5 MB"),
    ]
    checks = {
        "ctxcore_next_turn_output": ctx_check,
        "langchain_output": lc_check,
        "langchain_messages_counted_per_call": lc_counted,
        "ctxcore_cache": {"hits": counter.hits, "misses": counter.misses},
        "full_count": totals,
        "workload_characters": sum(len(d.get("content") or "") for d in big),
    }
    cfg = asdict(config)
    return Results(command, cfg, machine, targets, checks,
                   outputs={"ctxcore": list(built.messages), "langchain": kept, "counter": counter})


# ----------------------------------------------------------------- report


def _fmt(value: float, unit: str) -> str:
    if unit == "bytes":
        return f"{value / 1e6:.2f} MB"
    return f"{value * 1000:.3f} ms" if value < 1 else f"{value:.2f} s"


def render(results: Results) -> str:
    """The Markdown written between the ``bench:perf`` markers."""
    rows = []
    for t in results.targets:
        rows.append([
            t.id, t.name, _fmt(t.ctxcore, t.unit), f"{_fmt(t.reference, t.unit)} ({t.reference_name})",
            f"{t.ratio:,.2f}×", f"{t.op} {t.goal:g}× ({t.ratio_meaning})", "✅" if t.met else "❌",
        ])
    rows.append([6, "prompt-cache economics", "see [Prompt-cache economics](#prompt-cache-economics)", "", "", "", ""])
    m, c = results.machine, results.config
    table = markdown_table(["#", "target", "ctxcore", "reference", "measured ratio", "goal", "met"], rows, "rlrrrll")
    ctx, lc = results.checks["ctxcore_next_turn_output"], results.checks["langchain_output"]
    return "\n".join([
        f"Command: `{results.command}` — {m['date']}, commit `{m['commit']}`.",
        "",
        table,
        "",
        f"- Workload: `coding_agent_transcript({c['n']}, seed={c['seed']})` "
        f"({results.checks['workload_characters'] / 1e6:.1f} MB of message text), {c['budget']:,}-token budget, "
        "tiktoken cl100k_base on both sides; medians of "
        f"{c['reps']} ctxcore next-turn builds, {c['cold_reps']} cold builds, {c['langchain_reps']} LangChain calls, "
        f"{c['count_reps']} full counts.",
        f"- Kept windows (last next-turn build): ctxcore {ctx['messages']} messages / {ctx['tokens']:,} tokens; "
        f"LangChain {lc['messages']} messages / {lc['tokens']:,} tokens; LangChain counted "
        f"{results.checks['langchain_messages_counted_per_call']:,} messages per call.",
        f"- Machine: {m['cpu']}, {m['cpus']} CPUs (load average {m['load_average']}), {m['platform']}, "
        f"Python {m['python']}, langchain-core {m['langchain-core']}, tiktoken {m['tiktoken']}.",
    ])


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark, print the table, and write the docs section and the JSON results."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="CI smoke sizes (300 messages, one repetition); writes nothing unless --doc/--json")
    parser.add_argument("--doc", type=Path, default=None, help=f"page with the bench:{SECTION} markers (default {DOC.relative_to(ROOT)})")
    parser.add_argument("--json", type=Path, default=None, help=f"raw results (default {JSON_OUT.relative_to(ROOT)})")
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args(argv)
    config = Config.quick() if args.quick else Config()
    command = "make bench" if os.environ.get("CTXCORE_BENCH_VIA_MAKE") else shlex.join(["python", "bench/perf.py", *(argv if argv is not None else sys.argv[1:])])
    write = not args.no_write
    doc = args.doc or (None if args.quick else DOC)
    out = args.json or (None if args.quick else JSON_OUT)

    def log(message: str) -> None:
        print(f"== {message}", file=sys.stderr, flush=True)

    try:
        results = run(config, command, log)
    except HarnessError as exc:
        print(f"bench/perf.py: the harness is broken, no numbers written: {exc}", file=sys.stderr)
        return 2
    body = render(results)
    print(body)
    if write and doc is not None:
        write_section(doc, SECTION, body)
        log(f"wrote the table to {doc}")
    if write and out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(results.to_json(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        log(f"wrote the raw results to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
