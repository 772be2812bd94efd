"""Entry point of ctxcore-postgres: registers the ``postgres`` checkpointer and memory store."""

from __future__ import annotations

from typing import Any

from ctxcore import hookimpl
from ctxcore_postgres.checkpointer import (
    PostgresCheckpointer,
    PostgresCheckpointerConfig,
)
from ctxcore_postgres.memory import PostgresMemoryConfig, PostgresMemoryStore


def _postgres(config: PostgresCheckpointerConfig) -> PostgresCheckpointer:
    return PostgresCheckpointer.from_config(config)


def _postgres_memory(config: PostgresMemoryConfig) -> PostgresMemoryStore:
    return PostgresMemoryStore.from_config(config)


@hookimpl
def register_checkpointers(register: Any) -> None:
    """Offer the PostgreSQL checkpointer."""
    register("postgres", _postgres, config=PostgresCheckpointerConfig,
             description="Checkpoints in PostgreSQL (psycopg 3, pooled); stale steps get StaleWrite.")


@hookimpl
def register_memory_stores(register: Any) -> None:
    """Offer the PostgreSQL memory store."""
    register("postgres", _postgres_memory, config=PostgresMemoryConfig,
             description="Long-term memory in PostgreSQL: full-text ranking (tsvector, GIN), namespaces, filters.")
