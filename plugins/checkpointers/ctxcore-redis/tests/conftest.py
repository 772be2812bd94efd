"""A real redis-server for these tests (a throwaway server on a free loopback port, or CTXCORE_TEST_REDIS_URL)."""

from __future__ import annotations

import uuid

import pytest

from ctxcore.testing.harness.redis import redis_url  # noqa: F401  (the session fixture)


@pytest.fixture
def key_prefix() -> str:
    """A key prefix no other test uses, so tests on the one server never see each other's threads."""
    return f"test:{uuid.uuid4().hex[:12]}"
