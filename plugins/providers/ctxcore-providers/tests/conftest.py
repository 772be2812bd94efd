"""Fixtures of the providers' tests."""

from __future__ import annotations

import pytest


@pytest.fixture(params=["reference", "fast"])
def history_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run a history behaviour test on each path: ``reference`` (eager) and ``fast`` (stand-ins at every size).

    The fast path is normally taken only for a run of more than ``FAST_RUN``
    new items; its threshold is set to 0 or out of reach so the same small
    histories exercise both implementations.
    """
    from ctxcore_providers.history import provider

    monkeypatch.setattr(provider, "FAST_RUN", 0 if request.param == "fast" else 1 << 62)
    return str(request.param)
