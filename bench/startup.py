"""Start-up cost: ``import ctxcore`` and ``ctx --help`` against ``import pydantic; pydantic.BaseModel``.

Usage: ``.venv/bin/python bench/startup.py [--rounds N] [--write docs/startup.md]`` (run by ``make bench``).

Each round starts one fresh interpreter per case, the cases taking turns, and
reads the child's CPU time (user + system, from ``getrusage``), so a busy
machine slows every case alike and the ratios of one run compare like with
like. The median of the rounds is reported. The bounds: ``import ctxcore`` at
most 1.5 times the pydantic baseline, ``ctx --help`` at most 2 times; the
other rows are for information. Exits 1 when a bounded row is over.

``ctx --help`` runs as a user's does, with the listing of plugin-added
commands cached (a cache directory of the run's own, filled by the warm-up
round). The information row "first run after a plugin change" empties its own
cache directory before every run, so each one loads the plugins and writes
the listing, as the first ``ctx --help`` after installing a plugin does.

The information row "first build in a fresh interpreter" is a CLI call's or a
serverless handler's first request: ``Pipeline.from_string`` of a system
prompt, the history and a token budget (the approximate counter), then one
``build`` of a one-message conversation. It pays for loading the plugins,
ctxcore's pydantic models, YAML, structlog and the first marker scan.

Compiled modules are cached as after an install: every child writes and reads
its ``.pyc`` files in a directory of the run's own (``PYTHONPYCACHEPREFIX``,
filled by the warm-up round), even where ``PYTHONDONTWRITEBYTECODE`` is set,
so no row pays for compiling source.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from report_table import write_section  # noqa: E402


@dataclass(frozen=True)
class Case:
    """One start-up measured in a fresh interpreter."""

    label: str
    argv: tuple[str, ...]
    bound: float | None  # at most this many times the baseline, or None for information
    empty_cache: bool = False  # start every run with no cached listing of plugin commands


FIRST_BUILD = '''from ctxcore import Pipeline
Pipeline.from_string("""
version: 1
model: {context_window: 8000}
counter: {type: approximate}
providers:
  - {type: static_prompt, text: You are a helpful assistant.}
  - {type: history}
filters:
  - {type: token_budget}
""").build({"messages": [{"role": "user", "content": "Hello, who are you?"}]})
'''

BASELINE = Case("`import pydantic; pydantic.BaseModel` (baseline)", ("-c", "import pydantic; pydantic.BaseModel"), None)
CASES = (
    BASELINE,
    Case("`import ctxcore`", ("-c", "import ctxcore"), 1.5),
    Case("`ctx --help`", ("-m", "ctxcore", "--help"), 2.0),
    Case("`ctx --help`, first run after a plugin change", ("-m", "ctxcore", "--help"), None, empty_cache=True),
    Case("`from ctxcore import ContextBuilder, Message` (first use)", ("-c", "from ctxcore import ContextBuilder, Message"), None),
    Case("first build in a fresh interpreter", ("-c", FIRST_BUILD), None),
)


def cpu_of(case: Case, cache_home: Path) -> float:
    """CPU seconds (user + system) of one fresh ``python argv`` run of ``case``."""
    cache = cache_home / ("empty" if case.empty_cache else "kept")
    if case.empty_cache:
        shutil.rmtree(cache, ignore_errors=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CTXCORE_") and k != "PYTHONDONTWRITEBYTECODE"}
    env["XDG_CACHE_HOME"] = str(cache)
    env["PYTHONPYCACHEPREFIX"] = str(cache_home / "pycache")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run([sys.executable, *case.argv], env=env, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(case.argv)} failed:\n{done.stderr}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def measure(rounds: int) -> dict[Case, float]:
    """Median CPU seconds of each case over ``rounds`` interleaved rounds (one warm-up round first)."""
    samples: dict[Case, list[float]] = {case: [] for case in CASES}
    with tempfile.TemporaryDirectory(prefix="ctxcore-startup-") as directory:
        for case in CASES:  # warm the file cache, the .pyc files and the listing of plugin commands
            cpu_of(case, Path(directory))
        for _ in range(rounds):
            for case in CASES:
                samples[case].append(cpu_of(case, Path(directory)))
    return {case: statistics.median(values) for case, values in samples.items()}


def table(medians: dict[Case, float]) -> tuple[str, bool]:
    """The Markdown table and whether every bounded row is within its bound."""
    base = medians[BASELINE]
    lines = ["| start-up | CPU ms (median) | × baseline | bound | |", "| --- | ---: | ---: | ---: | --- |"]
    ok = True
    for case, cpu in medians.items():
        ratio = cpu / base
        met = case.bound is None or ratio <= case.bound
        ok = ok and met
        bound = f"≤ {case.bound:g}×" if case.bound is not None else ""
        verdict = "" if case.bound is None else ("met" if met else "**over**")
        lines.append(f"| {case.label} | {cpu * 1000:.0f} | {ratio:.2f}× | {bound} | {verdict} |")
    return "\n".join(lines), ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9, help="interleaved rounds (median reported)")
    parser.add_argument("--write", metavar="PAGE", help="write the table into the bench:startup section of PAGE")
    args = parser.parse_args(argv)
    text, ok = table(measure(args.rounds))
    text += f"\n\n{sys.version.split()[0]}, {args.rounds} rounds, `python bench/startup.py`."
    print(text)
    if args.write:
        write_section(args.write, "startup", text)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
