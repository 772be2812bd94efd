"""Entry point of ctxcore-postgres: registers the ``postgres`` checkpointer, thread store and memory store."""

from __future__ import annotations

from typing import Any

from ctxcore import hookimpl
from ctxcore_postgres.checkpointer import (
    PostgresCheckpointer,
    PostgresCheckpointerConfig,
)
from ctxcore_postgres.connection import PgDatabase
from ctxcore_postgres.memory import PostgresMemoryConfig, PostgresMemoryStore
from ctxcore_postgres.threads import PostgresThreadStore


def _postgres(config: PostgresCheckpointerConfig) -> PostgresCheckpointer:
    return PostgresCheckpointer.from_config(config)


def _postgres_threads(config: PostgresCheckpointerConfig) -> PostgresThreadStore:
    return PostgresThreadStore(PgDatabase.from_config(config))


def _postgres_memory(config: PostgresMemoryConfig) -> PostgresMemoryStore:
    return PostgresMemoryStore.from_config(config)


@hookimpl
def register_checkpointers(register: Any) -> None:
    """Offer the PostgreSQL checkpointer."""
    register("postgres", _postgres, config=PostgresCheckpointerConfig,
             description="Checkpoints in PostgreSQL (psycopg 3, pooled); stale steps get StaleWrite.")


@hookimpl
def register_thread_stores(register: Any) -> None:
    """Offer the PostgreSQL thread log (same options as the checkpointer; the same schema can hold both)."""
    register("postgres", _postgres_threads, config=PostgresCheckpointerConfig,
             description="Thread logs in PostgreSQL: one row per message, step rows, a fenced head row per thread.")


@hookimpl
def register_memory_stores(register: Any) -> None:
    """Offer the PostgreSQL memory store."""
    register("postgres", _postgres_memory, config=PostgresMemoryConfig,
             description="Long-term memory in PostgreSQL: full-text ranking (tsvector, GIN), namespaces, filters.")
