"""The postgres thread store against a real PostgreSQL server: the ThreadStoreContract with damage, fork and real processes."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from ctxcore_postgres import PgDatabase, PostgresThreadStore
from psycopg import sql

from ctxcore.testing.contracts import ThreadStoreContract


class TestPostgresLog(ThreadStoreContract):
    """The contract on a fresh schema of the test server."""

    max_examples = 10
    kills = 20

    @pytest.fixture
    def location(self, pg_dsn: str, pg_schema: str) -> Any:
        return (pg_dsn, pg_schema)

    def make_store(self, location: Any) -> PostgresThreadStore:
        dsn, schema = location
        return PostgresThreadStore(PgDatabase(dsn, schema=schema, min_size=1, max_size=4))

    def damage_step(self, location: Any, thread_id: str, step: int) -> None:
        dsn, schema = location
        with psycopg.connect(dsn, autocommit=True) as conn:
            count = conn.execute(sql.SQL("SELECT messages FROM {} WHERE thread_id = %s AND step = %s")
                                 .format(sql.Identifier(schema, "ctx_thread_steps")), (thread_id, step)).fetchone()[0]
            conn.execute(sql.SQL("UPDATE {} SET body = '{{\"role\": \"us' WHERE thread_id = %s AND seq = %s")
                         .format(sql.Identifier(schema, "ctx_thread_log")), (thread_id, count - 1))
