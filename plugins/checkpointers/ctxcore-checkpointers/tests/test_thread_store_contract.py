"""Every thread store of ctxcore-checkpointers passes the ThreadStoreContract, damaged-store cases included."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from ctxcore_checkpointers import JsonlThreadStore, MemoryThreadStore, SqliteThreadStore

from ctxcore import CheckpointCorrupt
from ctxcore.testing.contracts import ThreadStoreContract, sample_message


class TestMemoryLog(ThreadStoreContract):
    """The in-process thread store."""

    persistent = False
    multiprocess = False

    def make_store(self, location: Any) -> MemoryThreadStore:
        return MemoryThreadStore()


class TestSqliteLog(ThreadStoreContract):
    """One SQLite file in a directory that does not exist yet."""

    def make_store(self, location: Any) -> SqliteThreadStore:
        return SqliteThreadStore(location / "nested" / "threads.db", busy_timeout_ms=60_000)

    def damage_step(self, location: Any, thread_id: str, step: int) -> None:
        with sqlite3.connect(location / "nested" / "threads.db") as conn:
            count = conn.execute("SELECT messages FROM ctx_thread_steps WHERE thread_id = ? AND step = ?", (thread_id, step)).fetchone()[0]
            conn.execute("UPDATE ctx_thread_log SET body = '{\"role\": \"us' WHERE thread_id = ? AND seq = ?", (thread_id, count - 1))


class TestJsonlLog(ThreadStoreContract):
    """jsonl logs in a directory that does not exist yet."""

    def make_store(self, location: Any) -> JsonlThreadStore:
        return JsonlThreadStore(location / "nested")

    def damage_step(self, location: Any, thread_id: str, step: int) -> None:
        file = JsonlThreadStore(location / "nested").file_for(thread_id)
        lines = file.read_bytes().split(b"\n")
        lines[step] = lines[step].replace(b"message", b"massage", 1)  # still JSON, checksum no longer matches
        file.write_bytes(b"\n".join(lines))

    def tear_tail(self, location: Any, thread_id: str) -> None:
        file = JsonlThreadStore(location / "nested").file_for(thread_id)
        with open(file, "ab") as fh:
            fh.write(b'{"crc":"00000000","record":{"step":3,"count":9,"mess')


def test_truncated_sqlite_file_is_corrupt_not_a_driver_error(tmp_path: Path) -> None:
    """A SQLite file cut in half raises CheckpointCorrupt naming the file and the repair, never sqlite3's own error."""
    store = SqliteThreadStore(tmp_path / "t.db")
    for step in range(40):
        store.append("t", [sample_message(step, "x" * 3000)], expected_step=step - 1 if step else None)
    store.close()
    db = tmp_path / "t.db"
    db.write_bytes(db.read_bytes()[: db.stat().st_size // 2])
    for suffix in ("-wal", "-shm"):
        (tmp_path / f"t.db{suffix}").unlink(missing_ok=True)
    reader = SqliteThreadStore(db)
    with pytest.raises(CheckpointCorrupt, match=r"t\.db.*'t'.*--repair"):
        reader.read("t")
    reader.close()


def test_jsonl_damaged_last_acknowledged_line_is_loud(tmp_path: Path) -> None:
    """The last complete line failing its checksum raises CheckpointCorrupt: an acknowledged turn is never silently lost."""
    store = JsonlThreadStore(tmp_path)
    for step in range(3):
        store.append("t", [sample_message(step)], expected_step=step - 1 if step else None)
    file = store.file_for("t")
    data = file.read_bytes()
    file.write_bytes(data[:-10] + data[-10:].replace(b"}", b"]", 1))
    with pytest.raises(CheckpointCorrupt, match=r"'t' step 2"):
        JsonlThreadStore(tmp_path).read("t")
    assert JsonlThreadStore(tmp_path).salvage("t").record.step == 1

