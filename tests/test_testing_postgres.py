"""Tests for ctxcore.testing.harness.postgres: the throwaway cluster starts, stops even on failure, and is required in CI."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from ctxcore.testing.harness.postgres import (
    PostgresUnavailable,
    find_bindir,
    throwaway_cluster,
    unavailable,
)


def test_missing_binaries_say_how_to_install(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Without initdb the error names the install command and CTXCORE_TEST_PG_DSN."""
    monkeypatch.setenv("CTXCORE_PG_BINDIR", str(tmp_path))
    assert find_bindir() is None
    with pytest.raises(PostgresUnavailable, match="apt-get install -y postgresql.*CTXCORE_TEST_PG_DSN"):
        with throwaway_cluster():
            pass


def test_unavailable_fails_in_ci_and_skips_elsewhere(monkeypatch: pytest.MonkeyPatch) -> None:
    """In CI a missing PostgreSQL fails the tests; on a developer machine it skips them."""
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="required in CI"):
        unavailable(PostgresUnavailable("no initdb"))
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception, match="no initdb"):
        unavailable(PostgresUnavailable("no initdb"))


def test_cluster_is_stopped_and_removed_even_on_failure() -> None:
    """A failing test body still stops the server and deletes its directory."""
    if find_bindir() is None:
        unavailable(PostgresUnavailable("PostgreSQL is not installed; `make test` installs it"))
    seen: dict[str, str] = {}
    with pytest.raises(RuntimeError, match="boom"):
        with throwaway_cluster() as dsn:
            seen["dir"] = dsn.split()[0].removeprefix("host=")
            isready = find_bindir() / "pg_isready"  # type: ignore[operator]
            assert subprocess.run([str(isready), "-h", seen["dir"], "-p", "5432"], capture_output=True).returncode == 0
            raise RuntimeError("boom")
    assert not os.path.exists(seen["dir"])
