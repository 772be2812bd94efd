"""``redis`` thread store: a message log per thread in plain Redis/Valkey >= 6 (no modules), for many workers.

Keys (``P`` is the configured ``key_prefix``, ``ID`` the thread id's UTF-8 bytes)::

    P:log:ID      list        one entry per message: crc32 (8 hex digits) + the message's exact JSON
    P:steps:ID    sorted set  one member per step record, score = step: sha1 (40 hex) + record JSON
    P:threads     sorted set  every thread id, score = its latest step's time (µs since the epoch)

A save is one Lua script (:mod:`ctxcore_redis.scripts`): it checks that the
latest step is the expected one (else ``StaleWrite``, nothing written), pushes
the turn's new messages, adds the step record, moves the thread's index score
and refreshes its TTL. A read is one script too, so it sees one moment. Each
message and record carries a checksum; a read that finds a bad checksum, a
body that is not JSON, a missing message or a key of the wrong type raises
``CheckpointCorrupt`` naming the key, the thread and the step.
"""

from __future__ import annotations

import hashlib
import json
import zlib
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any, TypeVar

from ctxcore.kit import (
    StepRecord,
    ThreadSnapshot,
    UnknownStep,
    check_expected,
    check_keep_last,
    check_step,
    check_thread_id,
    corrupt,
    encode_messages,
    encode_metadata,
    fence,
    newest_readable,
    step_time,
    unknown_step,
)
from ctxcore_redis import scripts
from ctxcore_redis.connection import RedisConfig, RedisServer

__all__ = ["RedisThreadStore"]

