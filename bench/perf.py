"""Issue 16's goals: ctxcore against the best-configured peer, on the input users hold.

Usage: ``make bench`` (or ``.venv/bin/python bench/perf.py [--quick] [--next-turn-only] [--doc PATH] [--json PATH]``).
``--cells 200`` (or ``--cells 200,2000``) measures only goal 1's cells at those history sizes (both budgets, both
input forms, LangChain memoized in the same process) and prints their table; it writes nothing.

One process run, on :func:`workload.coding_agent_transcript`, every side
counting with the same loaded cl100k_base encoding:

- **ctxcore**: static prompt + ``history`` + ``token_budget``, fed ``Message``
  objects or OpenAI dicts (``dict`` rows: the list holds dicts, as the OpenAI
  SDK and most agents do);
- **LangChain** ``trim_messages(strategy="last", include_system=True,
  start_on="human")`` with an uncached counter and with a per-message
  memoized one (:mod:`langchain_side`) — the goals are against the memoized one;
- **nanobot** (``Session.get_history`` + ``ContextGovernor.fit_to_budget``)
  and **LlamaIndex** ``ChatMemoryBuffer`` (:mod:`peers_side`), in the peers table.

Goals (issue 16): 1. next turn vs LangChain memoized, every size x budget x
input form, >= 2x; 2. a replay (one build before every assistant message)
>= 2x; 3. dict vs Message input at the largest size, next turn and cold,
<= 1.3x; 4. dict next turn, largest / middle size, <= 1.3x; 5. cold build at
the largest size, dict input, vs LangChain memoized with a fresh memo, >= 30x;
6. ``approximate`` vs tiktoken on 1 MB of mixed text (bench/counter_speed.py),
>= 5x; 7. tracemalloc peak of a dict next turn at the largest size <= 1 MB.

Every run first checks fairness and stops with an error when it fails: each
window legal (system prompt first, then a user message, no tool call split
from its results), within the budget by an independent count (LangChain's
exact counter on the window converted to LangChain messages), and ctxcore's
window within a few messages of LangChain's. Times are medians of
``time.perf_counter`` runs after a collection. The Markdown goes between the
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
from dataclasses import asdict, dataclass, field, replace
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
from counter_speed import measure as counter_speed  # noqa: E402
from ctxcore_counters.tiktoken_counter import TiktokenCounter  # noqa: E402
from langchain_core.messages import (  # noqa: E402
    BaseMessage,
    HumanMessage,
    SystemMessage,
    trim_messages,
)
from langchain_side import ExactCl100kCounter, MemoizedCl100kCounter, to_langchain  # noqa: E402
from peers_side import LlamaIndexSide, NanobotSide, available  # noqa: E402
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
MEMORY_LIMIT = 1_000_000  # bytes: goal 7's "1 MB"
WINDOW_SLACK = 12  # messages: "the same window size within a few messages"
SYSTEM_PROMPT = (
    "You are a careful coding agent working in a Python repository. Read files before changing them, "
    "run the tests after every change, explain what you did and why in a few sentences, and never "
    "invent file contents or test results: call a tool when you need to know something."
)
FORMS = ("dict", "Message")


class HarnessError(RuntimeError):
    """The sides did not produce comparable, valid outputs: the numbers would mean nothing."""


@dataclass(frozen=True)
class Config:
    """Sizes and repetitions of one run."""

    sizes: tuple[int, ...] = (200, 2_000, 20_000)
    budgets: tuple[int, ...] = (8_000, 128_000)
    seed: int = 0
    reps: int = 9  # next-turn builds (and LangChain calls) per cell
    cold_reps: int = 3
    uncached_reps: int = 1  # LangChain with the uncached counter: seconds per call at 20,000
    replay_turns: int = 400
    replay_budget: int = 8_000
    peer_n: int = 2_000  # nanobot's size
    llamaindex_n: int = 200  # ChatMemoryBuffer is quadratic in what it drops
    counter_speed: bool = True
    next_turn_only: bool = False  # goals 1 and 2 only (--next-turn-only): the cells and the replay
    cells_only: bool = False  # goal 1's cells only (--cells N[,N...]): no replay, no other goal

    @classmethod
    def quick(cls) -> Config:
        """The CI smoke sizes: every code path once, in seconds."""
        return cls(sizes=(60, 120, 300), budgets=(8_000, 20_000), reps=1, cold_reps=1, replay_turns=10,
                   peer_n=60, llamaindex_n=30, counter_speed=False)


@dataclass
class Target:
    """One row of the goals table: what was measured on each side and whether the goal is met."""

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


@dataclass
class Results:
    """Everything one run measured; ``outputs`` (not serialised) holds the last built windows."""

    command: str
    config: dict[str, Any]
    machine: dict[str, Any]
    targets: list[Target]
    cells: list[dict[str, Any]]
    peers: list[dict[str, Any]]
    checks: dict[str, Any]
    outputs: dict[str, Any] = field(default_factory=dict, repr=False)

    def to_json(self) -> dict[str, Any]:
        """The raw results as written to bench/results/perf.json."""
        return {"command": self.command, "config": self.config, "machine": self.machine,
                "targets": [asdict(t) for t in self.targets], "cells": self.cells, "peers": self.peers,
                "checks": self.checks}


def _target(id: int, name: str, ours: float, ref: float, ref_name: str, unit: str, op: str, goal: float,
            ratio: float, meaning: str) -> Target:
    met = ratio >= goal if op == ">=" else ratio <= goal
    return Target(id, name, ours, ref, ref_name, unit, ratio, meaning, op, goal, met)


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
    """The loaded tiktoken encoding behind a builder's counter (shared with every peer)."""
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


