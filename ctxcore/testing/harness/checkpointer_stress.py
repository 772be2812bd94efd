"""Crash and concurrency harnesses for checkpointers, with real processes (``fork``, ``SIGKILL``).

Both take ``make``, a zero-argument callable that opens the checkpointer under
test; it is called inside each child process (after ``fork``) and again by the
parent to check the result, so every check goes through a freshly opened store.

- :func:`crash_loop`: a child saves numbered checkpoints of one thread and reports
  each step after ``save_checkpoint`` returned; the parent SIGKILLs it at a random
  moment, reopens the store and checks that no acknowledged step is lost and that
  reading never errors. The next child resumes from the latest checkpoint.
- :func:`concurrent_writers`: N processes write at once, each to its own threads
  and all to one shared thread (read latest, save latest+1, retry on
  ``StaleWrite``); every acknowledged write must be present exactly once.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from ctxcore.errors import StaleWrite
from ctxcore.testing.forked import close_store, fork_child, kill_after_acks, reap

__all__ = ["CrashReport", "crash_loop", "ConcurrencyReport", "concurrent_writers", "crash_state"]


def crash_state(step: int) -> dict[str, Any]:
    """The state saved at ``step``: varied size, NUL and non-BMP characters, checkable by value."""
    return {"step": step, "text": f"step {step} \x00 😀 " + "x" * (step * 37 % 700), "list": list(range(step % 11))}


@dataclass
class CrashReport:
    """What a crash loop did: kills, acknowledged steps and the final history length."""

    kills: int = 0
    acknowledged: int = 0
    checkpoints: int = 0
    killed_before_first_ack: int = 0


def _crash_child(make: Callable[[], Any], thread: str, ack_fd: int) -> None:
    cp = make()
    latest = cp.get_checkpoint(thread)
    step = 0 if latest is None else latest["step"] + 1
    while True:
        cp.save_checkpoint(thread, step, crash_state(step), tree_state={"step": step}, runtime_metadata=None)
        os.write(ack_fd, b"%d\n" % step)
        step += 1


def crash_loop(make: Callable[[], Any], *, kills: int, seed: int = 0, thread: str = "crash", max_acks: int = 4) -> CrashReport:
    """Kill a saving child ``kills`` times at random moments; raise AssertionError on any lost or unreadable step."""
    rng = random.Random(seed)
    report = CrashReport()
    acked = -1
    for round_ in range(kills):
        child = fork_child(partial(_crash_child, make, thread))
        got = [int(line) for line in kill_after_acks(child, rng.randint(0, max_acks), rng, f"round {round_}")]
        report.kills += 1
        report.acknowledged += len(got)
        if not got:
            report.killed_before_first_ack += 1
        for step in got:
            # A step saved but killed before its ack is not acknowledged, so gaps are fine here.
            if step <= acked:
                raise AssertionError(f"round {round_}: child acknowledged step {step} after {acked}: it resumed from an older checkpoint")
            acked = step
        _check_latest(make, thread, acked, round_)
    cp = make()
    try:
        history = cp.list_checkpoints(thread)
    finally:
        close_store(cp)
    steps = [c["step"] for c in history]
    if steps != list(range(len(steps))) or len(steps) < acked + 1:
        raise AssertionError(f"history is not the unbroken chain 0..{acked}+: {steps[:5]}...{steps[-5:]} ({len(steps)} steps)")
    for c in history:
        if c["state_dump"] != crash_state(c["step"]) or c["tree_state"] != {"step": c["step"]}:
            raise AssertionError(f"checkpoint {c['step']} came back changed")
    report.checkpoints = len(steps)
    return report


def _check_latest(make: Callable[[], Any], thread: str, acked: int, round_: int) -> None:
    cp = make()
    try:
        latest = cp.get_checkpoint(thread)
    except Exception as exc:
        raise AssertionError(f"round {round_}: restoring after the kill raised {type(exc).__name__}: {exc}") from exc
    finally:
        close_store(cp)
    if acked >= 0:
        if latest is None or latest["step"] < acked:
            raise AssertionError(f"round {round_}: step {acked} was acknowledged but the latest checkpoint is {latest and latest['step']}")
        if latest["state_dump"] != crash_state(latest["step"]):
            raise AssertionError(f"round {round_}: the latest checkpoint's state came back changed")


@dataclass
class ConcurrencyReport:
    """Acknowledged writes per kind, and StaleWrite retries on the shared thread."""

    own: int = 0
    shared: int = 0
    stale_retries: int = 0
    shared_steps: list[int] = field(default_factory=list)


def _writer_child(make: Callable[[], Any], index: int, own_threads: int, own_steps: int, shared_writes: int,
                  ack_fd: int) -> None:
    cp = make()
    stale = 0
    for step in range(own_steps):
        for t in range(own_threads):
            thread = f"w{index}-t{t}"
            cp.save_checkpoint(thread, step, {"writer": index, "thread": thread, "step": step})
            os.write(ack_fd, f"own {thread} {step}\n".encode())
    done = 0
    while done < shared_writes:
        latest = cp.get_checkpoint("shared")
        step = 0 if latest is None else latest["step"] + 1
        try:
            cp.save_checkpoint("shared", step, {"writer": index, "step": step})
        except StaleWrite:
            stale += 1
            continue
        os.write(ack_fd, f"shared {step} {index}\n".encode())
        done += 1
    os.write(ack_fd, f"stale {stale}\n".encode())
    close_store(cp)


def concurrent_writers(
    make: Callable[[], Any], *, processes: int = 8, own_threads: int = 2, own_steps: int = 8, shared_writes: int = 6
) -> ConcurrencyReport:
    """Run ``processes`` writers at once; raise AssertionError unless every acknowledged write is there exactly once."""
    children = [fork_child(partial(_writer_child, make, index, own_threads, own_steps, shared_writes))
                for index in range(processes)]
    report = ConcurrencyReport()
    own: dict[str, list[int]] = {}
    shared: dict[int, int] = {}
    failures: list[str] = []
    for child in children:
        lines, failure = reap(child)
        if failure:
            failures.append(failure)
        _tally(lines, own, shared, failures, report)
    if failures:
        raise AssertionError("\n".join(failures))
    _check_stored(make, own, shared, report)
    report.shared = len(shared)
    report.shared_steps = sorted(shared)
    return report


def _tally(lines: list[str], own: dict[str, list[int]], shared: dict[int, int], failures: list[str],
           report: ConcurrencyReport) -> None:
    """Add one writer's acknowledgements: its own steps, its shared steps (each step acknowledged once), its retries."""
    for line in lines:
        kind, *rest = line.split()
        if kind == "own":
            own.setdefault(rest[0], []).append(int(rest[1]))
        elif kind == "shared":
            step, writer = int(rest[0]), int(rest[1])
            if step in shared:
                failures.append(f"shared step {step} acknowledged to writers {shared[step]} and {writer}")
            shared[step] = writer
        elif kind == "stale":
            report.stale_retries += int(rest[0])


def _check_stored(make: Callable[[], Any], own: dict[str, list[int]], shared: dict[int, int],
                  report: ConcurrencyReport) -> None:
    """Raise AssertionError unless a fresh checkpointer holds every acknowledged write exactly once, and nothing else."""
    cp = make()
    try:
        for thread, steps in own.items():
            stored = [c["step"] for c in cp.list_checkpoints(thread)]
            if stored != sorted(steps) or len(set(stored)) != len(stored):
                raise AssertionError(f"{thread}: stored steps {stored}, acknowledged {sorted(steps)}")
            report.own += len(steps)
        history = cp.list_checkpoints("shared")
        stored_shared = {c["step"]: c["state_dump"]["writer"] for c in history}
        if len(history) != len(stored_shared) or stored_shared != shared:
            raise AssertionError(f"shared thread: stored {stored_shared}, acknowledged {shared}")
        expected_threads = sorted([*own, "shared"]) if shared else sorted(own)
        if cp.list_threads() != expected_threads:
            raise AssertionError(f"threads {cp.list_threads()} != {expected_threads}")
    finally:
        close_store(cp)
