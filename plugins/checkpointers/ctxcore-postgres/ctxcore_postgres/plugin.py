"""Entry point of ctxcore-postgres: registers the ``postgres`` checkpointer."""

from __future__ import annotations

from typing import Any

from ctxcore import hookimpl
from ctxcore_postgres.checkpointer import PostgresCheckpointer, PostgresCheckpointerConfig


def _postgres(config: PostgresCheckpointerConfig) -> PostgresCheckpointer:
    return PostgresCheckpointer.from_config(config)


@hookimpl
def register_checkpointers(register: Any) -> None:
    """Offer the PostgreSQL checkpointer."""
    register("postgres", _postgres, config=PostgresCheckpointerConfig,
             description="Checkpoints in PostgreSQL (psycopg 3, pooled); stale steps get StaleWrite.")