def history_of(dicts: Sequence[dict[str, Any]], form: str) -> list[Any]:
    """The history as the caller holds it: fresh dict copies or ``Message`` objects (built outside any timing)."""
    return [dict(d) for d in dicts] if form == "dict" else as_messages(dicts)


def item_of(d: dict[str, Any], form: str, i: int) -> Any:
    return dict(d) if form == "dict" else Message.from_openai(d, id=f"g{i}")


def ctxcore_next_turn(dicts: list[dict[str, Any]], extra: list[dict[str, Any]], budget: int, form: str) -> tuple[list[float], BuiltContext, Pipeline, list[Any]]:
    """Times of builds that each follow a build of the same history minus its newest message."""
    pipeline = make_pipeline(budget)
    history = history_of(dicts, form)
    state = {"messages": history}
    built = pipeline.build(state)  # the previous turn's build
    times = []
    for i, d in enumerate(extra):
        history.append(item_of(d, form, i))
        elapsed, built = _timed(pipeline.build, state)
        times.append(elapsed)
    return times, built, pipeline, history


def ctxcore_cold(dicts: list[dict[str, Any]], reps: int, budget: int, form: str) -> tuple[list[float], BuiltContext]:
    """Times of first builds: fresh pipeline and fresh history objects (nothing converted, counted or cached)."""
    times, built = [], None
    for _ in range(reps):
        pipeline = make_pipeline(budget)
        state = {"messages": history_of(dicts, form)}
        elapsed, built = _timed(pipeline.build, state)
        times.append(elapsed)
    assert built is not None
    return times, built


def memory_peak(pipeline: Pipeline, history: list[Any], item: Any) -> int:
    """tracemalloc peak (bytes) of one next-turn build: the history grows by ``item``."""
    history.append(item)
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


