"""Forked children for the crash and concurrency checks: start one, read its acknowledgements, kill or reap it.

The checkpointer harness (:mod:`ctxcore.testing.harness.checkpointer_stress`)
and the thread-store contract's process checks
(:mod:`ctxcore.testing.contracts._log_processes`) run the same kind of child: it
opens the store after ``fork``, writes one line to its acknowledgement pipe
after each write that returned, and on any exception writes its traceback to
its error pipe and exits 3. What differs is the store calls and the checks, so
only the process plumbing lives here, once.

May import: the standard library only (both users import it; it imports neither).
"""

from __future__ import annotations

import os
import random
import signal
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["Child", "close_store", "fork_child", "kill_after_acks", "reap"]


def _exit(code: int, err_fd: int | None = None, message: str = "") -> None:
    if err_fd is not None and message:
        try:
            os.write(err_fd, message.encode("utf-8", "replace")[-4000:])
        except OSError:
            pass
    os._exit(code)


def _read_lines(fd: int) -> list[str]:
    """Everything left in the pipe until EOF, as lines."""
    chunks: list[bytes] = []
    while chunk := os.read(fd, 65536):
        chunks.append(chunk)
    return b"".join(chunks).decode().splitlines()


def close_store(store: Any) -> None:
    """Close a store that has a ``close`` method (a memory store may have none)."""
    close = getattr(store, "close", None)
    if callable(close):
        close()


@dataclass
class Child:
    """A forked child: its pid and the read ends of its acknowledgement and error pipes."""

    pid: int
    acks: int
    errors: int


def fork_child(body: Callable[[int], None]) -> Child:
    """Fork a child that runs ``body(ack_fd)`` and exits: 0 when it returns, 3 with its traceback when it raises.

    The child never returns into the caller's code (``os._exit``), so a test
    runner's state is never run twice.
    """
    ack_r, ack_w = os.pipe()
    err_r, err_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        os.close(ack_r)
        os.close(err_r)
        try:
            body(ack_w)
        except BaseException:
            _exit(3, err_w, traceback.format_exc())
        _exit(0)
    os.close(ack_w)
    os.close(err_w)
    return Child(pid, ack_r, err_r)


def reap(child: Child) -> tuple[list[str], str | None]:
    """Wait for a child that ends by itself: its acknowledgement lines, and why it failed (``None`` if it did not)."""
    lines = _read_lines(child.acks)
    errors = "\n".join(_read_lines(child.errors))
    os.close(child.acks)
    os.close(child.errors)
    _, status = os.waitpid(child.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        return lines, f"writer {child.pid} failed (status {status}):\n{errors}"
    return lines, None


def kill_after_acks(child: Child, want: int, rng: random.Random, where: str) -> list[str]:
    """Read ``want`` acknowledgement lines, SIGKILL the child at a random moment after them, return every line it wrote.

    Raises:
        AssertionError: the child ended by itself before it was killed (its traceback is in the message).
    """
    got: list[str] = []
    buf = b""
    while len(got) < want:
        chunk = os.read(child.acks, 4096)
        if not chunk:
            break
        buf += chunk
        *lines, buf = buf.split(b"\n")
        got.extend(line.decode() for line in lines)
    time.sleep(rng.random() * 0.003)  # land the kill anywhere in the next write
    os.kill(child.pid, signal.SIGKILL)
    _, status = os.waitpid(child.pid, 0)
    rest = buf.decode() + "\n" + "\n".join(_read_lines(child.acks))
    got.extend(line for line in rest.split("\n") if line.strip())
    os.close(child.acks)
    errors = "\n".join(_read_lines(child.errors))
    os.close(child.errors)
    if not (os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL):
        raise AssertionError(f"{where}: the child failed before it was killed (status {status}):\n{errors}")
    return got
