"""What every throwaway test server shares: dying with the test process, stopping, its log, the session fixture.

:mod:`~ctxcore.testing.harness.postgres` and :mod:`~ctxcore.testing.harness.redis`
start different servers in different ways, but they stop them, report their
logs, decide between failing and skipping, and hand them to a pytest session
the same way; that part lives here so the two cannot drift apart.

Invariants: a started server never outlives the process that started it (the
parent-death signal, then :func:`stop` in a ``finally``); a server that is not
installed fails the tests when ``CI`` is set and skips them otherwise.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NoReturn

import pytest

__all__ = ["die_with_parent", "log_tail", "session_server", "stop", "unavailable"]

_PR_SET_PDEATHSIG = 1


def die_with_parent(sig: signal.Signals) -> Callable[[], None]:
    """A ``preexec_fn`` that makes the child get ``sig`` when the process that started it dies (Linux)."""

    def preexec() -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, sig)

    return preexec


def stop(proc: subprocess.Popen[bytes] | None, sig: signal.Signals, timeout: float) -> None:
    """Send ``sig`` to a still running server and wait ``timeout`` seconds for it to exit, then kill it."""
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(sig)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def log_tail(log: Path) -> str:
    """The end of a server's log, for an error message."""
    try:
        return log.read_text(errors="replace")[-2000:]
    except OSError:
        return "(no log)"


def unavailable(server: str, exc: Exception) -> NoReturn:
    """Fail (in CI, where ``server`` must be there) or skip (on a developer machine) with the reason."""
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"{server} is required in CI (CI={os.environ['CI']}): {exc}", pytrace=False)
    pytest.skip(f"{server} unavailable: {exc}")


def session_server(server: str, env: str, start: Callable[[], contextlib.AbstractContextManager[str]],
                   missing: type[Exception]) -> Iterator[str]:
    """The body of a session fixture: the address in ``env`` when set, else a server ``start`` runs for the session.

    ``missing`` (raised by ``start``) becomes :func:`unavailable`; the server is
    stopped when the session ends, also when tests failed.
    """
    existing = os.environ.get(env)
    if existing:
        yield existing
        return
    try:
        running = start()
        address = running.__enter__()
    except missing as exc:
        unavailable(server, exc)
    try:
        yield address
    finally:
        running.__exit__(None, None, None)
