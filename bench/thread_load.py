"""Load test of the shared thread stores: many worker processes running agent turns on PostgreSQL and on Redis.

``python bench/thread_load.py`` starts a throwaway PostgreSQL cluster and a
throwaway ``redis-server`` (the test harnesses in ``ctxcore.testing.harness``),
then for each backend forks ``processes`` workers. Each worker runs ``turns``
turns on each of its ``threads`` threads, round-robin; a turn is what an agent
does: open the thread (load), add the user's message, build, add an assistant
tool call, a ~1.5 KB tool result and the answer, build, save. A save refused
with ``StaleWrite`` is retried on the reopened thread.

Contention is designed, not accidental: the last ``shared`` threads of each
worker are shared with its partner (workers 0 and 1, 2 and 3, ...), every
other thread has one writer. Afterwards every thread is read back and checked:
each acknowledged turn is there exactly once (none lost, none duplicated),
whole (its four messages together), and in its writer's order; ``StaleWrite``
may only have hit shared threads. Any violation fails the run (exit 1).

It reports turns per second over the whole run and the p50/p99 latency of the
successful ``save()`` calls, and writes the table into docs/persistence.md
(section ``thread-load``). ``--quick`` runs 2 workers x 2 threads x 3 turns and
writes nothing (the smoke test runs :func:`run` the same way).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import platform
import shlex
import sys
import time
import traceback
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from bench_rows import report_row  # noqa: E402
from report_table import markdown_table, write_section  # noqa: E402

DOC = ROOT / "docs" / "persistence.md"
SECTION = "thread-load"
TOOL_RESULT = ("def handler(request):\n    return respond(request.body)\n" * 30)[:1500]

PIPELINE = """
version: 1
model: {{context_window: 200000, reserve_output_tokens: 1000}}
target: {{provider: openai}}
providers:
  - {{type: static_prompt, text: You are a coding agent. Use the read_file tool before you answer.}}
  - {{type: history}}
filters:
  - {{type: token_budget}}
threads: {threads}
"""


@dataclass(frozen=True)
class Config:
    """The workload: worker processes, threads per worker (the last ``shared`` shared with the partner), turns per thread."""

    processes: int = 8
    threads: int = 25
    turns: int = 40
    shared: int = 5

    @classmethod
    def quick(cls) -> Config:
        """The smoke sizes: 2 workers x 2 threads (one shared) x 3 turns."""
        return cls(processes=2, threads=2, turns=3, shared=1)

    def thread_ids(self, worker: int) -> list[str]:
        """The threads worker ``worker`` writes: its own, then the ones shared with its partner."""
        own = [f"w{worker}-t{j}" for j in range(self.threads - self.shared)]
        pair = worker // 2 if self.processes > 1 else worker
        return own + [f"pair{pair}-t{j}" for j in range(self.shared)]


@dataclass
class Outcome:
    """What one backend's run did and what the read-back found."""

    backend: str
    config: Config
    seconds: float = 0.0
    turns: int = 0
    saves_ms: list[float] = field(default_factory=list)
    stale_shared: int = 0
    stale_private: int = 0
    lost: int = 0
    duplicated: int = 0
    reordered: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """No lost, duplicated or reordered turn, and StaleWrite only where two writers share a thread."""
        return not (self.lost or self.duplicated or self.reordered or self.stale_private or self.problems)

    def percentile(self, q: float) -> float:
        """The ``q`` quantile (0..1) of the save latencies in ms."""
        data = sorted(self.saves_ms)
        return data[min(len(data) - 1, int(q * len(data)))] if data else 0.0


def installed_plugins() -> Any:
    """Every installed ctxcore plugin (also under pytest, whose conftest turns autoloading off for its own tests)."""
    from ctxcore.plugins.host import PluginHost

    return PluginHost.load(env={})


def turn(pipeline: Any, thread_id: str, label: str) -> float:
    """One agent turn on a freshly opened thread; returns the save's latency in ms (StaleWrite propagates)."""
    thread = pipeline.thread(thread_id)
    thread.add_user(f"user {label}")
    thread.build()
    call_id = "call_" + label.replace("-", "_").replace("/", "_")
    thread.add_response({"role": "assistant", "content": None, "tool_calls": [
        {"id": call_id, "type": "function", "function": {"name": "read_file", "arguments": f'{{"path": "{label}.py"}}'}}]})
    thread.add_tool_result(call_id, TOOL_RESULT)
    thread.build()
    thread.add_response({"role": "assistant", "content": f"answer {label}"})
    start = time.perf_counter()
    thread.save()
    return (time.perf_counter() - start) * 1000


