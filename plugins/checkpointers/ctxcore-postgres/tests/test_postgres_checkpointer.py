"""The postgres checkpointer against a real PostgreSQL server: contract, concurrency, stale writers, schema versions."""

from __future__ import annotations

import os
from typing import Any

import psycopg
import pytest
from ctxcore_postgres import (
    PgDatabase,
    PgUnavailable,
    PostgresCheckpointer,
    SchemaTooNew,
)
from psycopg import sql

from ctxcore import StaleWrite
from ctxcore.testing import fresh_host
from ctxcore.testing.contracts.checkpointer import CheckpointerContract
from ctxcore.testing.harness.checkpointer_stress import concurrent_writers


def _make(dsn: str, schema: str) -> PostgresCheckpointer:
    return PostgresCheckpointer(PgDatabase(dsn, schema=schema, min_size=1, max_size=4))


class TestPostgres(CheckpointerContract):
    """The contract on a fresh schema of the test server."""

    max_examples = 15

    @pytest.fixture
    def location(self, pg_dsn: str, pg_schema: str) -> Any:
        return (pg_dsn, pg_schema)

    def make_checkpointer(self, location: Any) -> PostgresCheckpointer:
        return _make(*location)


def test_eight_processes_write_one_database(pg_dsn: str, pg_schema: str) -> None:
    """Eight processes on one fresh schema: created once, every acknowledged write present exactly once."""
    report = concurrent_writers(lambda: _make(pg_dsn, pg_schema), processes=8)
    assert report.own == 8 * 2 * 8
    assert report.shared_steps == list(range(8 * 6))


def _resume_and_save(dsn: str, schema: str, ready_w: int, go_r: int, result_w: int) -> None:
    """Child: load the latest checkpoint, wait for the go signal, save the next step, report the outcome."""
    try:
        cp = _make(dsn, schema)
        latest = cp.get_checkpoint("job")
        os.write(ready_w, b"r")
        os.read(go_r, 1)
        try:
            cp.save_checkpoint("job", latest["step"] + 1, {"by": os.getpid()})
            os.write(result_w, b"saved\n")
        except StaleWrite:
            os.write(result_w, b"stale\n")
        cp.close()
        os._exit(0)
    except BaseException:
        os._exit(3)


def _read_all(fd: int) -> str:
    out = b""
    while chunk := os.read(fd, 100):
        out += chunk
    return out.decode()


def test_two_workers_resuming_one_thread(pg_dsn: str, pg_schema: str) -> None:
    """Two workers resume the same checkpoint at once: one saves, the other gets StaleWrite; no fork."""
    cp = _make(pg_dsn, pg_schema)
    cp.save_checkpoint("job", 0, {"by": "setup"})
    for round_ in range(10):
        ready_r, ready_w = os.pipe()
        go_r, go_w = os.pipe()
        res_r, res_w = os.pipe()
        pids = []
        for _ in range(2):
            pid = os.fork()
            if pid == 0:  # pragma: no cover - child
                _resume_and_save(pg_dsn, pg_schema, ready_w, go_r, res_w)
            pids.append(pid)
        for fd in (ready_w, go_r, res_w):
            os.close(fd)
        assert os.read(ready_r, 1) + os.read(ready_r, 1) == b"rr"
        os.write(go_w, b"gg")  # release both at once
        statuses = [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in pids]
        outcomes = sorted(_read_all(res_r).split())
        for fd in (ready_r, go_w, res_r):
            os.close(fd)
        assert statuses == [0, 0]
        assert outcomes == ["saved", "stale"], f"round {round_}: {outcomes}"
        steps = [c["step"] for c in cp.list_checkpoints("job")]
        assert steps == list(range(round_ + 2))  # one new step per round: the history never forks
    cp.close()


def test_schema_is_versioned(pg_dsn: str, pg_schema: str) -> None:
    """First use creates the schema and records the checkpointer's version in ctxcore_schema_versions."""
    cp = _make(pg_dsn, pg_schema)
    assert cp.list_threads() == []
    with psycopg.connect(pg_dsn) as conn:
        rows = conn.execute(sql.SQL("SELECT component, version FROM {}").format(sql.Identifier(pg_schema, "ctxcore_schema_versions"))).fetchall()
    assert rows == [("checkpointer", 1)]
    cp.close()


def test_newer_schema_is_refused(pg_dsn: str, pg_schema: str) -> None:
    """A schema migrated by a newer release is not written to; the error says to upgrade."""
    first = _make(pg_dsn, pg_schema)
    first.list_threads()  # creates the schema at version 1
    first.close()
    with psycopg.connect(pg_dsn) as conn:
        conn.execute(sql.SQL("UPDATE {} SET version = 99").format(sql.Identifier(pg_schema, "ctxcore_schema_versions")))
    cp = _make(pg_dsn, pg_schema)
    with pytest.raises(SchemaTooNew, match="upgrade ctxcore-postgres"):
        cp.save_checkpoint("t", 1, {})
    cp.close()


def test_pool_is_not_shared_across_fork(pg_dsn: str, pg_schema: str) -> None:
    """An instance used before fork opens its own pool in the child; the parent's sessions keep working."""
    cp = _make(pg_dsn, pg_schema)
    cp.save_checkpoint("t", 1, {"who": "parent"})
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        try:
            cp.save_checkpoint("t", 2, {"who": "child"})
            os._exit(0)
        except BaseException:
            os._exit(3)
    assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
    assert cp.get_checkpoint("t")["state_dump"] == {"who": "child"}
    cp.save_checkpoint("t", 3, {"who": "parent"})
    assert [c["step"] for c in cp.list_checkpoints("t")] == [1, 2, 3]
    cp.close()


def test_configured_from_a_pipeline(pg_dsn: str, pg_schema: str) -> None:
    """`checkpointer: {type: postgres, dsn: ..., schema: ...}` in YAML creates a working checkpointer."""
    import ctxcore_counters.plugin
    import ctxcore_postgres.plugin

    from ctxcore import Pipeline

    host = fresh_host(("ctxcore-counters", ctxcore_counters.plugin), ("ctxcore-postgres", ctxcore_postgres.plugin))
    text = f"version: 1\ncheckpointer:\n  type: postgres\n  dsn: ${{PG_DSN}}\n  schema: {pg_schema}\n  max_size: 2\n"
    p = Pipeline.from_string(text, host=host, env={"PG_DSN": pg_dsn})
    cp = p.checkpointer
    assert isinstance(cp, PostgresCheckpointer) and cp.db.schema == pg_schema and cp.db.max_size == 2
    cp.save_checkpoint("t", 1, {"ok": True})
    assert cp.get_checkpoint("t")["state_dump"] == {"ok": True}
    cp.close()


def test_unreachable_server_says_why(tmp_path: Any) -> None:
    """A DSN nobody answers fails within the timeout with the server-side reason, not a bare pool timeout."""
    cp = PostgresCheckpointer(PgDatabase(f"host={tmp_path} port=5432 dbname=nothing user=nobody", timeout=1))
    with pytest.raises(PgUnavailable, match="cannot connect to PostgreSQL: .*No such file or directory"):
        cp.save_checkpoint("t", 1, {})
