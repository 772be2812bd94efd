"""Collect an integration's tests only where that integration is installed.

Each framework integration (plugins/integrations/<distribution>/) is installed,
with its framework, only in its own venv (``make test-integrations``), so the
main venv's ``pytest`` skips the integrations it does not hold instead of
failing to import their frameworks; each integration's venv runs its own suite.
"""

from __future__ import annotations

from pathlib import Path

import importlib_metadata


def _installed(distribution: str) -> bool:
    try:
        importlib_metadata.distribution(distribution)
    except importlib_metadata.PackageNotFoundError:
        return False
    return True


collect_ignore = sorted(
    d.name for d in Path(__file__).parent.iterdir() if (d / "pyproject.toml").is_file() and not _installed(d.name)
)
