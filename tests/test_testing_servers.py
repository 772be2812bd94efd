"""Tests for ctxcore.testing.harness.servers: what the throwaway PostgreSQL and Redis servers share."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
from collections.abc import Iterator

import pytest

from ctxcore.testing.harness.servers import session_server, stop


def test_stop_kills_a_server_that_ignores_its_signal() -> None:
    """A server that ignores the shutdown signal is killed after the timeout, so no test run leaves one behind."""
    proc = subprocess.Popen([sys.executable, "-c", "import signal, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                             "print('ready', flush=True); time.sleep(60)"], stdout=subprocess.PIPE)
    assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
    stop(proc, signal.SIGTERM, 0.2)
    assert proc.returncode == -signal.SIGKILL
    stop(proc, signal.SIGTERM, 0.2)  # an exited server is left alone


def test_session_server_prefers_the_environment_and_stops_what_it_started(monkeypatch: pytest.MonkeyPatch) -> None:
    """With the variable set its address is used and nothing starts; otherwise the started server is stopped at the end."""
    events: list[str] = []

    @contextlib.contextmanager
    def start() -> Iterator[str]:
        events.append("start")
        yield "addr://started"
        events.append("stop")

    monkeypatch.setenv("CTXCORE_TEST_X", "addr://given")
    assert list(session_server("X", "CTXCORE_TEST_X", start, RuntimeError)) == ["addr://given"] and events == []
    monkeypatch.delenv("CTXCORE_TEST_X")
    assert list(session_server("X", "CTXCORE_TEST_X", start, RuntimeError)) == ["addr://started"]
    assert events == ["start", "stop"]


def test_a_missing_server_skips_outside_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    """When the server cannot start, the fixture skips with the reason (and fails in CI, tests/test_testing_postgres.py)."""
    monkeypatch.delenv("CTXCORE_TEST_X", raising=False)
    monkeypatch.delenv("CI", raising=False)

    def start() -> contextlib.AbstractContextManager[str]:
        raise RuntimeError("no binary")

    with pytest.raises(pytest.skip.Exception, match="X unavailable: no binary"):
        next(session_server("X", "CTXCORE_TEST_X", start, RuntimeError))
