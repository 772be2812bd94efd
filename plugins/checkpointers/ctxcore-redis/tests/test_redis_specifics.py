"""What the redis thread store does beyond the contract: TTL, checksums, wrong-type keys, NOSCRIPT, errors, YAML, a restart."""

from __future__ import annotations

import os
import signal
import socket
import time
from pathlib import Path
from typing import Any

import pytest
import redis
from ctxcore_redis import RedisConfig, RedisThreadStore, RedisUnavailable, redact_url
from pydantic import ValidationError

from ctxcore import CheckpointCorrupt, Pipeline, StaleWrite
from ctxcore.testing.contracts.thread_store import sample_message
from ctxcore.testing.harness.redis import throwaway_redis


@pytest.fixture
def store(redis_url: str, key_prefix: str) -> Any:
    made = RedisThreadStore(redis_url, key_prefix=key_prefix)
    yield made
    made.close()


@pytest.fixture
def raw(redis_url: str) -> Any:
    client = redis.Redis.from_url(redis_url)
    yield client
    client.close()


def _fill(store: RedisThreadStore, thread: str = "t", turns: int = 3) -> None:
    step = None
    for i in range(turns):
        step = store.append(thread, [sample_message(2 * i), sample_message(2 * i + 1)], expected_step=step).step


def test_keys_follow_the_documented_layout(store: RedisThreadStore, raw: Any, key_prefix: str) -> None:
    """A thread is a list of messages, a sorted set of step records and an entry in the prefix's thread index."""
    _fill(store, "chat-1", turns=2)
    assert raw.type(f"{key_prefix}:log:chat-1") == b"list" and raw.llen(f"{key_prefix}:log:chat-1") == 4
    assert raw.type(f"{key_prefix}:steps:chat-1") == b"zset" and raw.zcard(f"{key_prefix}:steps:chat-1") == 2
    assert raw.zrange(f"{key_prefix}:threads", 0, -1) == [b"chat-1"]
    assert sorted(raw.keys(f"{key_prefix}:*")) == sorted(k.encode() for k in (
        f"{key_prefix}:log:chat-1", f"{key_prefix}:steps:chat-1", f"{key_prefix}:threads"))


def test_ttl_is_set_and_refreshed_on_every_save(redis_url: str, key_prefix: str, raw: Any) -> None:
    """With ttl, a thread's keys expire after the TTL; each save sets the full TTL again on both keys."""
    store = RedisThreadStore.from_config(RedisConfig(url=redis_url, key_prefix=key_prefix, ttl="1h"))
    store.append("t", [sample_message(0)], expected_step=None)
    log, steps = f"{key_prefix}:log:t", f"{key_prefix}:steps:t"
    raw.pexpire(log, 5_000)
    raw.pexpire(steps, 5_000)
    store.append("t", [sample_message(1)], expected_step=0)
    assert 3_500_000 < raw.pttl(log) <= 3_600_000 and 3_500_000 < raw.pttl(steps) <= 3_600_000
    store.close()


def test_an_expired_thread_is_gone_and_leaves_the_index(redis_url: str, key_prefix: str, raw: Any) -> None:
    """When the TTL ends the thread reads as unknown, list_threads drops it, and the id can start again."""
    store = RedisThreadStore(redis_url, key_prefix=key_prefix, ttl_ms=50)
    kept = RedisThreadStore(redis_url, key_prefix=key_prefix)  # same keys, no TTL
    kept.append("u", [sample_message(0)], expected_step=None)
    kept.close()
    store.append("t", [sample_message(0)], expected_step=None)
    deadline = time.monotonic() + 10
    while raw.exists(f"{key_prefix}:steps:t") and time.monotonic() < deadline:
        time.sleep(0.02)
    assert store.read("t") is None
    assert store.list_threads() == ["u"]
    assert raw.zrange(f"{key_prefix}:threads", 0, -1) == [b"u"]
    assert store.append("t", [sample_message(9)], expected_step=None).step == 0
    store.close()


