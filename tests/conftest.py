"""Shared fixtures: plugin autoload is off for unit tests; each test gets its own host."""

from __future__ import annotations

import pytest

from ctxcore.plugins.host import reset_default_host
from ctxcore.testing import fresh_host


@pytest.fixture(autouse=True)
def _no_autoload(monkeypatch: pytest.MonkeyPatch) -> None:
    """Unit tests never pick up installed plugins implicitly."""
    for key in ("CTXCORE_PLUGINS", "CTXCORE_BLOCK_PLUGINS", "CTXCORE_STRICT_PLUGINS"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("CTXCORE_DISABLE_PLUGIN_AUTOLOAD", "1")
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
