"""Goal 1's next turn with cold CPU caches, counted instead of timed: simulated cache misses per build.

Usage: ``.venv/bin/python bench/cold_cache.py [--messages 200] [--budget 8000] [--form dict|Message]
[--builds 4] [--side both|ctxcore|langchain|floor]`` (needs ``valgrind``; a few minutes per side).

bench/perf.py times every next-turn build after ``gc.collect()``, which walks
the whole heap and leaves the CPU caches holding none of what the build
needs; at 200 messages a build then costs two to three times its warm time,
and how much depends on how many distinct cache lines (code and data) the
build touches, which wall-clock times on a shared machine show only through
tens of percent of noise. This script runs each side's next turns (the same
transcript, growth and encoding as bench/perf.py) under valgrind's callgrind
with its cache simulator, collecting only inside the timed call (it is made
through ``itertools.starmap``, whose C iterator callgrind toggles on), and
prints per build: instructions, first-level misses (instruction, data), and
misses of a 512 KB last level (a Zen core's L2: what must come from L3 or
memory after the collection). The figures are deterministic for a given
commit, so two designs can be compared on one loaded machine; they are a
model, not a measurement: the time of a miss is not simulated. ``--side floor``
counts bench/floor.py's floor (the least a next turn must do) the same way.
"""

from __future__ import annotations

import argparse
import gc
import itertools
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

BENCH = Path(__file__).resolve().parent
#: the simulated last level: 512 KB, 8-way, 64-byte lines
LAST_LEVEL = "524288,8,64"
EVENTS = ("Ir", "I1mr", "D1mr", "D1mw", "ILmr", "DLmr", "DLmw")


def child(side: str, messages: int, budget: int, form: str, builds: int) -> None:
    """The builds callgrind counts: one warm next turn, then ``builds`` next turns each after a collection."""
    sys.path.insert(0, str(BENCH))
    import perf
    from langchain_side import MemoizedCl100kCounter
    from workload import coding_agent_transcript

    dicts = coding_agent_transcript(messages, seed=0)
    extra = perf.growth(builds + 1, 0)
    pipeline = perf.make_pipeline(budget)
    encoding = perf.encoding_of(pipeline.builder().counter)
    perf.warm_up(encoding)
    if side == "ctxcore":
        history = perf.history_of(dicts, form)
        state = {"messages": history}
        pipeline.build(state)
        for i, d in enumerate(extra):
            history.append(perf.item_of(d, form, i))
            gc.collect()
            if i:  # the first one warms the next-turn path itself
                list(itertools.starmap(pipeline.build, [(state,)]))
            else:
                pipeline.build(state)
    elif side == "floor":
        from floor import FloorBuilder

        history = perf.history_of(dicts, form)
        builder = FloorBuilder(perf.SYSTEM_PROMPT, budget, pipeline.builder().counter)
        builder.build(history)
        for i, d in enumerate(extra):
            history.append(perf.item_of(d, form, i))
            gc.collect()
            if i:
                list(itertools.starmap(builder.build, [(history,)]))
            else:
                builder.build(history)
    else:
        lc = perf.to_langchain(dicts, perf.SYSTEM_PROMPT)
        counter = MemoizedCl100kCounter(encoding)
        perf.trim(lc, budget, counter)
        for i, m in enumerate(perf.to_langchain(extra)):
            lc.append(m)
            gc.collect()
            if i:
                list(itertools.starmap(perf.trim, [(lc, budget, counter)]))
            else:
                perf.trim(lc, budget, counter)


def totals(out_file: Path) -> dict[str, int]:
    """The event totals of a callgrind output file (its ``events:`` and ``summary:`` lines)."""
    names: list[str] = []
    values: list[int] = []
    for line in out_file.read_text(encoding="utf-8", errors="replace").splitlines():
        if line.startswith("events:"):
            names = line.split()[1:]
        elif line.startswith(("summary:", "totals:")):
            values = [int(v) for v in line.split()[1:]]
    if not names or len(values) != len(names):
        raise SystemExit(f"bench/cold_cache.py: no event totals in {out_file}")
    return dict(zip(names, values, strict=True))


def measure(side: str, args: argparse.Namespace) -> dict[str, float]:
    """Run one side under callgrind; its events per build."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        command = [
            "valgrind", "--tool=callgrind", "--cache-sim=yes", f"--LL={LAST_LEVEL}", "--toggle-collect=starmap_next",
            f"--callgrind-out-file={out}", sys.executable, __file__, "--child", side,
            "--messages", str(args.messages), "--budget", str(args.budget), "--form", args.form, "--builds", str(args.builds),
        ]
        done = subprocess.run(command, capture_output=True, text=True, check=False, env={**os.environ, "PYTHONHASHSEED": "0"})
        if done.returncode != 0:
            raise SystemExit(f"bench/cold_cache.py: the {side} run failed (exit {done.returncode}):\n{done.stderr[-2000:]}")
        events = totals(out)
    return {k: events.get(k, 0) / args.builds for k in EVENTS}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=200)
    parser.add_argument("--budget", type=int, default=8_000)
    parser.add_argument("--form", choices=("dict", "Message"), default="dict")
    parser.add_argument("--builds", type=int, default=4, help="next turns counted per side (after one uncounted)")
    parser.add_argument("--side", choices=("both", "ctxcore", "langchain", "floor"), default="both")
    parser.add_argument("--child", choices=("ctxcore", "langchain", "floor"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.messages, args.budget, args.form, args.builds)
        return 0
    if shutil.which("valgrind") is None:
        print("bench/cold_cache.py needs valgrind (apt-get install valgrind); nothing measured", file=sys.stderr)
        return 2
    sides = ("ctxcore", "langchain") if args.side == "both" else (args.side,)
    results = {side: measure(side, args) for side in sides}
    print(f"{args.messages} messages, budget {args.budget}, {args.form} input; per next-turn build after gc.collect() "
          f"(callgrind, last level {LAST_LEVEL.split(',')[0]} bytes):")
    print(f"{'side':10s} {'instructions':>14s} {'L1 i-miss':>10s} {'L1 d-miss':>10s} {'LL misses':>10s} (code / data)")
    for side, r in results.items():
        ll = r["ILmr"] + r["DLmr"] + r["DLmw"]
        print(f"{side:10s} {r['Ir']:>14,.0f} {r['I1mr']:>10,.0f} {r['D1mr'] + r['D1mw']:>10,.0f} {ll:>10,.0f} "
              f"({r['ILmr']:,.0f} / {r['DLmr'] + r['DLmw']:,.0f})")
    if len(results) == 2:
        ours, theirs = results["ctxcore"], results["langchain"]
        ll = {s: r["ILmr"] + r["DLmr"] + r["DLmw"] for s, r in results.items()}
        print(f"LangChain / ctxcore: instructions {theirs['Ir'] / ours['Ir']:.2f}x, last-level misses "
              f"{ll['langchain'] / ll['ctxcore']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
