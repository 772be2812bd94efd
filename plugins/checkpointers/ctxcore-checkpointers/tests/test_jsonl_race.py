"""jsonl: a writer's cached view of a thread file must not outlive the file (delete, then a new file on a reused inode)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from ctxcore_checkpointers import JsonlCheckpointer

from ctxcore import StaleWrite


def test_stale_write_after_another_process_recreated_the_thread(tmp_path: Path) -> None:
    """Writer A saved steps 11..15; another writer deletes the thread and writes steps 21..25 with
    records of the same sizes (ext4 hands the new file the old inode). A's save of step 16 is now
    stale and must raise StaleWrite: it must not append 16 after 25 on the strength of its cache."""
    a = JsonlCheckpointer(tmp_path)
    other = JsonlCheckpointer(tmp_path)  # another writer: its own cache, as in another process
    for _attempt in range(20):  # until the file system reuses the inode (ext4 does within a few rounds)
        other.delete_thread("t")
        for step in (11, 12, 13, 14, 15):
            a.save_checkpoint("t", step, {"v": step})
        inode = a.file_for("t").stat().st_ino
        other.delete_thread("t")
        for step in (21, 22, 23, 24, 25):
            other.save_checkpoint("t", step, {"v": step})
        if a.file_for("t").stat().st_ino == inode:
            break
    else:
        pytest.skip("the file system never reused the inode; the cached-tail path is not exercised")
    with pytest.raises(StaleWrite):
        a.save_checkpoint("t", 16, {"v": 16})
    assert [c["step"] for c in JsonlCheckpointer(tmp_path).list_checkpoints("t")] == [21, 22, 23, 24, 25]
    a.save_checkpoint("t", 26, {"v": 26})
    assert JsonlCheckpointer(tmp_path).get_checkpoint("t")["step"] == 26
    assert os.path.exists(a.file_for("t"))