def test_a_record_failing_its_checksum_is_corrupt(store: RedisThreadStore, raw: Any, key_prefix: str) -> None:
    """A step record changed on the server (still valid JSON) fails its sha1 and raises CheckpointCorrupt naming the key."""
    _fill(store)
    key = f"{key_prefix}:steps:t"
    member = raw.zrange(key, -1, -1)[0]
    raw.zrem(key, member)
    raw.zadd(key, {member.replace(b'"messages":6', b'"messages":4'): 2})
    with pytest.raises(CheckpointCorrupt, match=rf"key '{key}'.*'t' step 2.*checksum.*--repair"):
        store.read("t")
    assert store.salvage("t").record.step == 1


def test_a_message_failing_its_checksum_is_corrupt(store: RedisThreadStore, raw: Any, key_prefix: str) -> None:
    """A message rewritten in the log with valid JSON but no matching crc raises CheckpointCorrupt, not altered data."""
    _fill(store)
    key = f"{key_prefix}:log:t"
    entry = raw.lindex(key, 0)
    raw.lset(key, 0, entry.replace(b"message 0", b"message X"))
    with pytest.raises(CheckpointCorrupt, match=rf"key '{key}'.*message 0 fails its checksum"):
        store.read("t")
    assert store.salvage("t") is None  # every step holds message 0


def test_a_missing_message_is_corrupt(store: RedisThreadStore, raw: Any, key_prefix: str) -> None:
    """A log shorter than its latest step counts (a trimmed list) raises CheckpointCorrupt; older steps salvage."""
    _fill(store)
    raw.rpop(f"{key_prefix}:log:t")
    with pytest.raises(CheckpointCorrupt, match="counts 6 messages but 5 are stored"):
        store.read("t")
    assert store.salvage("t").record.step == 1


def test_a_key_of_the_wrong_type_is_corrupt(store: RedisThreadStore, raw: Any, key_prefix: str) -> None:
    """A thread key overwritten with another type raises CheckpointCorrupt (never a raw redis ResponseError)."""
    _fill(store)
    raw.set(f"{key_prefix}:log:t", "oops")
    with pytest.raises(CheckpointCorrupt, match="wrong type"):
        store.read("t")
    with pytest.raises(CheckpointCorrupt, match="wrong type"):
        store.append("t", [sample_message(9)], expected_step=2)
    assert store.salvage("t") is None


def test_scripts_are_reloaded_after_a_script_flush(store: RedisThreadStore, raw: Any) -> None:
    """After SCRIPT FLUSH (or a restart) EVALSHA gets NOSCRIPT and the script is loaded again transparently."""
    _fill(store, turns=1)
    raw.script_flush()
    assert store.append("t", [sample_message(5)], expected_step=0).step == 1
    raw.script_flush()
    assert len(store.read("t").messages) == 3


def test_fork_under_ttl_and_fork_onto_existing(redis_url: str, key_prefix: str, raw: Any) -> None:
    """A fork copies the log server-side, gets the TTL, and refuses an existing id with StaleWrite."""
    store = RedisThreadStore(redis_url, key_prefix=key_prefix, ttl_ms=3_600_000)
    _fill(store)
    record = store.fork("t", "f", step=1)
    assert (record.step, record.messages) == (1, 4)
    assert raw.lrange(f"{key_prefix}:log:f", 0, -1) == raw.lrange(f"{key_prefix}:log:t", 0, 3)
    assert raw.pttl(f"{key_prefix}:log:f") > 3_500_000
    with pytest.raises(StaleWrite):
        store.fork("t", "f")
    store.close()


def test_a_large_turn_and_a_long_thread_round_trip(store: RedisThreadStore) -> None:
    """A turn of 2,500 messages (more than one Lua unpack) is appended whole and forked whole."""
    big = [sample_message(i, "x" * (i % 50)) for i in range(2500)]
    store.append("big", big, expected_step=None)
    assert store.read("big").messages == big
    store.fork("big", "big2")
    assert store.read("big2").messages == big