def _worker(yaml_text: str, config: Config, worker: int, ready: Any, go: Any, out: Any) -> None:
    """A child: run every turn of this worker, then send latencies and refused saves per thread."""
    from ctxcore import Pipeline, StaleWrite

    try:
        pipeline = Pipeline.from_string(yaml_text, host=installed_plugins())
        threads = config.thread_ids(worker)
        stale = dict.fromkeys(threads, 0)
        saves: list[float] = []
        ready.put(worker)
        go.wait()
        for i in range(config.turns):
            for tid in threads:
                while True:
                    try:
                        saves.append(turn(pipeline, tid, f"{tid}/w{worker}/{i}"))
                        break
                    except StaleWrite:
                        stale[tid] += 1
        out.put({"worker": worker, "saves": saves, "stale": stale})
    except BaseException:  # noqa: B036 - reported to the parent, which fails the run
        out.put({"worker": worker, "error": traceback.format_exc()})


def _wait_ready(ready: Any, out: Any) -> bool:
    """Wait for one worker's "ready"; False when a worker reported a failure instead (the run then fails)."""
    import queue

    while True:
        try:
            ready.get(timeout=1)
            return True
        except queue.Empty:
            if not out.empty():
                return False


def _users(messages: list[Any]) -> Iterator[tuple[int, str]]:
    for k, m in enumerate(messages):
        if m.role == "user":
            yield k, m.text.removeprefix("user ")


def check(pipeline: Any, config: Config, outcome: Outcome) -> None:
    """Read every thread back: count lost, duplicated and reordered turns (see the module docstring)."""
    writers: dict[str, list[int]] = {}
    for w in range(config.processes):
        for tid in config.thread_ids(w):
            writers.setdefault(tid, []).append(w)
    for tid, ws in writers.items():
        messages = pipeline.thread(tid).messages
        seen: dict[str, int] = {}
        last: dict[int, int] = {}
        for k, label in _users(messages):
            seen[label] = seen.get(label, 0) + 1
            _, writer, index = label.rsplit("/", 2)
            w, i = int(writer[1:]), int(index)
            whole = [m.role for m in messages[k:k + 4]] == ["user", "assistant", "tool", "assistant"] and \
                messages[k + 3].text == f"answer {label}"
            if i <= last.get(w, -1) or not whole:
                outcome.reordered += 1
            last[w] = i
        expected = {f"{tid}/w{w}/{i}" for w in ws for i in range(config.turns)}
        outcome.lost += len(expected - set(seen))
        outcome.duplicated += sum(n - 1 for n in seen.values() if n > 1)
        outcome.duplicated += len(set(seen) - expected)  # a turn nobody ran is as wrong as a repeated one
        if len(messages) != 4 * len(seen):
            outcome.problems.append(f"{tid}: {len(messages)} messages for {len(seen)} turns")


def run(backend: str, threads_yaml: str, config: Config) -> Outcome:
    """Run the workload on one backend (``threads_yaml`` is its ``threads:`` mapping) and check the result."""
    from ctxcore import Pipeline

    yaml_text = PIPELINE.format(threads=threads_yaml)
    ctx = mp.get_context("fork")
    ready, go, out = ctx.Queue(), ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(yaml_text, config, w, ready, go, out)) for w in range(config.processes)]
    for p in procs:
        p.start()
    for _ in procs:  # every worker has loaded its pipeline: the clock measures turns, not imports
        if not _wait_ready(ready, out):
            break
    start = time.perf_counter()
    go.set()
    reports = [out.get(timeout=3600) for _ in procs]
    outcome = Outcome(backend, config, seconds=time.perf_counter() - start)
    for p in procs:
        p.join(timeout=60)
    shared = {tid for w in range(config.processes) for tid in config.thread_ids(w)[config.threads - config.shared:]}
    for report in reports:
        if "error" in report:
            outcome.problems.append(f"worker {report['worker']} failed:\n{report['error']}")
            continue
        outcome.saves_ms += report["saves"]
        for tid, n in report["stale"].items():
            if tid in shared and config.processes > 1:
                outcome.stale_shared += n
            else:
                outcome.stale_private += n
    outcome.turns = len(outcome.saves_ms)
    pipeline = Pipeline.from_string(yaml_text, host=installed_plugins())
    check(pipeline, config, outcome)
    pipeline.thread_store().close()
    return outcome


