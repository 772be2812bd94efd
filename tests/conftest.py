"""Shared fixtures: plugin autoload is off for unit tests; each test gets its own host."""

from __future__ import annotations

import pytest

from ctxcore.plugins.host import reset_default_host
from ctxcore.testing import fresh_host


@pytest.fixture(autouse=True)
def _no_autoload(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Unit tests never pick up installed plugins implicitly, nor a listing of plugin commands another test cached.

    `ctx` (in-process and in subprocesses) keeps that listing in a cache directory of each test's own.
    """
    for key in ("CTXCORE_PLUGINS", "CTXCORE_BLOCK_PLUGINS", "CTXCORE_STRICT_PLUGINS"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("CTXCORE_DISABLE_PLUGIN_AUTOLOAD", "1")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg-cache")))
    reset_default_host()
    yield
    reset_default_host()


@pytest.fixture
def host():
    """A fresh host holding the three workspace plugins, registered in-process."""
    import ctxcore_counters.plugin
    import ctxcore_filters.plugin
    import ctxcore_providers.plugin

    return fresh_host(
        ("ctxcore-providers", ctxcore_providers.plugin),
        ("ctxcore-filters", ctxcore_filters.plugin),
        ("ctxcore-counters", ctxcore_counters.plugin),
    )


@pytest.fixture(params=["reference", "fast"])
def history_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run a history behaviour test on each path: ``reference`` (eager, never stand-ins) and ``fast`` (stand-ins at every size).

    The fast path is normally taken only for a run of more than ``FAST_RUN`` new
    items; here its threshold is 0 (every size takes it) or out of reach, so the
    same small histories exercise both implementations, as CPython's json tests
    run against its pure and C versions.
    """
    from ctxcore_providers.history import provider

    monkeypatch.setattr(provider, "FAST_RUN", 0 if request.param == "fast" else 1 << 62)
    return str(request.param)
