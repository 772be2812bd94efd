"""A real Redis (or Valkey) server for tests: a throwaway ``redis-server``, or the one ``CTXCORE_TEST_REDIS_URL`` names.

Use the session fixture from a ``conftest.py``::

    from ctxcore.testing.harness.redis import redis_url  # noqa: F401  (re-export the fixture)

``redis_url`` yields a ``redis://`` URL. Without ``CTXCORE_TEST_REDIS_URL`` it
starts ``redis-server`` (or ``valkey-server``) on a free loopback port with its
files in a temporary directory and no persistence (``--save ''``: the data
lives as long as the session, and SIGKILLed clients cannot lose what the
server acknowledged), and stops it when the session ends — also when tests
fail. :func:`throwaway_redis` with ``appendonly=True`` (``appendfsync always``)
is for tests that restart the server. The server gets the parent-death signal,
so it goes away even if the test process is killed.

When no server binary is installed the fixture fails with the fix in the message
when ``CI`` is set (``make test`` installs ``redis-server``), and skips otherwise.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn

import pytest

from ctxcore.testing.harness.servers import die_with_parent, log_tail, session_server, stop
from ctxcore.testing.harness.servers import unavailable as _unavailable

__all__ = ["RedisUnavailableForTests", "find_server", "redis_url", "throwaway_redis", "unavailable"]

URL_ENV = "CTXCORE_TEST_REDIS_URL"
_START_TIMEOUT = 60.0


class RedisUnavailableForTests(RuntimeError):
    """``redis-server`` is missing or did not start; the message says why."""


def find_server() -> str | None:
    """The server binary: ``CTXCORE_REDIS_SERVER``, else ``redis-server`` or ``valkey-server`` on PATH."""
    chosen = os.environ.get("CTXCORE_REDIS_SERVER")
    if chosen:
        return chosen if Path(chosen).is_file() else None
    return shutil.which("redis-server") or shutil.which("valkey-server")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(64).startswith(b"+PONG")
    except OSError:
        return False


@contextlib.contextmanager
def throwaway_redis(*, appendonly: bool = True, directory: Path | None = None) -> Iterator[str]:
    """Start ``redis-server`` on a free loopback port in a temporary directory; yield its URL; stop it and remove the directory.

    With ``directory`` the server keeps its files there (not removed), so a second
    server started on the same directory reloads what the first persisted.

    Raises:
        RedisUnavailableForTests: the binary is missing, or the server did not start (with its log).
    """
    server = find_server()
    if server is None:
        raise RedisUnavailableForTests(
            "redis-server is not installed (neither redis-server nor valkey-server on PATH): run `make test` "
            f"(it installs it with apt-get), `apt-get install -y redis-server`, or point {URL_ENV} at a server"
        )
    root = directory if directory is not None else Path(tempfile.mkdtemp(prefix="ctxcore-redis-"))
    log = root / "server.log"
    proc: subprocess.Popen[bytes] | None = None
    try:
        for _attempt in range(5):  # another process may take the free port before the server binds it
            port = _free_port()
            args = [server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--dir", str(root),
                    "--logfile", str(log), "--daemonize", "no", "--protected-mode", "yes"]
            if appendonly:
                args += ["--appendonly", "yes", "--appendfsync", "always"]
            proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
                                    cwd=root, preexec_fn=die_with_parent(signal.SIGTERM))
            if _wait_ready(proc, port):
                break
            proc = None
        else:
            raise RedisUnavailableForTests(f"redis-server did not start within {_START_TIMEOUT:.0f}s:\n{log_tail(log)}")
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        stop(proc, signal.SIGTERM, 30)
        if directory is None:
            shutil.rmtree(root, ignore_errors=True)


def _wait_ready(proc: subprocess.Popen[bytes], port: int) -> bool:
    """True once the server answers PING; False when it exited (e.g. the port was taken)."""
    deadline = time.monotonic() + _START_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        if _ping(port):
            return True
        time.sleep(0.05)
    proc.kill()
    proc.wait()
    return False


def unavailable(exc: Exception) -> NoReturn:
    """Fail (in CI, where redis-server must be there) or skip (on a developer machine) with the reason."""
    _unavailable("redis-server", exc)


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """URL of a Redis server for the test session (``CTXCORE_TEST_REDIS_URL`` or a throwaway ``redis-server``)."""
    yield from session_server("redis-server", URL_ENV, lambda: throwaway_redis(appendonly=False), RedisUnavailableForTests)