def replay(dicts: list[dict[str, Any]], turns: int, budget: int, encoding: Any) -> dict[str, Any]:
    """One build before every assistant message of the transcript, the history growing as an agent's does.

    ctxcore keeps one pipeline and appends dicts to one list; LangChain keeps one
    memoized counter and appends to one message list. Returns both total times.
    """
    points = [i for i, d in enumerate(dicts) if d["role"] == "assistant"][:turns]
    if len(points) < turns:
        raise HarnessError(f"the transcript has {len(points)} assistant messages, the replay needs {turns}")
    pipeline, history, state = make_pipeline(budget), [], {"messages": []}
    history = state["messages"]
    lc_history = [to_langchain([], SYSTEM_PROMPT)[0]]
    lc_all = to_langchain(dicts)
    counter = MemoizedCl100kCounter(encoding)
    warm_up(encoding)
    ours = theirs = 0.0
    done = 0
    for point in points:
        history.extend(dict(d) for d in dicts[done:point])
        lc_history.extend(lc_all[done:point])
        done = point
        started = time.perf_counter()  # no collection per build here: 2 x turns of them would dominate the run
        built = pipeline.build(state)
        middle = time.perf_counter()
        kept = trim(lc_history, budget, counter)
        ours, theirs = ours + middle - started, theirs + time.perf_counter() - middle
    check_ctxcore_output(built, encoding, budget)
    check_langchain_output(kept, ExactCl100kCounter(encoding), budget)
    shared = shared_tokenization(dicts[:points[-1]], encoding)
    return {"ctxcore_s": ours, "langchain_s": theirs, "turns": turns, "final_messages": points[-1],
            "shared_tokenization_s": shared, "bound": theirs / shared}


def warm_up(encoding: Any) -> None:
    """One build and one ``trim_messages`` call on a throwaway history, outside any timing.

    Each side has one-time work in a process: LangChain's first ``trim_messages``
    imports and compiles what it uses (0.6-0.8 s of a 400-turn replay when it
    comes first in a process, measured with cProfile: 1,535 ``compile`` calls),
    ctxcore's first build makes its marker tables (~0.1 s). A replay run alone
    (``bench/next_turn.py --replay``) would charge those to the turns.
    """
    sample = coding_agent_transcript(8, seed=99)
    make_pipeline(8_000).build({"messages": [dict(d) for d in sample]})
    trim(to_langchain(sample, SYSTEM_PROMPT), 8_000, MemoizedCl100kCounter(encoding))


def shared_tokenization(dicts: Sequence[dict[str, Any]], encoding: Any) -> float:
    """Seconds to tokenize every text of ``dicts`` once with ``encoding``: what each side of the replay must pay.

    Both sides count each new message once, with the same encoder, so no build
    can take less than this; LangChain's replay time divided by it is the best
    ratio any build could reach (goal 2's bound, shown under the table).
    """
    texts = [t for d in dicts for t in message_texts(d)]
    started = time.perf_counter()
    for text in texts:
        encoding.encode_ordinary(text)
    return time.perf_counter() - started


def message_texts(d: dict[str, Any]) -> list[str]:
    """The strings of one OpenAI dict a counter tokenizes (content, tool call names and arguments)."""
    out = [d.get("content") or ""]
    for call in d.get("tool_calls") or ():
        out += [call["function"]["name"], call["function"]["arguments"]]
    return [t for t in out if t]


# ----------------------------------------------------------------- checks


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


def check_dict_window(name: str, window: list[dict[str, Any]], encoding: Any, budget: int) -> dict[str, Any]:
    """A peer's window (OpenAI dicts): legal and within budget by the independent count."""
    messages = [Message.from_openai(d) for d in window]
    if not messages or messages[0].role != "system":
        raise HarnessError(f"{name} output does not start with the system prompt")
    rest = [m for m in messages if m.role != "system"]
    if not rest or rest[0].role != "user":
        raise HarnessError(f"{name} output does not start on a user message after the system prompt")
    try:
        check_tool_pairing(messages)
    except InvalidHistory as exc:
        raise HarnessError(f"{name} output splits a tool call from its results: {exc}") from exc
    tokens = independent_count(messages, encoding)
    return {"tokens": tokens, "messages": len(messages), "within_budget": tokens <= budget}


def check_same_window(ours: dict[str, Any], theirs: dict[str, Any], where: str) -> None:
    if abs(ours["messages"] - theirs["messages"]) > WINDOW_SLACK:
        raise HarnessError(f"{where}: ctxcore keeps {ours['messages']} messages, LangChain {theirs['messages']}: "
                           "the windows are not comparable")


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
        "versions": {d: ver(d) for d in ("ctxcore-llm", "langchain-core", "nanobot-ai", "llama-index-core", "tiktoken")},
        "commit": commit or "unknown",
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }


def _median(xs: list[float]) -> float:
    return statistics.median(xs)


