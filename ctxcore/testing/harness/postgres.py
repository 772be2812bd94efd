"""A real PostgreSQL server for tests: a throwaway cluster, or the one ``CTXCORE_TEST_PG_DSN`` names.

Use the session fixture from a ``conftest.py``::

    from ctxcore.testing.harness.postgres import pg_dsn  # noqa: F401  (re-export the fixture)

``pg_dsn`` yields a libpq connection string. Without ``CTXCORE_TEST_PG_DSN`` it
runs ``initdb`` into a temporary directory and starts ``postgres`` listening only
on a Unix socket in that directory (no TCP port, nothing to collide with), as a
non-root user when the tests run as root (initdb refuses root), and stops it and
removes the directory when the session ends — also when tests fail. The server
is started with the parent-death signal set, so it goes away even if the test
process is killed.

When PostgreSQL is not installed the fixture fails with the fix in the message
when ``CI`` is set (``make test`` installs it), and skips otherwise.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn

import pytest

from ctxcore.testing.harness.servers import die_with_parent, log_tail, session_server, stop
from ctxcore.testing.harness.servers import unavailable as _unavailable

__all__ = ["PostgresUnavailable", "find_bindir", "throwaway_cluster", "unavailable", "pg_dsn"]

DSN_ENV = "CTXCORE_TEST_PG_DSN"
_PORT = 5432  # only names the socket file; the server listens on no TCP port
_START_TIMEOUT = 120.0


class PostgresUnavailable(RuntimeError):
    """PostgreSQL binaries are missing or the server could not start; the message says why."""


def find_bindir() -> Path | None:
    """The directory holding ``initdb`` and ``postgres``: ``CTXCORE_PG_BINDIR``, Debian's layout, or PATH."""
    if os.environ.get("CTXCORE_PG_BINDIR"):
        chosen = Path(os.environ["CTXCORE_PG_BINDIR"])
        return chosen if (chosen / "initdb").is_file() and (chosen / "postgres").is_file() else None
    candidates: list[Path] = []
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: [int(x) for x in Path(p).parent.name.split(".") if x.isdigit()])
    candidates.extend(Path(p) for p in reversed(versions))
    which = shutil.which("initdb")
    if which:
        candidates.append(Path(os.path.realpath(which)).parent)
    for d in candidates:
        if (d / "initdb").is_file() and (d / "postgres").is_file():
            return d
    return None


def _server_user() -> pwd.struct_passwd | None:
    """Who runs the server: ``None`` (ourselves) unless we are root, which initdb refuses."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            return pwd.getpwnam(name)
        except KeyError:
            continue
    raise PostgresUnavailable("running as root and neither a 'postgres' nor a 'nobody' user exists to run the test server")


def _as_user(user: pwd.struct_passwd | None) -> dict[str, object]:
    if user is None:
        return {}
    return {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []}


@contextlib.contextmanager
def throwaway_cluster() -> Iterator[str]:
    """Start a fresh PostgreSQL cluster in a temporary directory; yield its DSN; stop and remove it.

    Raises:
        PostgresUnavailable: binaries missing, or initdb/postgres failed (with their output).
    """
    bindir = find_bindir()
    if bindir is None:
        raise PostgresUnavailable(
            "PostgreSQL is not installed (no initdb found in /usr/lib/postgresql/*/bin or PATH): "
            "run `make test` (it installs it with apt-get), `apt-get install -y postgresql`, "
            f"or point {DSN_ENV} at a server"
        )
    user = _server_user()
    root = Path(tempfile.mkdtemp(prefix="ctxcore-pg-"))
    proc: subprocess.Popen[bytes] | None = None
    try:
        if user is not None:
            os.chown(root, user.pw_uid, user.pw_gid)
        os.chmod(root, 0o700)
        data, log = root / "data", root / "server.log"
        init = subprocess.run(
            [str(bindir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-locale", "--no-sync"],
            capture_output=True, cwd=root, **_as_user(user),  # type: ignore[call-overload]
        )
        if init.returncode != 0:
            raise PostgresUnavailable(f"initdb failed ({init.returncode}): {(init.stderr or init.stdout).decode(errors='replace')[-2000:]}")
        with open(log, "wb") as out:
            if user is not None:
                os.chown(log, user.pw_uid, user.pw_gid)
            proc = subprocess.Popen(
                [str(bindir / "postgres"), "-D", str(data), "-k", str(root), "-p", str(_PORT),
                 "-c", "listen_addresses=", "-c", "max_connections=200", "-c", "shared_buffers=32MB"],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=root,
                preexec_fn=die_with_parent(signal.SIGQUIT), **_as_user(user),  # type: ignore[call-overload]  # SIGQUIT: immediate shutdown
            )
        _wait_ready(bindir, root, proc, log)
        yield dsn_for(root)
    finally:
        stop(proc, signal.SIGINT, 60)  # fast shutdown
        shutil.rmtree(root, ignore_errors=True)


def dsn_for(socket_dir: Path) -> str:
    """The DSN of a throwaway cluster whose socket lives in ``socket_dir``."""
    return f"host={socket_dir} port={_PORT} user=postgres dbname=postgres"


def _wait_ready(bindir: Path, root: Path, proc: subprocess.Popen[bytes], log: Path) -> None:
    isready = bindir / "pg_isready"
    deadline = time.monotonic() + _START_TIMEOUT
    while True:
        if proc.poll() is not None:
            raise PostgresUnavailable(f"postgres exited with {proc.returncode} while starting:\n{log_tail(log)}")
        ok = subprocess.run([str(isready), "-q", "-h", str(root), "-p", str(_PORT), "-U", "postgres"], capture_output=True)
        if ok.returncode == 0:
            return
        if time.monotonic() > deadline:
            raise PostgresUnavailable(f"postgres did not accept connections within {_START_TIMEOUT:.0f}s:\n{log_tail(log)}")
        time.sleep(0.1)


def unavailable(exc: Exception) -> NoReturn:
    """Fail (in CI, where PostgreSQL must be there) or skip (on a developer machine) with the reason."""
    _unavailable("PostgreSQL", exc)


@pytest.fixture(scope="session")
def pg_dsn() -> Iterator[str]:
    """DSN of a PostgreSQL server for the test session (``CTXCORE_TEST_PG_DSN`` or a throwaway cluster)."""
    yield from session_server("PostgreSQL", DSN_ENV, throwaway_cluster, PostgresUnavailable)
