"""Options and the client of a Redis/Valkey server: URL, key prefix, TTL, and errors that name the server.

Every call the store makes goes through :meth:`RedisServer.call`, which turns
redis-py's exceptions into ctxcore errors: an unreachable server (refused,
timed out, wrong password, still loading) into :class:`RedisUnavailable`, a
refused write (out of memory, a read-only replica, a cluster redirect) into
:class:`RedisRefused`, both naming the URL with its password redacted. A raw
redis exception never reaches the caller: a CLI user sees one line with the fix.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ctxcore import CtxError
from ctxcore.kit import parse_age

__all__ = ["RedisConfig", "RedisRefused", "RedisServer", "RedisUnavailable", "redact_url"]

T = TypeVar("T")


class RedisUnavailable(CtxError, ConnectionError):
    """The server cannot be reached (or refuses the credentials) at the configured URL."""


class RedisRefused(CtxError):
    """The server answered but refused a command (out of memory, read-only replica, cluster redirect...)."""


def redact_url(url: str) -> str:
    """``url`` with its password (and a username-only secret) replaced by ``***``."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<unparsable redis url>"
    if parts.password is None and parts.username is None:
        return url
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    user = parts.username if parts.password is not None else None
    auth = f"{user}:***" if user else ":***" if parts.password is not None else "***"
    return urlunsplit((parts.scheme, f"{auth}@{host}", parts.path, parts.query, parts.fragment))


class RedisConfig(BaseModel):
    """YAML options of the ``redis`` thread store (``threads: {type: redis, url: ..., key_prefix: ...}``)."""

    model_config = ConfigDict(extra="forbid")

    #: ``redis://[[user]:password@]host[:port][/db]``, ``rediss://`` for TLS, or ``unix:///path/redis.sock`` (use ``${VAR}`` for secrets).
    url: str = Field(min_length=1)
    #: first part of every key (``PREFIX:log:THREAD``...); several apps can share one database with different prefixes.
    key_prefix: str = Field(default="ctx", min_length=1, max_length=200)
    #: a thread's keys expire this long after its latest save (``30d``, ``12h``...); none: keep until deleted/expired.
    ttl: str | None = None
    #: seconds to wait for a connection or a reply before failing.
    timeout: float = Field(default=10.0, gt=0)

    @field_validator("url")
    @classmethod
    def _scheme(cls, url: str) -> str:
        scheme = url.split("://", 1)[0].lower() if "://" in url else ""
        if scheme not in ("redis", "rediss", "unix", "valkey", "valkeys"):
            raise ValueError(f"{redact_url(url)!r} is not a Redis URL; use redis://host:6379/0, rediss://... (TLS) or unix:///path/redis.sock")
        return url

    @field_validator("ttl")
    @classmethod
    def _ttl(cls, ttl: str | None) -> str | None:
        if ttl is not None:
            parse_age(ttl)
        return ttl

    def ttl_ms(self) -> int:
        """The TTL in milliseconds (0: no TTL)."""
        return 0 if self.ttl is None else int(parse_age(self.ttl).total_seconds() * 1000)


class RedisServer:
    """A redis-py client for one URL (opened lazily, reopened in a forked child) and the error mapping."""

    def __init__(self, url: str, *, timeout: float = 10.0) -> None:
        RedisConfig(url=url)  # the scheme check
        self.url = url
        self.shown = redact_url(url)
        self.timeout = timeout
        self._client: Any = None
        self._pid = os.getpid()

    @property
    def client(self) -> Any:
        """This process's ``redis.Redis`` (bytes replies; a forked child opens its own)."""
        if self._client is None or self._pid != os.getpid():
            import redis

            url = self.url.replace("valkey", "redis", 1) if self.url.startswith("valkey") else self.url
            self._client = redis.Redis.from_url(url, socket_timeout=self.timeout, socket_connect_timeout=self.timeout,
                                                health_check_interval=30)
            self._pid = os.getpid()
        return self._client

    def call(self, what: str, fn: Callable[[], T]) -> T:
        """Run ``fn`` (which talks to the server); map connection and refusal errors to ctxcore errors naming the URL."""
        import redis.exceptions as rex

        try:
            return fn()
        except (rex.ConnectionError, rex.TimeoutError) as exc:
            reason = str(exc).strip() or type(exc).__name__
            raise RedisUnavailable(f"cannot {what}: Redis at {self.shown} is unreachable ({reason}); check the url "
                                   "(host, port, password, rediss:// for TLS) and that the server is running") from exc
        except rex.ResponseError as exc:
            if "WRONGTYPE" in str(exc):
                raise  # damage: the store turns it into CheckpointCorrupt naming the key
            raise RedisRefused(f"cannot {what}: Redis at {self.shown} refused the command ({str(exc).strip()}); "
                               "a primary with free memory is needed (not a read-only replica; Redis Cluster is not supported)") from exc

    def close(self) -> None:
        """Close this process's connections."""
        client, self._client = self._client, None
        if client is not None and self._pid == os.getpid():
            client.close()