def run(config: Config, command: str = "", log: Callable[[str], None] = lambda s: None) -> Results:
    """Measure every goal once; raises :class:`HarnessError` when the outputs are not comparable."""
    machine = machine_info()
    big, middle = config.sizes[-1], config.sizes[-2 if len(config.sizes) > 1 else -1]
    transcripts = {n: coding_agent_transcript(n, config.seed) for n in config.sizes}
    extra = growth(config.reps + 1, config.seed)
    encoding = encoding_of(make_pipeline(config.budgets[0]).builder().counter)
    cells: list[dict[str, Any]] = []
    keep: dict[tuple[int, int, str], Any] = {}
    for budget in config.budgets:
        for n in config.sizes:
            log(f"next turn at {n:,} messages, {budget:,}-token budget")
            lc_times, kept = langchain_next_turn(transcripts[n], extra[:config.reps], budget, MemoizedCl100kCounter(encoding))
            lc_check = check_langchain_output(kept, ExactCl100kCounter(encoding), budget)
            for form in FORMS:
                times, built, pipeline, history = ctxcore_next_turn(transcripts[n], extra[:config.reps], budget, form)
                check = check_ctxcore_output(built, encoding, budget)
                check_same_window(check, lc_check, f"{n} messages, budget {budget}, {form}")
                if (n, budget) == (config.sizes[-1], config.budgets[0]):  # the memory goal's and the smoke test's
                    keep[(n, budget, form)] = (pipeline, history, built)
                cells.append({"n": n, "budget": budget, "form": form, "ctxcore_s": _median(times),
                              "langchain_memo_s": _median(lc_times), "ratio": _median(lc_times) / _median(times),
                              "ctxcore_window": check, "langchain_window": lc_check})

    b0 = config.budgets[0]
    if config.cells_only:
        return Results(command, asdict(config), machine, [], cells, [], {})
    if config.next_turn_only:
        return _next_turn_results(config, command, machine, cells, encoding, log)
    log(f"cold builds at {big:,} messages")
    cold = {form: _median(ctxcore_cold(transcripts[big], config.cold_reps, b0, form)[0]) for form in FORMS}
    lc_cold_times = []
    for _ in range(config.cold_reps):
        elapsed, _kept = _timed(trim, to_langchain(transcripts[big], SYSTEM_PROMPT), b0, MemoizedCl100kCounter(encoding))
        lc_cold_times.append(elapsed)
    lc_cold = _median(lc_cold_times)
    log(f"LangChain with the uncached counter at {middle:,} and {big:,} messages")
    uncached = {}
    for n in (middle, big):
        times, _ = langchain_next_turn(transcripts[n], extra[:config.uncached_reps], b0, ExactCl100kCounter(encoding))
        uncached[n] = _median(times)
    log("memory peak of a dict next turn")
    pipeline, history, _ = keep[(big, b0, "dict")]
    peak = memory_peak(pipeline, history, dict(extra[-1]))
    log(f"replay: {config.replay_turns} builds")
    rep = replay(coding_agent_transcript(max(4 * config.replay_turns, 200), config.seed), config.replay_turns,
                 config.replay_budget, encoding)
    speed = counter_speed() if config.counter_speed else None
    peers = run_peers(config, encoding, extra, log)

    def cell(n: int, budget: int, form: str) -> dict[str, Any]:
        return next(c for c in cells if (c["n"], c["budget"], c["form"]) == (n, budget, form))

    worst = min(cells, key=lambda c: c["ratio"])
    nt = {form: cell(big, b0, form)["ctxcore_s"] for form in FORMS}
    targets = [
        _target(1, f"next turn vs LangChain + memoized counter, worst of {len(cells)} cells "
                   f"({worst['n']:,} messages, {worst['budget']:,} budget, {worst['form']})",
                worst["ctxcore_s"], worst["langchain_memo_s"], "LangChain memoized", "s", ">=", 2,
                worst["ratio"], "LangChain / ctxcore"),
        _target(2, f"{rep['turns']}-turn replay (history to {rep['final_messages']:,} messages), dict input",
                rep["ctxcore_s"], rep["langchain_s"], "LangChain memoized", "s", ">=", 2,
                rep["langchain_s"] / rep["ctxcore_s"], "LangChain / ctxcore"),
        _target(3, f"dict vs Message input, next turn, {big:,} messages", nt["dict"], nt["Message"], "ctxcore, Message input",
                "s", "<=", 1.3, nt["dict"] / nt["Message"], "dict / Message"),
        _target(3, f"dict vs Message input, cold, {big:,} messages", cold["dict"], cold["Message"], "ctxcore, Message input",
                "s", "<=", 1.3, cold["dict"] / cold["Message"], "dict / Message"),
        _target(4, f"next turn {big:,} / {middle:,} messages, dict input", nt["dict"], cell(middle, b0, "dict")["ctxcore_s"],
                f"ctxcore at {middle:,}", "s", "<=", 1.3, nt["dict"] / cell(middle, b0, "dict")["ctxcore_s"],
                f"{big:,} / {middle:,}"),
        _target(5, f"cold build, {big:,} messages, dict input", cold["dict"], lc_cold, "LangChain memoized, fresh memo",
                "s", ">=", 30, lc_cold / cold["dict"], "LangChain / ctxcore"),
    ]
    if speed is not None:
        targets.append(_target(6, "`approximate` vs tiktoken, 1 MB mixed text", speed["approximate_s"], speed["tiktoken_s"],
                               "tiktoken cl100k_base", "s", ">=", 5, speed["speedup"], "tiktoken / approximate"))
    targets.append(_target(7, f"tracemalloc peak of a next turn, {big:,} messages, dict input", float(peak),
                           float(MEMORY_LIMIT), "limit (1 MB)", "bytes", "<=", 1.0, peak / MEMORY_LIMIT, "peak / 1 MB"))
    checks = {"cold_s": cold, "langchain_cold_memo_s": lc_cold, "langchain_uncached_s": uncached, "replay": rep,
              "memory_peak_bytes": peak, "counter_speed": speed,
              "workload_characters": sum(len(d.get("content") or "") for d in transcripts[big])}
    last = keep[(big, b0, "Message")]
    return Results(command, asdict(config), machine, targets, cells, peers, checks,
                   outputs={"ctxcore": list(last[2].messages), "counter": last[0].builder().counter, "encoding": encoding})


