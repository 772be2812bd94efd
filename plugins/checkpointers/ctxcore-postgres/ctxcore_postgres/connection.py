"""A PostgreSQL database shared by the components of this distribution: pool, schema, versions.

Every component (the checkpointer now, a memory store later) asks
:meth:`PgDatabase.ensure_schema` for its tables once per process. Migrations run
in one transaction under an advisory lock, so many workers starting at once
create the schema exactly once, and a version row per component in
``ctxcore_schema_versions`` says which migrations have run.

Pools are not fork-safe: a child process notices the changed pid and opens its
own pool. The parent's pool is left untouched (closing it in the child would end
the parent's server sessions) and kept referenced so it is never closed here.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ctxcore import CtxError

__all__ = ["PgConfig", "PgDatabase", "PgUnavailable", "SchemaTooNew"]

# Pools a forked child inherited: never used, never closed (see module docstring).
_INHERITED: list[Any] = []


class PgUnavailable(CtxError, ConnectionError):
    """The server cannot be reached with the configured DSN; the message carries the server's reason."""


class SchemaTooNew(RuntimeError):
    """The database was migrated by a newer ctxcore-postgres than the one running."""


class PgConfig(BaseModel):
    """Connection options shared by every PostgreSQL component."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    #: libpq connection string or URL, e.g. ``postgresql://app@db.internal/agents`` (use ``${VAR}`` for secrets).
    dsn: str = Field(min_length=1)
    #: PostgreSQL schema holding the tables (created if missing).
    db_schema: str = Field(default="public", alias="schema", min_length=1, max_length=63)
    #: connections kept open by the pool.
    min_size: int = Field(default=1, ge=0)
    #: most connections the pool opens.
    max_size: int = Field(default=10, ge=1)
    #: seconds to wait for a free connection before failing.
    timeout: float = Field(default=30.0, gt=0)


class PgDatabase:
    """A connection pool plus the versioned schema of one PostgreSQL schema."""

    def __init__(self, dsn: str, *, schema: str = "public", min_size: int = 1, max_size: int = 10, timeout: float = 30.0) -> None:
        self.dsn = dsn
        self.schema = schema
        self.min_size = min(min_size, max_size)
        self.max_size = max_size
        self.timeout = timeout
        self._pool: Any = None
        self._pid = os.getpid()
        self._ready: set[str] = set()
        self._lock = threading.Lock()

    @classmethod
    def from_config(cls, config: PgConfig) -> PgDatabase:
        """A database for a validated config."""
        return cls(config.dsn, schema=config.db_schema, min_size=config.min_size, max_size=config.max_size, timeout=config.timeout)

    @property
    def pool(self) -> Any:
        """This process's ``psycopg_pool.ConnectionPool`` (opened on first use)."""
        with self._lock:
            if os.getpid() != self._pid:
                if self._pool is not None:
                    _INHERITED.append(self._pool)
                self._pool, self._pid, self._ready = None, os.getpid(), set()
            if self._pool is None:
                self._pool = self._open_pool()
            return self._pool

    def _open_pool(self) -> Any:
        from psycopg_pool import ConnectionPool, PoolTimeout

        self._probe()
        pool = ConnectionPool(
            self.dsn, min_size=self.min_size, max_size=self.max_size, timeout=self.timeout,
            open=True, name=f"ctxcore-{self.schema}",
        )
        if self.min_size:
            try:
                pool.wait(timeout=self.timeout)
            except PoolTimeout as exc:
                pool.close()
                raise self._unreachable() from exc
        return pool

    def _probe(self) -> None:
        """Connect once before opening the pool: a refused or unknown server fails at once with its reason.

        Without this the pool retries in the background (logging every attempt) until its
        ``timeout`` (30 s by default) and only then says it timed out.
        """
        import psycopg

        try:
            psycopg.connect(self.dsn, connect_timeout=max(1, min(10, round(self.timeout)))).close()
        except psycopg.OperationalError as exc:
            raise PgUnavailable(
                f"cannot connect to PostgreSQL: {str(exc).strip()} (check the dsn of the postgres step and that the server is running)"
            ) from exc

    def _unreachable(self) -> PgUnavailable:
        """The pool only says it timed out; one direct attempt gives the server's reason."""
        import psycopg

        try:
            psycopg.connect(self.dsn, connect_timeout=5).close()
        except psycopg.Error as exc:
            return PgUnavailable(f"cannot connect to PostgreSQL: {str(exc).strip()} (check the dsn of the postgres step and that the server is running)")
        return PgUnavailable(f"no PostgreSQL connection within {self.timeout:g}s (check the dsn, the server's load and max_connections)")

    def connection(self) -> Any:
        """A pooled connection as a context manager (commits on success, rolls back on error)."""
        return self.pool.connection()

    def ident(self, table: str) -> Any:
        """``schema.table`` as a safely quoted SQL identifier."""
        from psycopg import sql

        return sql.Identifier(self.schema, table)

    def ensure_schema(self, component: str, migrations: Sequence[Sequence[Any]]) -> None:
        """Run the migrations of ``component`` not yet applied (``migrations[i]`` brings it to version i+1)."""
        if component in self._ready and os.getpid() == self._pid:
            return
        from psycopg import sql

        versions = self.ident("ctxcore_schema_versions")
        key = int.from_bytes(hashlib.sha256(f"ctxcore:{self.schema}".encode()).digest()[:8], "big", signed=True)
        with self.connection() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (key,))
            conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(self.schema)))
            conn.execute(sql.SQL(
                "CREATE TABLE IF NOT EXISTS {} (component text PRIMARY KEY, version integer NOT NULL, "
                "migrated_at timestamptz NOT NULL DEFAULT now())"
            ).format(versions))
            row = conn.execute(sql.SQL("SELECT version FROM {} WHERE component = %s").format(versions), (component,)).fetchone()
            current = row[0] if row else 0
            if current > len(migrations):
                raise SchemaTooNew(
                    f"schema {self.schema!r}: {component} tables are at version {current}, newer than this "
                    f"ctxcore-postgres supports ({len(migrations)}); upgrade ctxcore-postgres"
                )
            for statements in migrations[current:]:
                for statement in statements:
                    conn.execute(statement)
            if current < len(migrations):
                conn.execute(sql.SQL(
                    "INSERT INTO {} (component, version) VALUES (%s, %s) "
                    "ON CONFLICT (component) DO UPDATE SET version = EXCLUDED.version, migrated_at = now()"
                ).format(versions), (component, len(migrations)))
        self._ready.add(component)

    def close(self) -> None:
        """Close this process's pool."""
        with self._lock:
            pool, self._pool = self._pool, None
            self._ready = set()
        if pool is not None and os.getpid() == self._pid:
            pool.close()
