"""Crash and concurrency checks for thread stores (message logs), with real processes (``fork``, ``SIGKILL``).

Both take ``make``, a zero-argument callable that opens the store under test;
it runs inside each child (after ``fork``) and again in the parent for the
checks, so every check reads through a freshly opened store. They live beside
the contract (not in :mod:`ctxcore.testing.harness`, which is not shipped) so
that a plugin's subclass of :class:`ThreadStoreContract` runs them too.

- :func:`log_crash_loop`: a child appends turns of one to three messages to one
  thread and reports each step after ``append`` returned; the parent SIGKILLs
  it at a random moment, reopens the store and checks that no acknowledged step
  is lost, that no partial step is visible and that the log is the expected
  message sequence.
- :func:`log_concurrent_writers`: N processes append to one shared thread at
  once (read the latest step, append one message fenced on it, retry on
  ``StaleWrite``); every acknowledged message must be there exactly once, in
  each writer's order, and the steps must form one unbroken chain.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from ctxcore.errors import StaleWrite
from ctxcore.testing.forked import close_store, fork_child, kill_after_acks, reap

__all__ = ["LogConcurrencyReport", "LogCrashReport", "crash_message", "log_concurrent_writers", "log_crash_loop"]


def crash_message(index: int) -> dict[str, Any]:
    """Message number ``index`` of a crash-loop thread: varied size, NUL and non-BMP characters, checkable by value."""
    return {"role": "user", "content": f"m{index} \x00 😀 " + "x" * (index * 37 % 900), "metadata": {"i": index}}


@dataclass
class LogCrashReport:
    """What a crash loop did: kills, acknowledged steps, final steps and messages."""

    kills: int = 0
    acknowledged: int = 0
    steps: int = 0
    messages: int = 0


def _crash_child(make: Callable[[], Any], thread: str, seed: int, ack_fd: int) -> None:
    rng = random.Random(seed)
    store = make()
    snap = store.read(thread)
    step = None if snap is None else snap.record.step
    count = 0 if snap is None else snap.record.messages
    while True:
        turn = [crash_message(count + i) for i in range(rng.randint(1, 3))]
        record = store.append(thread, turn, expected_step=step, metadata={"turn": count})
        step, count = record.step, record.messages
        os.write(ack_fd, b"%d %d\n" % (step, count))


def _check_log(make: Callable[[], Any], thread: str, acked: tuple[int, int], where: str) -> tuple[int, int]:
    """Reopen, read the latest step and check it against what was acknowledged; return (steps, messages)."""
    store = make()
    try:
        snap = store.read(thread)
        steps = store.list_steps(thread)
    except Exception as exc:
        raise AssertionError(f"{where}: reading after the kill raised {type(exc).__name__}: {exc}") from exc
    finally:
        close_store(store)
    if acked[0] < 0:
        return (len(steps), 0 if snap is None else snap.record.messages)
    if snap is None or snap.record.step < acked[0] or snap.record.messages < acked[1]:
        raise AssertionError(f"{where}: step {acked} was acknowledged but the store reads {snap and snap.record}")
    if len(snap.messages) != snap.record.messages:
        raise AssertionError(f"{where}: step {snap.record.step} counts {snap.record.messages} messages but {len(snap.messages)} came back")
    for i, message in enumerate(snap.messages):
        if message != crash_message(i):
            raise AssertionError(f"{where}: message {i} came back changed: {message!r:.200}")
    numbers = [r.step for r in steps]
    if numbers != list(range(len(numbers))):
        raise AssertionError(f"{where}: steps are not one unbroken chain: {numbers[:5]}...{numbers[-5:]}")
    return len(steps), snap.record.messages


def log_crash_loop(make: Callable[[], Any], *, kills: int, seed: int = 0, thread: str = "crash", max_acks: int = 4) -> LogCrashReport:
    """Kill an appending child ``kills`` times at random moments; raise AssertionError on any lost, partial or changed step."""
    rng = random.Random(seed)
    report = LogCrashReport()
    acked = (-1, 0)
    for round_ in range(kills):
        child = fork_child(partial(_crash_child, make, thread, seed * 100_003 + round_))
        lines = kill_after_acks(child, rng.randint(0, max_acks), rng, f"round {round_}")
        got = [(int(a), int(b)) for a, b in (line.split() for line in lines)]
        report.kills += 1
        report.acknowledged += len(got)
        for ack in got:
            if ack[0] <= acked[0]:
                raise AssertionError(f"round {round_}: child acknowledged step {ack[0]} after {acked[0]}: it resumed from an older step")
            acked = ack
        report.steps, report.messages = _check_log(make, thread, acked, f"round {round_}")
    return report


@dataclass
class LogConcurrencyReport:
    """Acknowledged appends and StaleWrite retries of the shared thread."""

    appended: int = 0
    stale_retries: int = 0
    steps: int = 0


def _writer_child(make: Callable[[], Any], index: int, writes: int, ack_fd: int) -> None:
    store = make()
    stale = done = 0
    while done < writes:
        snap = store.read("shared")
        step = None if snap is None else snap.record.step
        try:
            record = store.append("shared", [{"role": "user", "content": f"{index}:{done}"}], expected_step=step)
        except StaleWrite:
            stale += 1
            continue
        os.write(ack_fd, f"ack {record.step} {index}:{done}\n".encode())
        done += 1
    os.write(ack_fd, f"stale {stale}\n".encode())
    close_store(store)


def _expect_log(messages: list[str], acked: dict[int, str], processes: int, writes: int) -> None:
    wanted = sorted(f"{p}:{k}" for p in range(processes) for k in range(writes))
    if sorted(messages) != wanted:
        lost = sorted(set(wanted) - set(messages))
        dup = sorted({m for m in messages if messages.count(m) > 1})
        raise AssertionError(f"shared log: lost {lost[:10]}, duplicated {dup[:10]}")
    for p in range(processes):
        mine = [int(m.split(":")[1]) for m in messages if m.split(":")[0] == str(p)]
        if mine != sorted(mine):
            raise AssertionError(f"writer {p}'s messages are reordered: {mine}")
    for step, text in acked.items():
        if messages[step] != text:
            raise AssertionError(f"step {step} was acknowledged for {text!r} but the log holds {messages[step]!r} there")


def log_concurrent_writers(make: Callable[[], Any], *, processes: int = 8, writes: int = 10) -> LogConcurrencyReport:
    """Run ``processes`` appenders on one thread at once; raise AssertionError unless nothing is lost, duplicated or reordered."""
    children = [fork_child(partial(_writer_child, make, index, writes)) for index in range(processes)]
    report = LogConcurrencyReport()
    acked: dict[int, str] = {}
    failures = []
    for child in children:
        lines, failure = reap(child)
        if failure:
            failures.append(failure)
        for line in lines:
            kind, *rest = line.split()
            if kind == "ack":
                if int(rest[0]) in acked:
                    failures.append(f"step {rest[0]} acknowledged twice ({acked[int(rest[0])]} and {rest[1]})")
                acked[int(rest[0])] = rest[1]
            else:
                report.stale_retries += int(rest[0])
    if failures:
        raise AssertionError("\n".join(failures))
    store = make()
    try:
        snap = store.read("shared")
        steps = [r.step for r in store.list_steps("shared")]
    finally:
        close_store(store)
    messages = [] if snap is None else [m["content"] for m in snap.messages]
    _expect_log(messages, acked, processes, writes)
    if steps != list(range(processes * writes)):
        raise AssertionError(f"steps are not one unbroken chain: {steps}")
    report.appended, report.steps = len(acked), len(steps)
    return report
