"""Prompt caching under each provider's documented rules: ctxcore (cache: auto / off) against LangChain's sliding window.

Replays the coding-agent transcript of ``bench/cache_economics.py`` (same
generator, budget and exact cl100k counts) call by call, and bills every request
with :mod:`ctxcore.tools.cache_rules`:

- OpenAI: automatic caching, prompts of >= 1,024 tokens, the cached part in
  128-token increments, at gpt-4o's cached-input price;
- Anthropic: reads only up to ``cache_control`` breakpoints (20-block lookback),
  writes at 1.25x the input price (2x up to a ``ttl: 1h`` breakpoint), reads at
  0.1x, entries living 5 minutes (or an hour) unless read, on claude-sonnet's
  input price.

The transcript gets timestamps (15 s per model call or tool step, 60 s between
turns, a 10-minute pause every 10th turn) so lifetimes matter; the main rows are
repeated without the pauses. Three request builders are compared:

- ctxcore, its water marks (``compaction`` defaults for an Anthropic target +
  ``token_budget``), ``target: {provider: anthropic, cache: auto}``: the
  breakpoints ctxcore places; also without the turn breakpoint
  (``cache_turn_ttl: off``), with ``cache_ttl: 1h`` and with the water marks
  other targets default to;
- the same pipeline with ``cache: off``: no breakpoints;
- LangChain ``trim_messages`` per call with the breakpoints a user places by
  hand: the end of the system prompt and the end of the request.

    .venv/bin/python bench/caching_rules.py            # full run, writes docs/caching.md + JSON
    .venv/bin/python bench/caching_rules.py --quick    # small smoke run, prints only
    .venv/bin/python bench/caching_rules.py --seed 1   # another transcript, prints only

On a terminal a progress bar over the replayed calls runs on stderr (nothing in a pipe or with ``--quiet``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from bench_progress import progress_bar  # noqa: E402
from bench_rows import report_row  # noqa: E402
from cache_economics import langchain_requests, pipeline_dict  # noqa: E402
from report_table import markdown_table, write_section  # noqa: E402
from workload import coding_agent_transcript  # noqa: E402

from ctxcore import Pipeline  # noqa: E402
from ctxcore.engine.budget import CachedCounter  # noqa: E402
from ctxcore.tools.replay import (  # noqa: E402
    DEFAULT_PRICES,
    ReplayResult,
    RequestStats,
    anthropic_minimum,
    builder_requests,
    call_points,
    replay_requests,
)

OnCall = Callable[[int, int], None]

DOCS = ROOT / "docs" / "caching.md"
RESULTS = ROOT / "bench" / "results" / "caching_rules.json"
SECTION = "caching-rules"
GOALS = {"cost_ratio": 3.0, "cached_share": 0.90, "over_budget": 0}
#: the water marks other targets default to, shown beside the Anthropic default for comparison.
OTHER_MARKS = (0.95, 0.75)


def timestamps(messages: Sequence[dict[str, Any]]) -> list[float]:
    """Synthetic times: 15 s per step, 60 s before each new turn, a 10-minute pause before every 10th turn."""
    out: list[float] = []
    now, turn, previous = 0.0, 0, None
    for m in messages:
        if m["role"] == "user" and previous != "user":
            turn += 1
            now += 600.0 if turn % 10 == 0 else 60.0
        else:
            now += 15.0
        out.append(now)
        previous = m["role"]
    return out


def _steady(times: list[float]) -> list[float]:
    """The same session without the 10-minute pauses (every gap at most 60 s): nothing expires."""
    out, now, previous = [], 0.0, None
    for t in times:
        now += 15.0 if previous is None else min(t - previous, 60.0)
        out.append(now)
        previous = t
    return out


def run_ctxcore(messages: list[dict[str, Any]], budget: int, times: list[float], cache: str, host: Any = None,
                marks: tuple[float, float] | None = None, extends: list[bool] | None = None, on_call: OnCall | None = None,
                **target: Any) -> ReplayResult:
    """ctxcore with its water marks (default, or ``marks`` = trigger/target ratios), rendered for Anthropic with ``cache``.

    ``target`` adds target settings (``cache_ttl="1h"``...); ``extends``, when
    given, receives for each call whether its request extends the previous one;
    ``on_call`` is told of each replayed call.
    """
    spec = pipeline_dict(budget, *(marks or (None, None)))
    spec["target"] = {"provider": "anthropic", "cache": cache, **target}
    builder = Pipeline.from_dict(spec, host=host).builder()
    request = builder_requests(builder, messages)
    sent: list[dict[str, Any]] = []

    def logged(history: int) -> RequestStats:
        nonlocal sent
        stats = request(history)
        if extends is not None:
            extends.append(bool(sent) and stats.rendered[: len(sent)] == sent)
        sent = stats.rendered
        return stats

    return replay_requests(messages, logged, times=times, anthropic_min_tokens=anthropic_minimum(builder),
                           on_call=on_call)


def moved_breakpoints(result: ReplayResult, extends: Sequence[bool]) -> int:
    """Calls that extend the previous request but do not read all it cached (its breakpoints moved away).

    Meaningful without idle pauses, where nothing expires: each such call
    writes again what the previous one had already written.
    """
    calls = result.calls
    return sum(1 for k in range(1, len(calls)) if extends[k] and calls[k].anthropic_read_tokens
               < calls[k - 1].anthropic_read_tokens + calls[k - 1].anthropic_write_tokens)


def run_langchain(messages: list[dict[str, Any]], budget: int, times: list[float], on_call: OnCall | None = None) -> ReplayResult:
    """LangChain's sliding window per call, with breakpoints at the end of the system prompt and of the request."""
    from ctxcore_counters import TiktokenCounter

    plain = langchain_requests(messages, budget, CachedCounter(TiktokenCounter("cl100k_base")))

    def request(n: int) -> RequestStats:
        stats = plain(n)
        last_system = max((i for i, m in enumerate(stats.rendered) if m.get("role") == "system"), default=None)
        marks = tuple(sorted({len(stats.rendered) - 1, *([last_system] if last_system is not None else [])}))
        return RequestStats(**{**stats.__dict__, "cache_breakpoints": marks})

    return replay_requests(messages, request, times=times, on_call=on_call)


