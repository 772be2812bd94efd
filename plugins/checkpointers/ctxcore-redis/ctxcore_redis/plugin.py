"""Entry point of ctxcore-redis: registers the ``redis`` thread store."""

from __future__ import annotations

from typing import Any

from ctxcore import hookimpl
from ctxcore_redis.connection import RedisConfig
from ctxcore_redis.threads import RedisThreadStore


def _redis_threads(config: RedisConfig) -> RedisThreadStore:
    return RedisThreadStore.from_config(config)


@hookimpl
def register_thread_stores(register: Any) -> None:
    """Offer the Redis thread log (``threads: {type: redis, url: redis://...}``)."""
    register("redis", _redis_threads, config=RedisConfig,
             description="Thread logs in plain Redis/Valkey >= 6 (no modules): a list per thread, fenced Lua appends, optional TTL.")
