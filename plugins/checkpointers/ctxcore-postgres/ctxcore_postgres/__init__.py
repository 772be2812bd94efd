"""ctxcore-postgres: PostgreSQL persistence for ctxcore (psycopg 3 with a connection pool)."""

from __future__ import annotations

from ctxcore_postgres.checkpointer import PostgresCheckpointer, PostgresCheckpointerConfig
from ctxcore_postgres.connection import PgConfig, PgDatabase, PgUnavailable, SchemaTooNew

__all__ = ["PgConfig", "PgDatabase", "PgUnavailable", "PostgresCheckpointer", "PostgresCheckpointerConfig", "SchemaTooNew"]