T = TypeVar("T")
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def micros(iso: str) -> int:
    """Microseconds since the epoch of an ISO 8601 time with an offset (exact, unlike a float timestamp)."""
    moment = datetime.fromisoformat(iso)
    if moment.tzinfo is None:
        raise ValueError(f"{iso!r} has no UTC offset; use e.g. 2026-01-01T00:00:00+00:00")
    delta = moment - _EPOCH
    return (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds


def _entry(text: str) -> bytes:
    body = text.encode("utf-8")
    return b"%08x" % zlib.crc32(body) + body


def _score(raw: Any) -> int:
    return int(float(raw))


class RedisThreadStore:
    """Thread logs in one Redis database, shared by every worker that connects to it with the same key prefix."""

    def __init__(self, url: str, *, key_prefix: str = "ctx", ttl_ms: int = 0, timeout: float = 10.0) -> None:
        self.server = RedisServer(url, timeout=timeout)
        self.prefix = key_prefix.encode("utf-8")
        self.ttl_ms = max(0, int(ttl_ms))
        self._index = self.prefix + b":threads"
        self._scripts: dict[str, Any] = {}
        self._client_id = 0

    @classmethod
    def from_config(cls, config: RedisConfig) -> RedisThreadStore:
        """A store for validated YAML options."""
        return cls(config.url, key_prefix=config.key_prefix, ttl_ms=config.ttl_ms(), timeout=config.timeout)

    # ------------------------------------------------------------ plumbing
    def _keys(self, thread_id: str) -> tuple[bytes, bytes]:
        tid = thread_id.encode("utf-8", "surrogatepass")
        return self.prefix + b":log:" + tid, self.prefix + b":steps:" + tid

    def _where(self, key: bytes) -> str:
        return f"Redis {self.server.shown} key {key.decode('utf-8', 'replace')!r}"

    def _script(self, name: str) -> Any:
        client = self.server.client
        if id(client) != self._client_id:  # a new client (first use, or a forked child)
            self._scripts, self._client_id = {}, id(client)
        if name not in self._scripts:
            self._scripts[name] = client.register_script(getattr(scripts, name))
        return self._scripts[name]

    def _run(self, what: str, thread_id: str | None, fn: Callable[[], T]) -> T:
        """``fn`` through the server's error mapping; a key of the wrong type is damage (``CheckpointCorrupt``)."""
        import redis.exceptions as rex

        try:
            return self.server.call(what, fn)
        except rex.ResponseError as exc:
            key = self._keys(thread_id)[1] if thread_id is not None else self._index
            raise corrupt(self._where(key).replace(":steps:", ":{log,steps}:"), thread_id or "*", None,
                          f"a key holds the wrong type of value ({str(exc).strip()[:200]})") from exc

    # ------------------------------------------------------------ decoding
    def _record(self, thread_id: str, raw: bytes, step: int | None) -> StepRecord:
        """A stored step record, checked against its sha1."""
        key = self._keys(thread_id)[1]
        digest, body = raw[:40], raw[40:]
        if hashlib.sha1(body).hexdigest().encode() != digest:
            raise corrupt(self._where(key), thread_id, step, "the step record fails its checksum")
        try:
            data = json.loads(body)
            record = StepRecord(thread_id, int(data["step"]), int(data["messages"]), str(data["created_at"]), data["metadata"])
        except (ValueError, KeyError, TypeError) as exc:
            raise corrupt(self._where(key), thread_id, step, f"the step record is not readable ({exc})") from exc
        if step is not None and record.step != step:
            raise corrupt(self._where(key), thread_id, step, f"the record stored for step {step} says step {record.step}")
        return record

    def _messages(self, thread_id: str, record: StepRecord, entries: Sequence[bytes]) -> list[dict[str, Any]]:
        """The log entries of a step, each checked against its crc32, as message dicts."""
        key = self._keys(thread_id)[0]
        if len(entries) != record.messages:
            raise corrupt(self._where(key), thread_id, record.step,
                          f"the step counts {record.messages} messages but {len(entries)} are stored")
        bodies = []
        for i, raw in enumerate(entries):
            body = raw[8:]
            if b"%08x" % zlib.crc32(body) != raw[:8]:
                raise corrupt(self._where(key), thread_id, record.step, f"message {i} fails its checksum")
            bodies.append(body)
        try:
            return list(json.loads(b"[" + b",".join(bodies) + b"]"))
        except ValueError as exc:
            raise corrupt(self._where(key), thread_id, record.step, f"a stored message is not JSON ({exc})") from exc

    # ------------------------------------------------------------ writing
    def append(self, thread_id: str, messages: Sequence[Mapping[str, Any]], *, expected_step: int | None,
               metadata: Mapping[str, Any] | None = None, first_step: int = 0) -> StepRecord:
        """Append the messages and one step record in one Lua script, fenced on the thread's latest step."""
        check_thread_id(thread_id)
        expected = check_expected(expected_step)
        step = check_step(first_step) if expected is None else expected + 1
        texts, meta = encode_messages(messages), encode_metadata(metadata)
        now = step_time()
        log, steps = self._keys(thread_id)
        args = ["" if expected is None else str(expected), str(step), now, micros(now), meta, self.ttl_ms,
                thread_id.encode("utf-8", "surrogatepass"), *(_entry(t) for t in texts)]
        reply = self._run(f"save thread {thread_id!r}", thread_id,
                          lambda: self._script("APPEND")(keys=[log, steps, self._index], args=args))
        if int(reply[0]) != 1:
            fence(thread_id, expected, _score(reply[1]) if len(reply) > 1 else None)
        return StepRecord(thread_id, step, int(reply[1]), now, json.loads(meta))

    def fork(self, thread_id: str, new_thread_id: str, step: int | None = None) -> StepRecord:
        """Copy ``thread_id`` as of ``step`` into ``new_thread_id`` with one script (server-side copy of the log)."""
        check_thread_id(thread_id)
        check_thread_id(new_thread_id)
        at = self._latest_step(thread_id) if step is None else check_step(step)
        if at is None:
            raise UnknownStep(f"thread {thread_id!r} does not exist, so it cannot be forked")
        meta = {"forked_from": {"thread_id": thread_id, "step": at}}
        now = step_time()
        src_log, src_steps = self._keys(thread_id)
        new_log, new_steps = self._keys(new_thread_id)
        args = [str(at), now, micros(now), json.dumps(meta, ensure_ascii=False), self.ttl_ms,
                new_thread_id.encode("utf-8", "surrogatepass")]
        reply = self._run(f"fork thread {thread_id!r}", thread_id, lambda: self._script("FORK")(
            keys=[src_log, src_steps, new_log, new_steps, self._index], args=args))
        code = int(reply[0])
        if code == 0:
            raise unknown_step(thread_id, at, [r.step for r in self.list_steps(thread_id)])
        if code == 1:
            fence(new_thread_id, None, _score(reply[1]))
        if code == 2:
            self._record(thread_id, reply[1], at)  # raises for a damaged record
            raise corrupt(self._where(src_log), thread_id, at, "the log holds fewer messages than the step counts")
        return StepRecord(new_thread_id, at, int(reply[1]), now, meta)

    def prune(self, thread_id: str, keep_last: int) -> int:
        """Delete all but the newest ``keep_last`` step records (the log stays): one ``ZREMRANGEBYRANK``."""
        check_thread_id(thread_id)
        keep = check_keep_last(keep_last)
        steps = self._keys(thread_id)[1]
        return int(self._run(f"prune thread {thread_id!r}", thread_id,
                             lambda: self.server.client.zremrangebyrank(steps, 0, -keep - 1)))

    def delete_thread(self, thread_id: str) -> None:
        """Delete the thread's log, steps and index entry in one script."""
        check_thread_id(thread_id)
        self._delete(thread_id, "")

    def _delete(self, thread_id: str, cutoff: int | str) -> bool:
        log, steps = self._keys(thread_id)
        tid = thread_id.encode("utf-8", "surrogatepass")
        return bool(self._run(f"delete thread {thread_id!r}", thread_id, lambda: self._script("DELETE")(
            keys=[log, steps, self._index], args=[tid, cutoff])))

    def expire(self, idle_before: str) -> list[str]:
        """Delete every thread whose latest step is older than ``idle_before``; each delete re-checks atomically."""
        cutoff = micros(idle_before)
        raw = self._run("list idle threads", None, lambda: self.server.client.zrangebyscore(self._index, "-inf", f"({cutoff}"))
        gone = [tid for tid in (r.decode("utf-8", "surrogatepass") for r in raw) if self._delete(tid, cutoff)]
        return sorted(gone)

    # ------------------------------------------------------------ reading
    def _latest_step(self, thread_id: str) -> int | None:
        steps = self._keys(thread_id)[1]
        last = self._run(f"read thread {thread_id!r}", thread_id,
                         lambda: self.server.client.zrange(steps, -1, -1, withscores=True))
        return _score(last[0][1]) if last else None

    def read(self, thread_id: str, step: int | None = None) -> ThreadSnapshot | None:
        """The thread as of ``step`` (default the latest), or ``None``: one script, checksums checked."""
        check_thread_id(thread_id)
        at = None if step is None else check_step(step)
        log, steps = self._keys(thread_id)
        reply = self._run(f"read thread {thread_id!r}", thread_id,
                          lambda: self._script("READ")(keys=[log, steps], args=["" if at is None else str(at)]))
        if not reply:
            if at is not None:
                have = [r.step for r in self.list_steps(thread_id)]
                if have:
                    raise unknown_step(thread_id, at, have)
            return None
        record = self._record(thread_id, reply[0], _score(reply[1]))
        entries = reply[2] if len(reply) > 2 else []
        return ThreadSnapshot(record, self._messages(thread_id, record, entries))

    def salvage(self, thread_id: str) -> ThreadSnapshot | None:
        """The newest step that reads intact (``None`` when none does); never raises ``CheckpointCorrupt``."""
        check_thread_id(thread_id)
        steps = self._keys(thread_id)[1]

        def numbers() -> list[int]:
            scored = self._run(f"read thread {thread_id!r}", thread_id,
                               lambda: self.server.client.zrange(steps, 0, -1, withscores=True))
            return [_score(score) for _, score in scored]

        return newest_readable(numbers, lambda step: self.read(thread_id, step))

    def list_steps(self, thread_id: str) -> list[StepRecord]:
        """The thread's step records, oldest first (checksums checked)."""
        check_thread_id(thread_id)
        steps = self._keys(thread_id)[1]
        scored = self._run(f"read thread {thread_id!r}", thread_id,
                           lambda: self.server.client.zrange(steps, 0, -1, withscores=True))
        return [self._record(thread_id, raw, _score(score)) for raw, score in scored]

    def list_threads(self) -> list[str]:
        """Threads with steps, sorted by code point; index entries of threads whose keys expired are dropped."""
        client = self.server.client
        raw = self._run("list threads", None, lambda: client.zrange(self._index, 0, -1))
        ids = [r.decode("utf-8", "surrogatepass") for r in raw]

        def exists() -> list[Any]:
            pipe = client.pipeline(transaction=False)
            for tid in ids:
                pipe.exists(self._keys(tid)[1])
            return list(pipe.execute())

        alive = self._run("list threads", None, exists) if ids else []
        for tid, live in zip(ids, alive, strict=True):
            if not live:
                self._forget(tid)
        return sorted(tid for tid, live in zip(ids, alive, strict=True) if live)

    def _forget(self, thread_id: str) -> None:
        """Drop the index entry of a thread whose keys are gone (its TTL ended), unless it was saved again meanwhile."""
        keys = [self._keys(thread_id)[1], self._index]
        tid = thread_id.encode("utf-8", "surrogatepass")
        self._run("list threads", thread_id, lambda: self._script("FORGET")(keys=keys, args=[tid]))

    def close(self) -> None:
        """Close this process's connections."""
        self.server.close()
        self._scripts, self._client_id = {}, 0