def _next_turn_results(config: Config, command: str, machine: dict[str, Any], cells: list[dict[str, Any]], encoding: Any,
                       log: Callable[[str], None]) -> Results:
    """Goals 1 and 2 only (``--next-turn-only``): the next-turn cells and the replay, measured as in a full run."""
    log(f"replay: {config.replay_turns} builds")
    rep = replay(coding_agent_transcript(max(4 * config.replay_turns, 200), config.seed), config.replay_turns,
                 config.replay_budget, encoding)
    worst = min(cells, key=lambda c: c["ratio"])
    targets = [
        _target(1, f"next turn vs LangChain + memoized counter, worst of {len(cells)} cells "
                   f"({worst['n']:,} messages, {worst['budget']:,} budget, {worst['form']})",
                worst["ctxcore_s"], worst["langchain_memo_s"], "LangChain memoized", "s", ">=", 2,
                worst["ratio"], "LangChain / ctxcore"),
        _target(2, f"{rep['turns']}-turn replay (history to {rep['final_messages']:,} messages), dict input",
                rep["ctxcore_s"], rep["langchain_s"], "LangChain memoized", "s", ">=", 2,
                rep["langchain_s"] / rep["ctxcore_s"], "LangChain / ctxcore"),
    ]
    return Results(command, asdict(config), machine, targets, cells, [], {"replay": rep})