def _dead_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_an_unreachable_server_is_a_clear_error_with_the_password_redacted() -> None:
    """A refused connection raises RedisUnavailable naming the URL without its password, never a redis exception."""
    url = f"redis://app:s3cret@127.0.0.1:{_dead_port()}/0"
    store = RedisThreadStore(url, timeout=2)
    with pytest.raises(RedisUnavailable) as info:
        store.read("t")
    text = str(info.value)
    assert "s3cret" not in text and "redis://app:***@127.0.0.1" in text and "unreachable" in text
    assert not isinstance(info.value, redis.RedisError)


def test_a_wrong_password_is_a_clear_error(redis_url: str) -> None:
    """A password the server does not expect raises RedisUnavailable with the server's reason, password redacted."""
    url = redis_url.replace("redis://", "redis://nobody:wrong-pw@")
    with pytest.raises(RedisUnavailable) as info:
        RedisThreadStore(url).list_threads()
    assert "wrong-pw" not in str(info.value) and "***" in str(info.value)


def test_redact_url() -> None:
    """Passwords never appear in a shown URL; URLs without credentials are unchanged."""
    assert redact_url("redis://:pw@h:6379/0") == "redis://:***@h:6379/0"
    assert redact_url("rediss://u:pw@h/1") == "rediss://u:***@h/1"
    assert redact_url("redis://h:6379") == "redis://h:6379"


def test_config_is_checked() -> None:
    """YAML options: a non-Redis URL, an unknown key or a bad TTL is refused with the accepted forms."""
    with pytest.raises(ValidationError, match="not a Redis URL"):
        RedisConfig(url="postgres://x")
    with pytest.raises(ValidationError, match="is not an age"):
        RedisConfig(url="redis://h", ttl="forever")
    with pytest.raises(ValidationError):
        RedisConfig(url="redis://h", prefix="x")
    assert RedisConfig(url="redis://h", ttl="30d").ttl_ms() == 30 * 86400 * 1000


def test_a_pipeline_saves_threads_to_redis_from_yaml(redis_url: str, key_prefix: str, tmp_path: Path) -> None:
    """`threads: {type: redis, url, key_prefix}` in a pipeline: turns saved by one pipeline are read by another."""
    yaml_path = tmp_path / "p.yaml"
    yaml_path.write_text(f"""
version: 1
model: {{context_window: 4000, reserve_output_tokens: 300}}
target: {{provider: openai}}
providers:
  - {{type: static_prompt, text: You are terse.}}
  - {{type: history}}
threads: {{type: redis, url: "{redis_url}", key_prefix: "{key_prefix}", ttl: 7d}}
""")
    thread = Pipeline.from_yaml(yaml_path).thread("chat")
    thread.add_user("hello")
    thread.add_response({"role": "assistant", "content": "hi"})
    assert thread.save() == 0
    again = Pipeline.from_yaml(yaml_path).thread("chat")
    assert [m.text for m in again.messages] == ["hello", "hi"]
    assert [m.role for m in again.build().messages][-2:] == ["user", "assistant"]


def test_acknowledged_saves_survive_a_server_crash(tmp_path: Path) -> None:
    """With appendonly (fsync always), every acknowledged append is there after the server is SIGKILLed and restarted."""
    with throwaway_redis(appendonly=True, directory=tmp_path) as url:
        store = RedisThreadStore(url)
        _fill(store, turns=5)
        client = redis.Redis.from_url(url)
        pid = int(client.info("server")["process_id"])
        client.close()
        os.kill(pid, signal.SIGKILL)
        with pytest.raises(RedisUnavailable):
            store.append("t", [sample_message(99)], expected_step=4)
        store.close()
    with throwaway_redis(appendonly=True, directory=tmp_path) as url:
        store = RedisThreadStore(url)
        assert store.read("t").messages == [sample_message(i) for i in range(10)]
        assert [r.step for r in store.list_steps("t")] == [0, 1, 2, 3, 4]
        store.close()
