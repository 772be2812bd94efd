"""ctxcore-postgres: PostgreSQL persistence for ctxcore (psycopg 3 with a connection pool): checkpoints, thread logs and long-term memory."""

from __future__ import annotations

from ctxcore_postgres.checkpointer import (
    PostgresCheckpointer,
    PostgresCheckpointerConfig,
)
from ctxcore_postgres.connection import (
    PgConfig,
    PgDatabase,
    PgUnavailable,
    SchemaTooNew,
)
from ctxcore_postgres.memory import PostgresMemoryConfig, PostgresMemoryStore
from ctxcore_postgres.threads import PostgresThreadStore

__all__ = [
    "PgConfig",
    "PgDatabase",
    "PgUnavailable",
    "PostgresCheckpointer",
    "PostgresCheckpointerConfig",
    "PostgresMemoryConfig",
    "PostgresMemoryStore",
    "PostgresThreadStore",
    "SchemaTooNew",
]