@contextmanager
def servers(stack: ExitStack) -> Iterator[dict[str, str]]:
    """The ``threads:`` mapping of each backend on a throwaway server, started here and stopped afterwards."""
    from ctxcore.testing.harness.postgres import throwaway_cluster
    from ctxcore.testing.harness.redis import throwaway_redis

    dsn = stack.enter_context(throwaway_cluster())
    url = stack.enter_context(throwaway_redis(appendonly=True))
    yield backends(dsn, url)


def backends(dsn: str, url: str) -> dict[str, str]:
    """The ``threads:`` YAML of each backend on the given servers, in a fresh schema / key prefix."""
    tag = uuid.uuid4().hex[:10]
    return {
        "postgres": f"{{type: postgres, dsn: '{dsn}', schema: load_{tag}}}",
        "redis": f"{{type: redis, url: '{url}', key_prefix: 'load:{tag}'}}",
    }


def render(outcomes: list[Outcome], command: str) -> str:
    """The docs table of the runs and the line saying how it was made."""
    rows = []
    for o in outcomes:
        c = o.config
        rows.append([o.backend, f"{c.processes} × {c.threads} × {c.turns}", f"{o.turns:,}", f"{o.turns / o.seconds:,.0f}",
                     f"{o.percentile(0.5):.1f} ms", f"{o.percentile(0.99):.1f} ms", f"{o.stale_shared} / {o.stale_private}",
                     f"{o.lost} / {o.duplicated} / {o.reordered}"])
    table = markdown_table(
        ["backend", "workers × threads × turns", "turns", "turns/s", "save p50", "save p99",
         "StaleWrite shared / private", "lost / duplicated / reordered"], rows, align="llrrrrrr")
    c = outcomes[0].config
    return (f"{table}\n\nEach worker's last {c.shared} threads are shared with its partner worker (true contention); "
            f"a refused save is retried on the reopened thread. Throwaway servers on this machine "
            f"({platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}); generated by `{command}`.")


def main(argv: list[str] | None = None) -> int:
    """Run both backends, print the table, write it into the docs (exit 1 when a check fails)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smoke sizes (2 x 2 x 3); writes nothing")
    parser.add_argument("--processes", type=int, default=None)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--turns", type=int, default=None)
    parser.add_argument("--only", choices=["postgres", "redis"], default=None, help="one backend")
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args(argv)
    config = Config.quick() if args.quick else Config()
    sizes = {k: v for k, v in (("processes", args.processes), ("threads", args.threads), ("turns", args.turns)) if v}
    config = Config(**{**config.__dict__, **sizes})
    command = "make bench" if os.environ.get("CTXCORE_BENCH_VIA_MAKE") else shlex.join(
        ["python", "bench/thread_load.py", *(argv if argv is not None else sys.argv[1:])])
    outcomes = []
    with ExitStack() as stack, servers(stack) as yamls:
        for backend, threads_yaml in yamls.items():
            if args.only and backend != args.only:
                continue
            print(f"== {backend}: {config.processes} workers x {config.threads} threads x {config.turns} turns", file=sys.stderr, flush=True)
            outcomes.append(run(backend, threads_yaml, config))
    body = render(outcomes, command)
    print(body)
    failed = [o for o in outcomes if not o.ok]
    for o in outcomes:
        report_row("thread_load.py", f"{o.backend}: no turn lost, duplicated or reordered", o.ok,
                   f"lost {o.lost}, duplicated {o.duplicated}, reordered {o.reordered}")
    for o in failed:
        print(f"bench/thread_load.py: {o.backend} FAILED: lost {o.lost}, duplicated {o.duplicated}, reordered {o.reordered}, "
              f"StaleWrite on unshared threads {o.stale_private}; {'; '.join(o.problems)[:4000]}", file=sys.stderr)
    if not failed and not args.quick and not args.no_write and not args.only:
        write_section(DOC, SECTION, body)
        print(f"== wrote the table to {DOC}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
