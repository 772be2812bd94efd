"""ctxcore-redis: thread logs (conversations) in plain Redis/Valkey >= 6, with no modules, for many workers."""

from __future__ import annotations

from ctxcore_redis.connection import RedisConfig, RedisRefused, RedisServer, RedisUnavailable, redact_url
from ctxcore_redis.threads import RedisThreadStore

__all__ = ["RedisConfig", "RedisRefused", "RedisServer", "RedisThreadStore", "RedisUnavailable", "redact_url"]
