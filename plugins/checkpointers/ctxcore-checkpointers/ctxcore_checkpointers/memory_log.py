"""``memory`` thread store: each thread's message log and step records in this process's memory.

Messages and metadata are kept as their exact JSON text (checked by
``ctxcore.kit.encode_messages``), so what comes back is a fresh copy and what
could not be stored anywhere is refused here too. For tests and transient runs.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ctxcore.kit import (
    StepRecord,
    ThreadSnapshot,
    UnknownStep,
    check_expected,
    check_keep_last,
    check_thread_id,
    encode_messages,
    encode_metadata,
    fence,
    step_time,
    unknown_step,
)

__all__ = ["MemoryThreadStore"]


@dataclass
class _Log:
    messages: list[str] = field(default_factory=list)
    steps: list[tuple[int, int, str, str]] = field(default_factory=list)  # step, count, created_at, metadata json


def _record(thread_id: str, row: tuple[int, int, str, str]) -> StepRecord:
    return StepRecord(thread_id, row[0], row[1], row[2], json.loads(row[3]))


def pick_step(thread_id: str, rows: Sequence[tuple[int, int, str, str]], step: int | None) -> tuple[int, int, str, str]:
    """The row of ``step`` (the last row when ``None``); ``UnknownStep`` naming the steps there are."""
    if step is None:
        return rows[-1]
    for row in rows:
        if row[0] == step:
            return row
    raise unknown_step(thread_id, step, [r[0] for r in rows])


class MemoryThreadStore:
    """Thread logs in a dict guarded by a lock (one process)."""

    def __init__(self) -> None:
        self._logs: dict[str, _Log] = {}
        self._lock = threading.Lock()

    def append(self, thread_id: str, messages: Sequence[Mapping[str, Any]], *, expected_step: int | None,
               metadata: Mapping[str, Any] | None = None, first_step: int = 0) -> StepRecord:
        """Append the messages and one step record, fenced on ``expected_step``."""
        check_thread_id(thread_id)
        expected = check_expected(expected_step)
        texts, meta = encode_messages(messages), encode_metadata(metadata)
        with self._lock:
            log = self._logs.get(thread_id)
            fence(thread_id, expected, log.steps[-1][0] if log else None)
            log = log or self._logs.setdefault(thread_id, _Log())
            log.messages.extend(texts)
            row = (first_step if expected is None else expected + 1, len(log.messages), step_time(), meta)
            log.steps.append(row)
        return _record(thread_id, row)

    def read(self, thread_id: str, step: int | None = None) -> ThreadSnapshot | None:
        """The thread as of ``step`` (default the latest), or ``None``."""
        check_thread_id(thread_id)
        with self._lock:
            log = self._logs.get(thread_id)
            if log is None:
                return None
            row = pick_step(thread_id, log.steps, step)
            texts = log.messages[: row[1]]
        return ThreadSnapshot(_record(thread_id, row), [json.loads(t) for t in texts])

    def salvage(self, thread_id: str) -> ThreadSnapshot | None:
        """Memory cannot be damaged: the same as :meth:`read`."""
        return self.read(thread_id)

    def list_steps(self, thread_id: str) -> list[StepRecord]:
        """The thread's step records, oldest first."""
        check_thread_id(thread_id)
        with self._lock:
            rows = list(self._logs[thread_id].steps) if thread_id in self._logs else []
        return [_record(thread_id, r) for r in rows]

    def list_threads(self) -> list[str]:
        """Threads with steps, sorted."""
        with self._lock:
            return sorted(self._logs)

    def fork(self, thread_id: str, new_thread_id: str, step: int | None = None) -> StepRecord:
        """Copy ``thread_id`` as of ``step`` into ``new_thread_id``."""
        check_thread_id(new_thread_id)
        snap = self.read(thread_id, step)
        if snap is None:
            raise UnknownStep(f"thread {thread_id!r} does not exist, so it cannot be forked")
        meta = {"forked_from": {"thread_id": thread_id, "step": snap.record.step}}
        return self.append(new_thread_id, snap.messages, expected_step=None, metadata=meta, first_step=snap.record.step)

    def prune(self, thread_id: str, keep_last: int) -> int:
        """Drop all but the newest ``keep_last`` step records."""
        check_keep_last(keep_last)
        check_thread_id(thread_id)
        with self._lock:
            log = self._logs.get(thread_id)
            if log is None or len(log.steps) <= keep_last:
                return 0
            gone = len(log.steps) - keep_last
            del log.steps[:gone]
        return gone

    def expire(self, idle_before: str) -> list[str]:
        """Delete threads whose latest step is older than ``idle_before``."""
        with self._lock:
            idle = sorted(t for t, log in self._logs.items() if log.steps[-1][2] < idle_before)
            for thread in idle:
                del self._logs[thread]
        return idle

    def delete_thread(self, thread_id: str) -> None:
        """Forget the thread."""
        check_thread_id(thread_id)
        with self._lock:
            self._logs.pop(thread_id, None)

    def close(self) -> None:
        """Nothing to release."""
