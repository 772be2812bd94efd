"""jsonl prune removes the temp files a killed prune left: by name pattern, age and writer process, under the lock."""

from __future__ import annotations

import os
import time
from pathlib import Path

from ctxcore_checkpointers.jsonl import STALE_TMP_SECONDS, JsonlCheckpointer

DEAD_PID = 2**22 + 17  # above Linux's largest pid: never a live process


def test_prune_removes_stale_temp_files_of_its_thread_only(tmp_path: Path) -> None:
    """Temp files of dead writers or older than the limit go; a live writer's fresh one and other threads' stay."""
    cp = JsonlCheckpointer(tmp_path)
    for step in range(5):
        cp.save_checkpoint("t1", step, {"n": step})
    cp.save_checkpoint("t2", 0, {"n": 0})
    name, other = cp.file_for("t1").name, cp.file_for("t2").name
    dead = tmp_path / f".{name}.{DEAD_PID}.1.tmp"
    old = tmp_path / f".{name}.{os.getpid()}.2.tmp"
    live = tmp_path / f".{name}.{os.getpid()}.3.tmp"
    foreign = tmp_path / f".{other}.{DEAD_PID}.1.tmp"
    unrelated = tmp_path / f".{name}.notes.tmp"
    for p in (dead, old, live, foreign, unrelated):
        p.write_bytes(b"x" * 1000)
    past = time.time() - STALE_TMP_SECONDS - 5
    os.utime(old, (past, past))
    assert cp.prune("t1", keep_last=2) == 3
    assert not dead.exists() and not old.exists()
    assert live.exists() and foreign.exists() and unrelated.exists()
    assert cp.get_checkpoint("t1")["state_dump"] == {"n": 4}


def test_prune_with_nothing_to_remove_still_cleans(tmp_path: Path) -> None:
    """Cleaning does not depend on there being records to prune."""
    cp = JsonlCheckpointer(tmp_path)
    cp.save_checkpoint("t", 0, {"n": 0})
    stale = tmp_path / f".{cp.file_for('t').name}.{DEAD_PID}.9.tmp"
    stale.write_bytes(b"partial")
    assert cp.prune("t", keep_last=5) == 0
    assert not stale.exists()
