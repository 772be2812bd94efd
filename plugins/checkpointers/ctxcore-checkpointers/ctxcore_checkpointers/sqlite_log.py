"""``sqlite`` thread store: one row per message and a steps table, in the checkpointer's SQLite file.

Layout (beside ``ctx_checkpoints``, created on first use)::

    ctx_thread_log(thread_id, seq, body)                 one row per message, seq from 0
    ctx_thread_steps(thread_id, step, messages, created_at, metadata)

A save is one ``BEGIN IMMEDIATE`` transaction under ``synchronous=FULL`` that
checks the latest step (the fence), inserts the turn's new messages and one step
row: its cost follows the turn, never the thread's length, and a crash leaves
no partial step (WAL). Reading a step reads its messages in one query.

The store is also a :class:`SqliteCheckpointer` on the same file, so threads
saved in the older whole-checkpoint format stay readable (``get_checkpoint``)
and can be converted in place. Damage is reported, never hidden: a file SQLite
cannot read (truncated, overwritten) or a step whose messages are missing or
unreadable raises ``CheckpointCorrupt`` naming the file, table, thread and step.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

from ctxcore.kit import (
    StepRecord,
    ThreadSnapshot,
    UnknownStep,
    check_expected,
    check_keep_last,
    check_thread_id,
    corrupt,
    encode_messages,
    encode_metadata,
    fence,
    newest_readable,
    snapshot_of_rows,
    step_time,
    unknown_step,
)
from ctxcore_checkpointers.sqlite import SqliteCheckpointer

__all__ = ["SqliteThreadStore"]

_LOG_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS ctx_thread_log (thread_id TEXT NOT NULL, seq INTEGER NOT NULL, body TEXT NOT NULL,"
    " PRIMARY KEY (thread_id, seq))",
    "CREATE TABLE IF NOT EXISTS ctx_thread_steps (thread_id TEXT NOT NULL, step INTEGER NOT NULL,"
    " messages INTEGER NOT NULL, created_at TEXT NOT NULL, metadata TEXT NOT NULL,"
    " PRIMARY KEY (thread_id, step)) WITHOUT ROWID",
)

_STEP_COLUMNS = "step, messages, created_at, metadata"

T = TypeVar("T")


class SqliteThreadStore(SqliteCheckpointer):
    """Thread logs in one SQLite file shared by threads and processes (and its checkpoints)."""

    def _migrate(self, conn: sqlite3.Connection) -> None:
        super()._migrate(conn)
        have = conn.execute("SELECT count(*) FROM sqlite_master WHERE name IN ('ctx_thread_log', 'ctx_thread_steps')").fetchone()[0]
        if have == 2:
            return
        conn.execute("BEGIN IMMEDIATE")
        try:
            for statement in _LOG_SCHEMA:
                conn.execute(statement)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    @contextmanager
    def _reporting(self, thread_id: str, step: int | None = None) -> Iterator[None]:
        """Turn SQLite's "not a database"/"malformed" errors into ``CheckpointCorrupt``; busy/locked stay as they are."""
        try:
            yield
        except sqlite3.DatabaseError as exc:
            if isinstance(exc, sqlite3.OperationalError) and any(w in str(exc) for w in ("locked", "busy", "unable to open")):
                raise
            raise corrupt(f"{self.path} (tables ctx_thread_log, ctx_thread_steps)", thread_id, step,
                          f"SQLite cannot read the file ({exc})") from exc

    def _write(self, thread_id: str, work: Callable[[sqlite3.Connection], T]) -> T:
        with self._reporting(thread_id):
            conn = self._conn()
            conn.execute("BEGIN IMMEDIATE")
            try:
                result = work(conn)
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            return result

    # ------------------------------------------------------------ writing
    def append(self, thread_id: str, messages: Sequence[Mapping[str, Any]], *, expected_step: int | None,
               metadata: Mapping[str, Any] | None = None, first_step: int = 0) -> StepRecord:
        """Append the messages and one step row in one transaction, fenced on ``expected_step``."""
        check_thread_id(thread_id)
        expected = check_expected(expected_step)
        texts, meta = encode_messages(messages), encode_metadata(metadata)

        def work(conn: sqlite3.Connection) -> StepRecord:
            latest = conn.execute("SELECT step, messages FROM ctx_thread_steps WHERE thread_id = ? ORDER BY step DESC LIMIT 1",
                                  (thread_id,)).fetchone()
            fence(thread_id, expected, latest[0] if latest else None)
            start = latest[1] if latest else 0
            conn.executemany("INSERT INTO ctx_thread_log (thread_id, seq, body) VALUES (?, ?, ?)",
                             [(thread_id, start + i, text) for i, text in enumerate(texts)])
            record = StepRecord(thread_id, first_step if expected is None else expected + 1, start + len(texts), step_time(),
                                json.loads(meta))
            conn.execute(f"INSERT INTO ctx_thread_steps (thread_id, {_STEP_COLUMNS}) VALUES (?, ?, ?, ?, ?)",
                         (thread_id, record.step, record.messages, record.created_at, meta))
            return record

        return self._write(thread_id, work)

    def fork(self, thread_id: str, new_thread_id: str, step: int | None = None) -> StepRecord:
        """Copy ``thread_id`` as of ``step`` into ``new_thread_id`` with one SQL copy of its rows."""
        check_thread_id(thread_id)
        check_thread_id(new_thread_id)

        def work(conn: sqlite3.Connection) -> StepRecord:
            source = self._step_row(conn, thread_id, step)
            if source is None:
                raise UnknownStep(f"thread {thread_id!r} does not exist, so it cannot be forked")
            exists = conn.execute("SELECT 1 FROM ctx_thread_steps WHERE thread_id = ? LIMIT 1", (new_thread_id,)).fetchone()
            fence(new_thread_id, None, 0 if exists else None)
            conn.execute("INSERT INTO ctx_thread_log (thread_id, seq, body) SELECT ?, seq, body FROM ctx_thread_log"
                         " WHERE thread_id = ? AND seq < ?", (new_thread_id, thread_id, source[1]))
            meta = {"forked_from": {"thread_id": thread_id, "step": source[0]}}
            record = StepRecord(new_thread_id, source[0], source[1], step_time(), meta)
            conn.execute(f"INSERT INTO ctx_thread_steps (thread_id, {_STEP_COLUMNS}) VALUES (?, ?, ?, ?, ?)",
                         (new_thread_id, record.step, record.messages, record.created_at, json.dumps(meta)))
            return record

        return self._write(thread_id, work)

    def prune(self, thread_id: str, keep_last: int) -> int:  # type: ignore[override]
        """Delete all but the newest ``keep_last`` step rows (the log stays); also prunes old-format checkpoints."""
        check_keep_last(keep_last)
        check_thread_id(thread_id)
        gone = super().prune(thread_id, keep_last)

        def work(conn: sqlite3.Connection) -> int:
            cur = conn.execute(
                "DELETE FROM ctx_thread_steps WHERE thread_id = ? AND step < ("
                " SELECT step FROM ctx_thread_steps WHERE thread_id = ? ORDER BY step DESC LIMIT 1 OFFSET ?)",
                (thread_id, thread_id, keep_last - 1))
            return int(cur.rowcount)

        return gone + self._write(thread_id, work)

    def delete_thread(self, thread_id: str) -> None:
        """Delete the thread's log, steps and old-format checkpoints."""
        check_thread_id(thread_id)

        def work(conn: sqlite3.Connection) -> None:
            for table in ("ctx_thread_log", "ctx_thread_steps", "ctx_checkpoints"):
                conn.execute(f"DELETE FROM {table} WHERE thread_id = ?", (thread_id,))

        self._write(thread_id, work)

    def expire(self, idle_before: str) -> list[str]:
        """Delete every thread whose latest step is older than ``idle_before``."""
        def work(conn: sqlite3.Connection) -> list[str]:
            idle = sorted(r[0] for r in conn.execute(
                "SELECT thread_id FROM ctx_thread_steps GROUP BY thread_id HAVING max(created_at) < ?", (idle_before,)))
            for thread in idle:
                for table in ("ctx_thread_log", "ctx_thread_steps", "ctx_checkpoints"):
                    conn.execute(f"DELETE FROM {table} WHERE thread_id = ?", (thread,))
            return idle

        return self._write("*", work)

    # ------------------------------------------------------------ reading
    @staticmethod
    def _step_row(conn: sqlite3.Connection, thread_id: str, step: int | None) -> tuple[int, int, str, str] | None:
        if step is None:
            return conn.execute(f"SELECT {_STEP_COLUMNS} FROM ctx_thread_steps WHERE thread_id = ? ORDER BY step DESC LIMIT 1",
                                (thread_id,)).fetchone()
        row = conn.execute(f"SELECT {_STEP_COLUMNS} FROM ctx_thread_steps WHERE thread_id = ? AND step = ?", (thread_id, step)).fetchone()
        if row is None:
            steps = [r[0] for r in conn.execute("SELECT step FROM ctx_thread_steps WHERE thread_id = ? ORDER BY step", (thread_id,))]
            if steps:
                raise unknown_step(thread_id, step, steps)
        return row

    def _snapshot(self, conn: sqlite3.Connection, thread_id: str, row: tuple[int, int, str, str]) -> ThreadSnapshot:
        bodies = conn.execute("SELECT seq, body FROM ctx_thread_log WHERE thread_id = ? AND seq < ? ORDER BY seq",
                              (thread_id, row[1])).fetchall()
        return snapshot_of_rows(f"{self.path} table ctx_thread_log", thread_id, row, bodies)

    def read(self, thread_id: str, step: int | None = None) -> ThreadSnapshot | None:
        """The thread as of ``step`` (default the latest), or ``None``."""
        check_thread_id(thread_id)
        with self._reporting(thread_id, step):
            conn = self._conn()
            row = self._step_row(conn, thread_id, step)
            return None if row is None else self._snapshot(conn, thread_id, row)

    def salvage(self, thread_id: str) -> ThreadSnapshot | None:
        """The newest step that reads intact (``None`` when none does or the file cannot be opened)."""
        check_thread_id(thread_id)
        return newest_readable(lambda: [r.step for r in self.list_steps(thread_id)], lambda step: self.read(thread_id, step))

    def list_steps(self, thread_id: str) -> list[StepRecord]:
        """The thread's step records, oldest first."""
        check_thread_id(thread_id)
        with self._reporting(thread_id):
            rows = self._conn().execute(f"SELECT {_STEP_COLUMNS} FROM ctx_thread_steps WHERE thread_id = ? ORDER BY step",
                                        (thread_id,)).fetchall()
        out = []
        for step, count, created, meta in rows:
            try:
                out.append(StepRecord(thread_id, step, count, created, json.loads(meta)))
            except ValueError as exc:
                raise corrupt(f"{self.path} table ctx_thread_steps", thread_id, step, f"the step's metadata is not JSON ({exc})") from exc
        return out

    def list_threads(self) -> list[str]:
        """Threads with log steps or old-format checkpoints, sorted."""
        with self._reporting("*"):
            rows = self._conn().execute("SELECT DISTINCT thread_id FROM ctx_thread_steps").fetchall()
            old = super().list_threads()
        return sorted({r[0] for r in rows} | set(old))
