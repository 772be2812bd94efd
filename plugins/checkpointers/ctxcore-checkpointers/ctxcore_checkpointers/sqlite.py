"""``sqlite``: the embedded default checkpointer — one SQLite file in WAL mode.

- Writes run in ``BEGIN IMMEDIATE`` transactions (the write lock is taken up
  front, so the newest-step check and the insert cannot interleave with another
  writer) under ``synchronous=FULL``: a save is durable when it returns.
- A busy timeout makes concurrent writers (threads or processes) wait instead of
  failing with "database is locked".
- One connection per OS thread, never shared across ``fork``: a child process
  notices the changed pid and opens its own connections. Connections inherited
  from the parent are left untouched (closing them in the child could disturb
  the parent's locks), so they are kept referenced and never closed here.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ctxcore.kit import (
    AsyncCheckpointerMixin,
    check_keep_last,
    check_thread_id,
    checkpoint_dict,
    encode_checkpoint,
    ensure_newer,
)

__all__ = ["SqliteCheckpointer", "SqliteConfig", "SCHEMA_VERSION", "PAGE_SIZE"]

#: ``PRAGMA user_version`` of the file layout this module writes.
SCHEMA_VERSION = 1

#: page size of a new file. Conversation rows are ~0.3-2 KB; appended in order they left about a
#: third of each 4 KiB page unused, 16 KiB pages leave about a tenth (docs/persistence.md).
PAGE_SIZE = 16384

_SCHEMA = """
CREATE TABLE IF NOT EXISTS ctx_checkpoints (
    thread_id TEXT NOT NULL,
    step INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    state_dump TEXT NOT NULL,
    tree_state TEXT NOT NULL,
    runtime_metadata TEXT NOT NULL,
    PRIMARY KEY (thread_id, step)
) WITHOUT ROWID
"""

_COLUMNS = "thread_id, step, state_dump, tree_state, runtime_metadata, created_at"

# Connections a forked child inherited: never used, never closed (see module docstring).
_INHERITED: list[sqlite3.Connection] = []


class SqliteConfig(BaseModel):
    """Options of the ``sqlite`` checkpointer."""

    model_config = ConfigDict(extra="forbid")

    #: the database file (its directory is created if missing).
    path: str = ".ctx/checkpoints.db"
    #: how long a writer waits for another writer's lock before failing.
    busy_timeout_ms: int = Field(default=30_000, ge=0)


class SqliteCheckpointer(AsyncCheckpointerMixin):
    """Checkpoints in one SQLite file shared by threads and processes."""

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout_ms: int = 30_000) -> None:
        self.path = Path(path)
        self.busy_timeout_ms = busy_timeout_ms
        self._local = threading.local()
        self._all: list[sqlite3.Connection] = []
        self._all_lock = threading.Lock()
        self._pid = os.getpid()

    # ------------------------------------------------------------ connections
    def _conn(self) -> sqlite3.Connection:
        """This thread's connection in this process (opened and set up on first use)."""
        pid = os.getpid()
        if pid != self._pid:
            with self._all_lock:
                if pid != self._pid:
                    _INHERITED.extend(self._all)
                    self._all = []
                    self._local = threading.local()
                    self._pid = pid
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._open()
            self._local.conn = conn
            with self._all_lock:
                self._all.append(conn)
        return conn

    def _open(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.path, timeout=self.busy_timeout_ms / 1000, isolation_level=None, check_same_thread=True)
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_ms)}")
            if conn.execute("PRAGMA page_count").fetchone()[0] == 0:
                conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")  # a new file: before WAL fixes the page size
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise sqlite3.OperationalError(f"{self.path}: could not switch to WAL mode (got {mode!r})")
            conn.execute("PRAGMA synchronous = FULL")
            self._migrate(conn)
        except BaseException:
            conn.close()
            raise
        return conn

    def _migrate(self, conn: sqlite3.Connection) -> None:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version == SCHEMA_VERSION:
            return
        if version > SCHEMA_VERSION:
            raise RuntimeError(
                f"{self.path}: checkpoint schema version {version} is newer than this ctxcore-checkpointers "
                f"supports ({SCHEMA_VERSION}); upgrade ctxcore-checkpointers"
            )
        conn.execute("BEGIN IMMEDIATE")
        try:
            if conn.execute("PRAGMA user_version").fetchone()[0] < SCHEMA_VERSION:
                conn.execute(_SCHEMA)
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def close(self) -> None:
        """Close the connections this process opened (call from the process that uses the checkpointer)."""
        if os.getpid() != self._pid:
            return
        with self._all_lock:
            conns, self._all = self._all, []
            self._local = threading.local()
        for conn in conns:
            try:
                conn.close()
            except sqlite3.ProgrammingError:
                pass  # opened in a thread that has exited; the connection goes with it

    # ------------------------------------------------------------ writing
    def save_checkpoint(self, thread_id: str, step: int, state_dump: Any, tree_state: Any = None, runtime_metadata: Any = None) -> None:
        """Insert the checkpoint in one ``BEGIN IMMEDIATE`` transaction; ``StaleWrite`` unless newest."""
        enc = encode_checkpoint(thread_id, step, state_dump, tree_state, runtime_metadata)
        conn = self._conn()
        conn.execute("BEGIN IMMEDIATE")
        try:
            latest = conn.execute("SELECT max(step) FROM ctx_checkpoints WHERE thread_id = ?", (enc.thread_id,)).fetchone()[0]
            ensure_newer(enc.thread_id, enc.step, latest)
            conn.execute(
                f"INSERT INTO ctx_checkpoints ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)",
                (enc.thread_id, enc.step, enc.state_json, enc.tree_json, enc.metadata_json, enc.created_at),
            )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def delete_thread(self, thread_id: str) -> None:
        """Delete every checkpoint of the thread."""
        self._conn().execute("DELETE FROM ctx_checkpoints WHERE thread_id = ?", (check_thread_id(thread_id),))

    def prune(self, thread_id: str, keep_last: int) -> int:
        """Delete all but the newest ``keep_last`` checkpoints; return how many went."""
        check_keep_last(keep_last)
        cur = self._conn().execute(
            "DELETE FROM ctx_checkpoints WHERE thread_id = ? AND step < ("
            " SELECT step FROM ctx_checkpoints WHERE thread_id = ? ORDER BY step DESC LIMIT 1 OFFSET ?)",
            (check_thread_id(thread_id), thread_id, keep_last - 1),
        )
        return cur.rowcount

    # ------------------------------------------------------------ reading
    def get_checkpoint(self, thread_id: str) -> dict[str, Any] | None:
        """The latest checkpoint, or ``None``."""
        row = self._conn().execute(
            f"SELECT {_COLUMNS} FROM ctx_checkpoints WHERE thread_id = ? ORDER BY step DESC LIMIT 1",
            (check_thread_id(thread_id),),
        ).fetchone()
        return checkpoint_dict(*row) if row else None

    def list_checkpoints(self, thread_id: str) -> list[dict[str, Any]]:
        """The thread's checkpoints, oldest first."""
        rows = self._conn().execute(
            f"SELECT {_COLUMNS} FROM ctx_checkpoints WHERE thread_id = ? ORDER BY step",
            (check_thread_id(thread_id),),
        ).fetchall()
        return [checkpoint_dict(*row) for row in rows]

    def list_threads(self) -> list[str]:
        """Threads with checkpoints, sorted."""
        rows = self._conn().execute("SELECT DISTINCT thread_id FROM ctx_checkpoints").fetchall()
        return sorted(r[0] for r in rows)

    def integrity_check(self) -> str:
        """``PRAGMA integrity_check`` of the file (``"ok"`` when healthy)."""
        return str(self._conn().execute("PRAGMA integrity_check").fetchone()[0])
