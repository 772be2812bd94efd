"""A real PostgreSQL server for these tests (throwaway cluster or CTXCORE_TEST_PG_DSN) and a fresh schema per test."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from ctxcore.testing.harness.postgres import pg_dsn  # noqa: F401  (the session fixture)


@pytest.fixture
def pg_schema(pg_dsn: str) -> Iterator[str]:  # noqa: F811
    """A schema name no other test uses; dropped with everything in it afterwards."""
    import psycopg
    from psycopg import sql

    name = f"ctx_test_{uuid.uuid4().hex[:12]}"
    yield name
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(name)))
