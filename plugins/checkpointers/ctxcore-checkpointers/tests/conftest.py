"""Tests marked ``slow`` run only with CTXCORE_RUN_SLOW=1."""

from __future__ import annotations

import os

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get("CTXCORE_RUN_SLOW") == "1":
        return
    skip = pytest.mark.skip(reason="slow: set CTXCORE_RUN_SLOW=1 to run")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