def row(result: ReplayResult) -> dict[str, Any]:
    """The numbers one line of the table shows."""
    t, p = result.totals, result.providers
    return {
        "calls": t["calls"], "turns": t["turns"], "input_tokens": t["input_tokens"], "over_budget": t["over_budget"],
        "mean_fill": t["mean_fill"],
        "openai_cached_share": p["openai"]["cached_share"], "openai_cost": p["openai"]["cost"],
        "anthropic_cached_share": p["anthropic"]["cached_share"], "anthropic_written": p["anthropic"]["written_tokens"],
        "anthropic_cost": p["anthropic"]["cost"], "anthropic_cost_without_cache": p["anthropic"]["cost_without_cache"],
        "openai_cost_without_cache": p["openai"]["cost_without_cache"],
    }


def run(n: int, budget: int, command: str, host: Any = None, seed: int = 0, *, quiet: bool = False) -> dict[str, Any]:
    """The replays (the main ones also without idle pauses, and with 1h breakpoints) and the goals.

    A progress bar over the replayed calls runs on stderr on a terminal unless ``quiet``.
    """
    messages = coding_agent_transcript(n, seed)
    times, steady = timestamps(messages), _steady(timestamps(messages))
    started = time.perf_counter()
    extends: list[bool] = []
    other = f"water marks {OTHER_MARKS[0]}/{OTHER_MARKS[1]}"
    with progress_bar("caching rules", 10 * len(call_points(messages)), quiet=quiet) as advance:
        def step(done: int, total: int) -> None:
            advance(1)

        rows = {
            "ctxcore, cache: auto": row(run_ctxcore(messages, budget, times, "auto", host, on_call=step)),
            "ctxcore, cache: off": row(run_ctxcore(messages, budget, times, "off", host, on_call=step)),
            "LangChain trim_messages, breakpoints on system + end": row(run_langchain(messages, budget, times, step)),
            "ctxcore, cache: auto, cache_turn_ttl: off": row(run_ctxcore(messages, budget, times, "auto", host,
                                                                         cache_turn_ttl="off", on_call=step)),
            "ctxcore, cache: auto, cache_ttl: 1h": row(run_ctxcore(messages, budget, times, "auto", host, cache_ttl="1h", on_call=step)),
            f"ctxcore, cache: auto, {other}": row(run_ctxcore(messages, budget, times, "auto", host, OTHER_MARKS, on_call=step)),
            "ctxcore, cache: auto, no idle pauses": row(steady_auto := run_ctxcore(messages, budget, steady, "auto", host,
                                                                                   extends=extends, on_call=step)),
            "ctxcore, cache: auto, cache_turn_ttl: off, no idle pauses":
                row(run_ctxcore(messages, budget, steady, "auto", host, cache_turn_ttl="off", on_call=step)),
            "ctxcore, cache: auto, cache_ttl: 1h, no idle pauses":
                row(run_ctxcore(messages, budget, steady, "auto", host, cache_ttl="1h", on_call=step)),
            "LangChain, no idle pauses": row(run_langchain(messages, budget, steady, step)),
        }
    lc = rows["LangChain trim_messages, breakpoints on system + end"]
    goals: dict[str, tuple[Any, str, bool]] = {}
    for label, name in (("", "ctxcore, cache: auto"), (", cache_ttl: 1h", "ctxcore, cache: auto, cache_ttl: 1h")):
        r = rows[name]
        ratio = lc["anthropic_cost"] / r["anthropic_cost"] if r["anthropic_cost"] else float("inf")
        goals.update({
            f"cost, LangChain / ctxcore (Anthropic rules{label})": (ratio, f">= {GOALS['cost_ratio']}",
                                                                    ratio >= GOALS["cost_ratio"]),
            f"cached share, ctxcore (Anthropic rules{label})": (r["anthropic_cached_share"], f">= {GOALS['cached_share']}",
                                                                r["anthropic_cached_share"] >= GOALS["cached_share"]),
            f"requests over budget, ctxcore{label}": (r["over_budget"], "0", r["over_budget"] == 0),
        })
    moved = moved_breakpoints(steady_auto, extends)
    goals["breakpoints moved while the prefix holds (calls that extend the previous one but do not read all it "
          "cached, no idle pauses)"] = (moved, "0", moved == 0)
    return {"command": command, "messages": n, "seed": seed, "budget": budget, "rows": rows, "goals": goals,
            "prices": {k: v.__dict__ for k, v in DEFAULT_PRICES.items()}, "seconds": round(time.perf_counter() - started, 1)}


