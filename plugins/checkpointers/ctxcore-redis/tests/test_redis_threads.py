"""The redis thread store against a real redis-server: the ThreadStoreContract with damage, fork and real processes."""

from __future__ import annotations

from typing import Any

import pytest
import redis
from ctxcore_redis import RedisThreadStore

from ctxcore.testing.contracts import ThreadStoreContract


def _client(url: str) -> redis.Redis:
    return redis.Redis.from_url(url)


class TestRedisLog(ThreadStoreContract):
    """The contract under a fresh key prefix of the test server."""

    max_examples = 10
    kills = 20

    @pytest.fixture
    def location(self, redis_url: str, key_prefix: str) -> Any:
        return (redis_url, key_prefix)

    def make_store(self, location: Any) -> RedisThreadStore:
        url, prefix = location
        return RedisThreadStore(url, key_prefix=prefix)

    def damage_step(self, location: Any, thread_id: str, step: int) -> None:
        url, prefix = location
        client = _client(url)
        store = RedisThreadStore(url, key_prefix=prefix)
        count = next(r.messages for r in store.list_steps(thread_id) if r.step == step)
        client.lset(f"{prefix}:log:{thread_id}", count - 1, '{"role": "us')
        client.close()
