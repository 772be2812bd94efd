"""Crash durability and multi-process writers against real files, with real SIGKILLed processes."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest
from ctxcore_checkpointers import JsonlCheckpointer, SqliteCheckpointer

from ctxcore.testing.harness.checkpointer_stress import concurrent_writers, crash_loop

#: kills per file backend in every run; the ``slow`` tests do many more.
KILLS = int(os.environ.get("CTXCORE_CRASH_KILLS", "300"))
SLOW_KILLS = 3000

BACKENDS = {
    "jsonl": lambda tmp: (lambda: JsonlCheckpointer(tmp / "cps")),
    "sqlite": lambda tmp: (lambda: SqliteCheckpointer(tmp / "cps.db", busy_timeout_ms=60_000)),
}


def _integrity(tmp: Path, backend: str) -> None:
    if backend == "sqlite":
        with sqlite3.connect(tmp / "cps.db") as conn:
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_sigkill_never_loses_an_acknowledged_checkpoint(tmp_path: Path, backend: str) -> None:
    """A child killed with SIGKILL at random moments never loses an acknowledged step; restore never errors."""
    report = crash_loop(BACKENDS[backend](tmp_path), kills=KILLS, seed=hash(backend) & 0xFFFF)
    assert report.kills == KILLS
    assert report.acknowledged > KILLS  # most children got some saves done before dying
    assert report.checkpoints >= report.acknowledged
    _integrity(tmp_path, backend)


@pytest.mark.slow
@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_sigkill_many_times(tmp_path: Path, backend: str) -> None:
    """The crash loop with ten times the kills (run with CTXCORE_RUN_SLOW=1)."""
    report = crash_loop(BACKENDS[backend](tmp_path), kills=SLOW_KILLS, seed=7, max_acks=8)
    assert report.kills == SLOW_KILLS
    _integrity(tmp_path, backend)


@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_eight_processes_write_one_store(tmp_path: Path, backend: str) -> None:
    """Eight processes writing one store at once: every acknowledged write is present exactly once."""
    report = concurrent_writers(BACKENDS[backend](tmp_path), processes=8)
    assert report.own == 8 * 2 * 8
    assert report.shared_steps == list(range(8 * 6))  # one unbroken shared history, no forks
    _integrity(tmp_path, backend)


def test_sqlite_instance_used_across_fork(tmp_path: Path) -> None:
    """A SqliteCheckpointer opened before fork keeps working in the child (new connection) and the parent."""
    cp = SqliteCheckpointer(tmp_path / "f.db")
    cp.save_checkpoint("t", 1, {"who": "parent"})
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        try:
            assert cp.get_checkpoint("t")["step"] == 1
            cp.save_checkpoint("t", 2, {"who": "child"})
            os._exit(0)
        except BaseException:
            os._exit(3)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert cp.get_checkpoint("t")["state_dump"] == {"who": "child"}
    cp.save_checkpoint("t", 3, {"who": "parent"})
    assert [c["step"] for c in cp.list_checkpoints("t")] == [1, 2, 3]
    assert cp.integrity_check() == "ok"
    cp.close()


def test_jsonl_durable_layout(tmp_path: Path) -> None:
    """Each save leaves one complete newline-terminated record per line, numbered from 1."""
    cp = JsonlCheckpointer(tmp_path / "d")
    for step in range(3):
        cp.save_checkpoint("t", step, {"s": step})
    lines = cp.file_for("t").read_bytes().split(b"\n")
    assert lines[-1] == b""
    assert [line.startswith(b'{"crc":"') and b'"seq":%d,' % (i + 1) in line for i, line in enumerate(lines[:-1])] == [True] * 3