def markdown(data: dict[str, Any]) -> str:
    """The docs section between the bench:caching-rules markers."""
    first = next(iter(data["rows"].values()))
    op, an = data["prices"]["openai"], data["prices"]["anthropic"]
    lines = [
        f"Command: `{data['command']}` — a {data['messages']}-message coding-agent transcript (seed {data['seed']}, "
        f"{first['calls']} model "
        f"calls in {first['turns']} turns), {data['budget']:,}-token input budget, exact cl100k counts. OpenAI rules "
        f"at ${op['input']}/M input, ${op['read']}/M cached (gpt-4o); Anthropic rules at ${an['input']}/M input, "
        f"${an['write']}/M written, ${an['read']}/M read (claude-sonnet). Cached share = tokens served from the cache "
        "/ all input tokens.",
        "",
    ]
    table = [
        [name, f"{r['input_tokens']:,}", f"{r['openai_cached_share']:.3f}", f"${r['openai_cost']:.2f}",
         f"{r['anthropic_cached_share']:.3f}", f"{r['anthropic_written']:,}", f"${r['anthropic_cost']:.2f}", r["over_budget"],
         f"{r['mean_fill']:.3f}"]
        for name, r in data["rows"].items()
    ]
    lines.append(markdown_table(
        ["", "input tokens", "OpenAI cached share", "OpenAI cost", "Anthropic cached share", "Anthropic written tokens",
         "Anthropic cost", "over budget", "mean fill"], table, align="lrrrrrrrr"))
    lines += ["", markdown_table(["goal", "measured", "required", "met"], [
        [name, f"{v:.3f}" if isinstance(v, float) else v, req, "yes" if met else "**no**"]
        for name, (v, req, met) in data["goals"].items()], align="lrrl")]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: see the module docstring."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small transcript and budget, print only")
    parser.add_argument("--messages", type=int, default=None, help="transcript length (default 2000; 160 with --quick)")
    parser.add_argument("--budget", type=int, default=None, help="input budget (default 32000; 6000 with --quick)")
    parser.add_argument("--seed", type=int, default=0, help="transcript seed (default 0; the docs table uses 0)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar on stderr (there is none in a pipe anyway)")
    parser.add_argument("--no-write", action="store_true", help="print only; do not write docs or the JSON")
    args = parser.parse_args(argv)
    n = args.messages or (160 if args.quick else 2000)
    budget = args.budget or (6000 if args.quick else 32000)
    command = ("python bench/caching_rules.py " + " ".join(argv if argv is not None else sys.argv[1:])).strip()
    data = run(n, budget, command, seed=args.seed, quiet=args.quiet)
    text = markdown(data)
    print(text)
    if not args.quick:
        for name, (value, required, met) in data["goals"].items():
            report_row("caching_rules.py", name, met, f"{value:.3f} {required}" if isinstance(value, float) else f"{value} {required}")
    if not (args.quick or args.no_write or args.seed):
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(json.dumps(data, indent=2, default=str) + "\n", encoding="utf-8")
        write_section(DOCS, SECTION, text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