def run_peers(config: Config, encoding: Any, extra: list[dict[str, Any]], log: Callable[[str], None]) -> list[dict[str, Any]]:
    """nanobot and LlamaIndex next turns (8k budget), beside LangChain memoized and ctxcore at the same size."""
    found = available()
    budget = config.budgets[0]
    rows: list[dict[str, Any]] = []
    sides: list[tuple[str, int, Callable[[list[dict[str, Any]]], Any]]] = []
    if found["nanobot"]:
        sides.append(("nanobot (get_history + fit_to_budget)", config.peer_n,
                      lambda d: NanobotSide(d, SYSTEM_PROMPT, budget, encoding)))
    if found["llamaindex"]:
        sides.append(("LlamaIndex ChatMemoryBuffer", config.llamaindex_n,
                      lambda d: LlamaIndexSide(d, SYSTEM_PROMPT, budget, encoding)))
    for name, n, make in sides:
        log(f"{name} at {n:,} messages")
        dicts = coding_agent_transcript(n, config.seed)
        side = make(dicts)
        side.turn()
        reps = max(1, min(config.reps, 3 if "Llama" in name else config.reps))
        times, window = [], []
        for d in extra[:reps]:
            side.append(d)
            elapsed, window = _timed(side.turn)
            times.append(elapsed)
        check = check_dict_window(name, window, encoding, budget)
        ours, built, _, _ = ctxcore_next_turn(dicts, extra[:reps], budget, "dict")
        lc, _ = langchain_next_turn(dicts, extra[:reps], budget, MemoizedCl100kCounter(encoding))
        rows.append({"peer": name, "n": n, "peer_s": _median(times), "ctxcore_dict_s": _median(ours),
                     "langchain_memo_s": _median(lc), "window": check,
                     "ctxcore_window": check_ctxcore_output(built, encoding, budget)})
    return rows


# ----------------------------------------------------------------- report


def _fmt(value: float, unit: str) -> str:
    if unit == "bytes":
        return f"{value / 1e6:.2f} MB"
    return f"{value * 1000:.3f} ms" if value < 1 else f"{value:.2f} s"


def replay_bound(rep: dict[str, Any]) -> str:
    """The sentence under the table that says how far goal 2 can go: LangChain's replay over the shared tokenization."""
    return (f"Goal 2's bound: tokenizing the replay's {rep['final_messages']:,} messages once (what both sides must do, "
            f"with the same encoder) takes {_fmt(rep['shared_tokenization_s'], 's')}; LangChain's whole replay takes "
            f"{_fmt(rep['langchain_s'], 's')}, so no build, however cheap, could be more than {rep['bound']:.2f}× faster "
            "than it here (ctxcore's replay beyond the tokenization: "
            f"{_fmt(rep['ctxcore_s'] - rep['shared_tokenization_s'], 's')}, LangChain's: "
            f"{_fmt(rep['langchain_s'] - rep['shared_tokenization_s'], 's')}).")


