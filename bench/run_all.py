"""Run every bench script, then list every row that missed its bound (``make bench``).

Usage: ``.venv/bin/python bench/run_all.py [--only NAME ...] [--list]``

Each script runs in turn with its output shown as it comes (on a terminal,
their progress bars too) and ``CTXCORE_BENCH_VIA_MAKE=1`` (the scripts then
write their docs tables and name ``make bench`` as the command). A script
reports the rows it judged through bench/bench_rows.py; a failing script
does not stop the run. At the end the runner prints one line per missed row,
and per script that failed without naming a row, and exits 1 if there is any.

The integration benches run in their own venvs (``.venv-ctxcore-<name>``,
made by ``make integration-venvs``); without that venv they are skipped with a
note, as is a script that is not present.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))

from bench_rows import ROWS_ENV  # noqa: E402

#: the scripts that run in the main venv, in order (the performance guard first).
SCRIPTS = ("perf.py", "startup.py", "counter_accuracy.py", "cache_economics.py", "caching_rules.py",
           "thread_growth.py", "thread_load.py", "retention.py")


@dataclass(frozen=True)
class Job:
    """One bench script and the interpreter that runs it."""

    name: str
    python: Path
    script: Path


@dataclass
class Outcome:
    """What one job reported: its exit code and the rows it judged."""

    job: Job
    code: int
    rows: list[dict] = field(default_factory=list)

    @property
    def missed(self) -> list[str]:
        """One line per missed row; a failure without a missed row is a line of its own."""
        lines = [f"{self.job.name}: {r['row']}" + (f" ({r['detail']})" if r.get("detail") else "")
                 for r in self.rows if not r["met"]]
        if self.code != 0 and not lines:
            lines.append(f"{self.job.name}: exited {self.code} without naming a row (see its output above)")
        return lines


def integration_jobs(root: Path = ROOT) -> tuple[list[Job], list[str]]:
    """The integration benches whose venv exists, and a note per bench skipped for want of one."""
    jobs, skipped = [], []
    for project in sorted((root / "plugins" / "integrations").glob("*/pyproject.toml")):
        name = project.parent.name
        python = root / f".venv-{name}" / "bin" / "python"
        stem = "integration_" + name.removeprefix("ctxcore-").replace("-", "_")
        for script in (BENCH / f"{stem}.py", BENCH / f"{stem}_session.py"):
            if not script.exists():
                continue
            if python.exists():
                jobs.append(Job(script.name, python, script))
            else:
                skipped.append(f"{script.name}: skipped, no {python.parent.parent.name} (make integration-venvs)")
    return jobs, skipped


def run(job: Job) -> Outcome:
    """Run ``job`` with the row file set; its rows are read back afterwards."""
    print(f"== {job.name}", flush=True)
    with tempfile.TemporaryDirectory(prefix="ctxcore-bench-") as tmp:
        rows_file = Path(tmp) / "rows.jsonl"
        env = {**os.environ, "CTXCORE_BENCH_VIA_MAKE": "1", ROWS_ENV: str(rows_file)}
        code = subprocess.run([str(job.python), str(job.script)], cwd=ROOT, env=env, check=False).returncode
        rows = [json.loads(line) for line in rows_file.read_text(encoding="utf-8").splitlines()] if rows_file.exists() else []
    return Outcome(job, code, rows)


def summary(outcomes: list[Outcome], skipped: list[str]) -> tuple[str, bool]:
    """The closing report and whether everything was met."""
    missed = [line for o in outcomes for line in o.missed]
    judged = sum(len(o.rows) for o in outcomes)
    lines = [f"== make bench: {len(outcomes)} scripts, {judged} judged rows, {len(missed)} missed"]
    lines += [f"   note: {note}" for note in skipped]
    lines += [f"   MISSED {line}" for line in missed]
    return "\n".join(lines), not missed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", metavar="NAME", help="only these scripts (e.g. counter_accuracy.py)")
    parser.add_argument("--list", action="store_true", help="print the scripts that would run, and stop")
    args = parser.parse_args(argv)
    jobs = [Job(name, Path(sys.executable), BENCH / name) for name in SCRIPTS]
    skipped = [f"{j.name}: not present, skipped" for j in jobs if not j.script.exists()]
    integrations, no_venv = integration_jobs()
    jobs = [j for j in jobs if j.script.exists()] + integrations
    skipped += no_venv
    if args.only:
        jobs = [j for j in jobs if j.name in args.only or j.script.stem in args.only]
        skipped = [note for note in skipped if note.split(":", 1)[0] in args.only]
    if args.list:
        print("\n".join(f"{j.python} {j.script.relative_to(ROOT)}" for j in jobs))
        return 0
    outcomes = [run(job) for job in jobs]
    text, ok = summary(outcomes, skipped)
    print(text, flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
