"""``postgres`` thread store: a message log per thread, step rows and a head row, for many workers.

Tables (component ``threadlog`` in ``ctxcore_schema_versions``)::

    ctx_thread_heads(thread_id, latest_step, messages, updated_at)   the fence, one row per thread
    ctx_thread_log(thread_id, seq, body)                            one row per message
    ctx_thread_steps(thread_id, step, messages, created_at, metadata)

A save is one transaction: it locks the thread's head row (``FOR UPDATE``, or
inserts it for a new thread), checks the expected step, inserts the turn's new
messages and one step row and moves the head. Two workers saving the same
thread from the same step serialize on the head row; the second sees the moved
step and gets ``StaleWrite`` with nothing written. Values are JSON text, not
jsonb (jsonb cannot hold ``\\u0000`` and rewrites numbers and key order).

The store is also a :class:`PostgresCheckpointer` on the same schema, so threads
saved in the older whole-checkpoint format stay readable and convert in place.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

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
from ctxcore_postgres.checkpointer import PostgresCheckpointer

__all__ = ["PostgresThreadStore"]


def _migrations(db: Any) -> list[list[Any]]:
    from psycopg import sql

    heads, log, steps = db.ident("ctx_thread_heads"), db.ident("ctx_thread_log"), db.ident("ctx_thread_steps")
    return [[
        sql.SQL("CREATE TABLE {} (thread_id text PRIMARY KEY, latest_step bigint NOT NULL, messages bigint NOT NULL, "
                "updated_at text NOT NULL)").format(heads),
        sql.SQL("CREATE TABLE {} (thread_id text NOT NULL, seq bigint NOT NULL, body text NOT NULL, "
                "PRIMARY KEY (thread_id, seq))").format(log),
        sql.SQL("CREATE TABLE {} (thread_id text NOT NULL, step bigint NOT NULL, messages bigint NOT NULL, "
                "created_at text NOT NULL, metadata text NOT NULL, PRIMARY KEY (thread_id, step))").format(steps),
        sql.SQL("CREATE INDEX ON {} (updated_at)").format(heads),
    ]]


class PostgresThreadStore(PostgresCheckpointer):
    """Thread logs in a PostgreSQL schema shared by every worker that connects to it (and its checkpoints)."""

    def __init__(self, db: Any) -> None:
        super().__init__(db)
        self._heads = db.ident("ctx_thread_heads")
        self._log = db.ident("ctx_thread_log")
        self._steps = db.ident("ctx_thread_steps")

    def _conn(self) -> Any:
        self.db.ensure_schema("checkpointer", _checkpointer_migrations(self.db))
        self.db.ensure_schema("threadlog", _migrations(self.db))
        return self.db.connection()

    def _where(self) -> str:
        return f"PostgreSQL schema {self.db.schema!r} (tables ctx_thread_log, ctx_thread_steps)"

    # ------------------------------------------------------------ writing
    def _head(self, conn: Any, thread_id: str) -> tuple[int, int] | None:
        from psycopg import sql

        row = conn.execute(sql.SQL("SELECT latest_step, messages FROM {} WHERE thread_id = %s FOR UPDATE").format(self._heads),
                           (thread_id,)).fetchone()
        return (int(row[0]), int(row[1])) if row else None

    def _claim_new(self, conn: Any, thread_id: str, step: int, count: int, now: str) -> bool:
        from psycopg import sql

        return conn.execute(sql.SQL("INSERT INTO {} (thread_id, latest_step, messages, updated_at) VALUES (%s, %s, %s, %s) "
                                    "ON CONFLICT (thread_id) DO NOTHING RETURNING 1").format(self._heads),
                            (thread_id, step, count, now)).fetchone() is not None

    def _write_step(self, conn: Any, record: StepRecord, meta_json: str, texts: Sequence[str], start: int) -> None:
        from psycopg import sql

        if texts:
            with conn.cursor() as cur:
                cur.executemany(sql.SQL("INSERT INTO {} (thread_id, seq, body) VALUES (%s, %s, %s)").format(self._log),
                                [(record.thread_id, start + i, t) for i, t in enumerate(texts)])
        conn.execute(sql.SQL("INSERT INTO {} (thread_id, step, messages, created_at, metadata) VALUES (%s, %s, %s, %s, %s)")
                     .format(self._steps), (record.thread_id, record.step, record.messages, record.created_at, meta_json))

    def append(self, thread_id: str, messages: Sequence[Mapping[str, Any]], *, expected_step: int | None,
               metadata: Mapping[str, Any] | None = None, first_step: int = 0) -> StepRecord:
        """Append the messages and one step row in one transaction, fenced on the thread's head row."""
        from psycopg import sql

        check_thread_id(thread_id)
        expected = check_expected(expected_step)
        texts, meta = encode_messages(messages), encode_metadata(metadata)
        now = step_time()
        with self._conn() as conn, conn.transaction():
            if expected is None:
                record = StepRecord(thread_id, first_step, len(texts), now, json.loads(meta))
                if not self._claim_new(conn, thread_id, record.step, record.messages, now):
                    fence(thread_id, None, self._head(conn, thread_id)[0])  # type: ignore[index]
                start = 0
            else:
                head = self._head(conn, thread_id)
                fence(thread_id, expected, head[0] if head else None)
                assert head is not None
                start = head[1]
                record = StepRecord(thread_id, expected + 1, start + len(texts), now, json.loads(meta))
                conn.execute(sql.SQL("UPDATE {} SET latest_step = %s, messages = %s, updated_at = %s WHERE thread_id = %s")
                             .format(self._heads), (record.step, record.messages, now, thread_id))
            self._write_step(conn, record, meta, texts, start)
        return record

    def fork(self, thread_id: str, new_thread_id: str, step: int | None = None) -> StepRecord:
        """Copy ``thread_id`` as of ``step`` into ``new_thread_id`` with one SQL copy of its rows."""
        from psycopg import sql

        check_thread_id(thread_id)
        check_thread_id(new_thread_id)
        with self._conn() as conn, conn.transaction():
            source = self._step_row(conn, thread_id, step)
            if source is None:
                raise UnknownStep(f"thread {thread_id!r} does not exist, so it cannot be forked")
            meta = {"forked_from": {"thread_id": thread_id, "step": source[0]}}
            record = StepRecord(new_thread_id, source[0], source[1], step_time(), meta)
            if not self._claim_new(conn, new_thread_id, record.step, record.messages, record.created_at):
                fence(new_thread_id, None, self._head(conn, new_thread_id)[0])  # type: ignore[index]
            conn.execute(sql.SQL("INSERT INTO {l} (thread_id, seq, body) SELECT %s, seq, body FROM {l} "
                                 "WHERE thread_id = %s AND seq < %s").format(l=self._log), (new_thread_id, thread_id, source[1]))
            self._write_step(conn, record, json.dumps(meta), [], 0)
        return record

    def prune(self, thread_id: str, keep_last: int) -> int:  # type: ignore[override]
        """Delete all but the newest ``keep_last`` step rows (the log stays); also prunes old-format checkpoints."""
        from psycopg import sql

        check_thread_id(thread_id)
        check_keep_last(keep_last)
        gone = super().prune(thread_id, keep_last)
        with self._conn() as conn, conn.transaction():
            cur = conn.execute(sql.SQL(
                "DELETE FROM {s} WHERE thread_id = %s AND step < ("
                " SELECT step FROM {s} WHERE thread_id = %s ORDER BY step DESC OFFSET %s LIMIT 1)"
            ).format(s=self._steps), (thread_id, thread_id, keep_last - 1))
            return gone + int(cur.rowcount)

    def _delete(self, conn: Any, thread_id: str) -> None:
        from psycopg import sql

        for table in (self._heads, self._log, self._steps, self._threads, self._checkpoints):
            conn.execute(sql.SQL("DELETE FROM {} WHERE thread_id = %s").format(table), (thread_id,))

    def delete_thread(self, thread_id: str) -> None:
        """Delete the thread's head, log, steps and old-format checkpoints in one transaction."""
        check_thread_id(thread_id)
        with self._conn() as conn, conn.transaction():
            self._delete(conn, thread_id)

    def expire(self, idle_before: str) -> list[str]:
        """Delete every thread whose latest step is older than ``idle_before``."""
        from psycopg import sql

        with self._conn() as conn, conn.transaction():
            idle = sorted(r[0] for r in conn.execute(sql.SQL("SELECT thread_id FROM {} WHERE updated_at < %s FOR UPDATE")
                                                     .format(self._heads), (idle_before,)).fetchall())
            for thread in idle:
                self._delete(conn, thread)
        return idle

    # ------------------------------------------------------------ reading
    def _step_row(self, conn: Any, thread_id: str, step: int | None) -> tuple[int, int, str, str] | None:
        from psycopg import sql

        cols = "step, messages, created_at, metadata"
        if step is None:
            return conn.execute(sql.SQL(f"SELECT {cols} FROM {{}} WHERE thread_id = %s ORDER BY step DESC LIMIT 1")
                                .format(self._steps), (thread_id,)).fetchone()
        row = conn.execute(sql.SQL(f"SELECT {cols} FROM {{}} WHERE thread_id = %s AND step = %s").format(self._steps),
                           (thread_id, step)).fetchone()
        if row is None:
            steps = [r[0] for r in conn.execute(sql.SQL("SELECT step FROM {} WHERE thread_id = %s ORDER BY step")
                                                .format(self._steps), (thread_id,)).fetchall()]
            if steps:
                raise unknown_step(thread_id, step, steps)
        return row

    def read(self, thread_id: str, step: int | None = None) -> ThreadSnapshot | None:
        """The thread as of ``step`` (default the latest), or ``None``: two queries."""
        from psycopg import sql

        check_thread_id(thread_id)
        with self._conn() as conn:
            row = self._step_row(conn, thread_id, step)
            if row is None:
                return None
            bodies = conn.execute(sql.SQL("SELECT seq, body FROM {} WHERE thread_id = %s AND seq < %s ORDER BY seq")
                                  .format(self._log), (thread_id, row[1])).fetchall()
        return snapshot_of_rows(self._where(), thread_id, row, bodies)

    def salvage(self, thread_id: str) -> ThreadSnapshot | None:
        """The newest step that reads intact (``None`` when none does); never raises ``CheckpointCorrupt``."""
        return newest_readable(lambda: [r.step for r in self.list_steps(thread_id)], lambda step: self.read(thread_id, step))

    def list_steps(self, thread_id: str) -> list[StepRecord]:
        """The thread's step records, oldest first."""
        from psycopg import sql

        check_thread_id(thread_id)
        with self._conn() as conn:
            rows = conn.execute(sql.SQL("SELECT step, messages, created_at, metadata FROM {} WHERE thread_id = %s ORDER BY step")
                                .format(self._steps), (thread_id,)).fetchall()
        out = []
        for step, count, created, meta in rows:
            try:
                out.append(StepRecord(thread_id, int(step), int(count), created, json.loads(meta)))
            except ValueError as exc:
                raise corrupt(self._where(), thread_id, int(step), f"the step's metadata is not JSON ({exc})") from exc
        return out

    def list_threads(self) -> list[str]:
        """Threads with log steps or old-format checkpoints, sorted by code point."""
        from psycopg import sql

        with self._conn() as conn:
            rows = conn.execute(sql.SQL("SELECT thread_id FROM {} UNION SELECT thread_id FROM {}")
                                .format(self._heads, self._threads)).fetchall()
        return sorted(r[0] for r in rows)


def _checkpointer_migrations(db: Any) -> list[list[Any]]:
    from ctxcore_postgres.checkpointer import _migrations as checkpointer_migrations

    return checkpointer_migrations(db)