def render(results: Results) -> str:
    """The Markdown written between the ``bench:perf`` markers."""
    rows = [[t.id, t.name, _fmt(t.ctxcore, t.unit), f"{_fmt(t.reference, t.unit)} ({t.reference_name})",
             f"{t.ratio:,.2f}×", f"{t.op} {t.goal:g}× ({t.ratio_meaning})", "✅ met" if t.met else "❌ not met"]
            for t in results.targets]
    table = markdown_table(["#", "goal", "ctxcore", "reference", "measured", "goal", "met"], rows, "rlrrrll")
    cell_rows = [[f"{c['n']:,}", f"{c['budget']:,}", c["form"], _fmt(c["ctxcore_s"], "s"), _fmt(c["langchain_memo_s"], "s"),
                  f"{c['ratio']:,.2f}×", f"{c['ctxcore_window']['messages']} / {c['langchain_window']['messages']}"]
                 for c in results.cells]
    cells = markdown_table(["messages", "budget", "input", "ctxcore", "LangChain memoized", "ratio", "window (ctxcore / LangChain)"],
                           cell_rows, "rrlrrrr")
    peer_rows = [[p["peer"], f"{p['n']:,}", _fmt(p["peer_s"], "s"), _fmt(p["ctxcore_dict_s"], "s"), _fmt(p["langchain_memo_s"], "s"),
                  f"{p['window']['messages']} msgs / {p['window']['tokens']:,} tok"
                  + ("" if p["window"]["within_budget"] else " (over budget)"),
                  f"{p['ctxcore_window']['messages']} msgs / {p['ctxcore_window']['tokens']:,} tok"]
                 for p in results.peers]
    peers = markdown_table(["peer", "messages", "peer next turn", "ctxcore (dict)", "LangChain memoized", "peer window", "ctxcore window"],
                           peer_rows, "lrrrrll") if peer_rows else "(no peer installed)"
    m, c, k = results.machine, results.config, results.checks
    bound = replay_bound(k["replay"])
    if "langchain_uncached_s" not in k:  # --next-turn-only
        return "\n".join([f"Command: `{results.command}` — {m['date']}, commit `{m['commit']}` (goals 1 and 2 only).", "",
                          table, "", bound, "", cells, "", f"- Machine: {m['cpu']}, load average {m['load_average']}."])
    unc = ", ".join(f"{_fmt(v, 's')} at {int(n):,}" for n, v in k["langchain_uncached_s"].items())
    return "\n".join([
        f"Command: `{results.command}` — {m['date']}, commit `{m['commit']}`.",
        "",
        table,
        "",
        bound,
        "",
        "Next turn, every cell of goal 1 (medians of "
        f"{c['reps']} builds; windows in messages, within the budget by LangChain's exact counter):",
        "",
        cells,
        "",
        "Peers (next turn, 8k budget; every window checked legal; tokens by the same independent count):",
        "",
        peers,
        "",
        f"- Workload: `coding_agent_transcript(n, seed={c['seed']})` "
        f"({k['workload_characters'] / 1e6:.1f} MB of message text at {c['sizes'][-1]:,} messages), "
        "tiktoken cl100k_base everywhere. LangChain with the uncached counter (one call): " + unc + ".",
        f"- Machine: {m['cpu']}, {m['cpus']} CPUs (load average {m['load_average']}), {m['platform']}, "
        f"Python {m['python']}, " + ", ".join(f"{d} {v}" for d, v in m["versions"].items()) + ".",
    ])


def _sizes(text: str) -> tuple[int, ...]:
    """``--cells 200`` or ``--cells 200,2000``: history sizes, each > 0."""
    try:
        sizes = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected sizes like 200 or 200,2000, got {text!r}") from None
    if not sizes or min(sizes) <= 0:
        raise argparse.ArgumentTypeError(f"sizes must be positive, got {text!r}")
    return sizes


def render_cells(cells: list[dict[str, Any]]) -> str:
    """Goal 1's cells as a table: both sides' median next turn and the ratio (goal: >= 2)."""
    rows = ["| messages | budget | input | ctxcore | LangChain memoized | LangChain / ctxcore |", "|---|---|---|---|---|---|"]
    for c in cells:
        rows.append(f"| {c['n']:,} | {c['budget']:,} | {c['form']} | {c['ctxcore_s'] * 1e3:.3f} ms | "
                    f"{c['langchain_memo_s'] * 1e3:.3f} ms | {c['ratio']:.2f}x |")
    return "\n".join(rows)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark, print the tables, and write the docs section and the JSON results."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="CI smoke sizes (300 messages, one repetition); writes nothing unless --doc/--json")
    parser.add_argument("--doc", type=Path, default=None, help=f"page with the bench:{SECTION} markers (default {DOC.relative_to(ROOT)})")
    parser.add_argument("--json", type=Path, default=None, help=f"raw results (default {JSON_OUT.relative_to(ROOT)})")
    parser.add_argument("--no-write", action="store_true", help="print only")
    parser.add_argument("--next-turn-only", action="store_true",
                        help="goals 1 and 2 only (the next-turn cells and the replay); prints, writes nothing")
    parser.add_argument("--cells", type=_sizes, default=None, metavar="N[,N...]",
                        help="goal 1's cells at these history sizes only (both budgets, both forms, LangChain memoized "
                        "in the same process); prints the cell table, writes nothing")
    args = parser.parse_args(argv)
    config = Config.quick() if args.quick else Config()
    if args.cells is not None:
        config = replace(config, sizes=args.cells, cells_only=True)
        args.no_write = True
    if args.next_turn_only:
        config = replace(config, next_turn_only=True)
        args.no_write = True
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
    body = render_cells(results.cells) if config.cells_only else render(results)
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
