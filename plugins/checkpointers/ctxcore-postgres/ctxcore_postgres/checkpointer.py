"""``postgres``: checkpoints in PostgreSQL, for many workers on many machines.

Each save is one transaction. A per-thread head row holds the latest step; the
save moves it forward with a conditional upsert (``... WHERE latest_step <
new``), which row-locks the head, so of two workers resuming the same thread
from the same checkpoint exactly one writes the next step and the other gets
:class:`~ctxcore.errors.StaleWrite` — the history cannot fork.
"""

from __future__ import annotations

from typing import Any

from ctxcore import StaleWrite
from ctxcore.kit import (
    AsyncCheckpointerMixin,
    check_keep_last,
    check_thread_id,
    checkpoint_dict,
    encode_checkpoint,
    ensure_newer,
)
from ctxcore_postgres.connection import PgConfig, PgDatabase

__all__ = ["PostgresCheckpointer", "PostgresCheckpointerConfig"]

_COLUMNS = "thread_id, step, state_dump, tree_state, runtime_metadata, created_at"


class PostgresCheckpointerConfig(PgConfig):
    """Options of the ``postgres`` checkpointer (connection options only)."""


def _migrations(db: PgDatabase) -> list[list[Any]]:
    from psycopg import sql

    threads, checkpoints = db.ident("ctx_checkpoint_threads"), db.ident("ctx_checkpoints")
    return [[
        sql.SQL("CREATE TABLE {} (thread_id text PRIMARY KEY, latest_step bigint NOT NULL)").format(threads),
        # Values are JSON text, not jsonb: jsonb cannot hold \u0000 and rewrites numbers and key order.
        sql.SQL(
            "CREATE TABLE {} (thread_id text NOT NULL, step bigint NOT NULL, created_at text NOT NULL, "
            "state_dump text NOT NULL, tree_state text NOT NULL, runtime_metadata text NOT NULL, "
            "PRIMARY KEY (thread_id, step))"
        ).format(checkpoints),
    ]]


class PostgresCheckpointer(AsyncCheckpointerMixin):
    """Checkpoints in a PostgreSQL schema, shared by every worker that connects to it."""

    def __init__(self, db: PgDatabase) -> None:
        self.db = db
        self._threads = db.ident("ctx_checkpoint_threads")
        self._checkpoints = db.ident("ctx_checkpoints")

    @classmethod
    def from_config(cls, config: PgConfig) -> PostgresCheckpointer:
        """A checkpointer with its own pool for ``config``."""
        return cls(PgDatabase.from_config(config))

    def _conn(self) -> Any:
        self.db.ensure_schema("checkpointer", _migrations(self.db))
        return self.db.connection()

    def save_checkpoint(self, thread_id: str, step: int, state_dump: Any, tree_state: Any = None, runtime_metadata: Any = None) -> None:
        """Advance the thread's head and insert the checkpoint in one transaction; ``StaleWrite`` unless newest."""
        from psycopg import sql

        enc = encode_checkpoint(thread_id, step, state_dump, tree_state, runtime_metadata)
        with self._conn() as conn, conn.transaction():
            moved = conn.execute(sql.SQL(
                "INSERT INTO {t} AS h (thread_id, latest_step) VALUES (%s, %s) ON CONFLICT (thread_id) "
                "DO UPDATE SET latest_step = EXCLUDED.latest_step WHERE h.latest_step < EXCLUDED.latest_step "
                "RETURNING latest_step"
            ).format(t=self._threads), (enc.thread_id, enc.step)).fetchone()
            if moved is None:
                row = conn.execute(sql.SQL("SELECT latest_step FROM {} WHERE thread_id = %s").format(self._threads), (enc.thread_id,)).fetchone()
                ensure_newer(enc.thread_id, enc.step, row[0] if row else None)
                raise StaleWrite(f"thread {enc.thread_id!r}: step {enc.step} lost a race with another writer; reload and retry")
            conn.execute(
                sql.SQL(f"INSERT INTO {{}} ({_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s)").format(self._checkpoints),
                (enc.thread_id, enc.step, enc.state_json, enc.tree_json, enc.metadata_json, enc.created_at),
            )

    def get_checkpoint(self, thread_id: str) -> dict[str, Any] | None:
        """The latest checkpoint, or ``None``."""
        from psycopg import sql

        check_thread_id(thread_id)
        with self._conn() as conn:
            row = conn.execute(
                sql.SQL(f"SELECT {_COLUMNS} FROM {{}} WHERE thread_id = %s ORDER BY step DESC LIMIT 1").format(self._checkpoints),
                (thread_id,),
            ).fetchone()
        return checkpoint_dict(*row) if row else None

    def list_checkpoints(self, thread_id: str) -> list[dict[str, Any]]:
        """The thread's checkpoints, oldest first."""
        from psycopg import sql

        check_thread_id(thread_id)
        with self._conn() as conn:
            rows = conn.execute(
                sql.SQL(f"SELECT {_COLUMNS} FROM {{}} WHERE thread_id = %s ORDER BY step").format(self._checkpoints),
                (thread_id,),
            ).fetchall()
        return [checkpoint_dict(*row) for row in rows]

    def list_threads(self) -> list[str]:
        """Threads with checkpoints, sorted by code point (as Python sorts)."""
        from psycopg import sql

        with self._conn() as conn:
            rows = conn.execute(sql.SQL("SELECT thread_id FROM {}").format(self._threads)).fetchall()
        return sorted(r[0] for r in rows)

    def delete_thread(self, thread_id: str) -> None:
        """Delete the thread's head and checkpoints in one transaction."""
        from psycopg import sql

        check_thread_id(thread_id)
        with self._conn() as conn, conn.transaction():
            conn.execute(sql.SQL("DELETE FROM {} WHERE thread_id = %s").format(self._threads), (thread_id,))
            conn.execute(sql.SQL("DELETE FROM {} WHERE thread_id = %s").format(self._checkpoints), (thread_id,))

    def prune(self, thread_id: str, keep_last: int) -> int:
        """Delete all but the newest ``keep_last`` checkpoints; return how many went."""
        from psycopg import sql

        check_thread_id(thread_id)
        check_keep_last(keep_last)
        with self._conn() as conn, conn.transaction():
            cur = conn.execute(sql.SQL(
                "DELETE FROM {c} WHERE thread_id = %s AND step < ("
                " SELECT step FROM {c} WHERE thread_id = %s ORDER BY step DESC OFFSET %s LIMIT 1)"
            ).format(c=self._checkpoints), (thread_id, thread_id, keep_last - 1))
            return int(cur.rowcount)

    def close(self) -> None:
        """Close the connection pool."""
        self.db.close()
