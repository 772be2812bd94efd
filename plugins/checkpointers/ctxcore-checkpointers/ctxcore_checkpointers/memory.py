"""``memory`` and ``null``: checkpointers that keep nothing on disk.

``memory`` keeps encoded checkpoints in a dict (tests, transient runs: it applies
the same checks as the durable backends, so a pipeline tested with it behaves
the same with ``sqlite``). ``null`` saves nothing and always returns ``None``.
"""

from __future__ import annotations

import threading
from typing import Any

from ctxcore.kit import (
    AsyncCheckpointerMixin,
    EncodedCheckpoint,
    check_keep_last,
    check_thread_id,
    encode_checkpoint,
    ensure_newer,
)

__all__ = ["MemoryCheckpointer", "NullCheckpointer"]


class MemoryCheckpointer(AsyncCheckpointerMixin):
    """Checkpoints in a dict of this process, lost when it exits; thread-safe."""

    def __init__(self) -> None:
        self._threads: dict[str, list[EncodedCheckpoint]] = {}
        self._lock = threading.Lock()

    def save_checkpoint(self, thread_id: str, step: int, state_dump: Any, tree_state: Any = None, runtime_metadata: Any = None) -> None:
        """Store a copy (as encoded JSON, so later changes to ``state_dump`` do not leak in)."""
        enc = encode_checkpoint(thread_id, step, state_dump, tree_state, runtime_metadata)
        with self._lock:
            history = self._threads.setdefault(enc.thread_id, [])
            ensure_newer(enc.thread_id, enc.step, history[-1].step if history else None)
            history.append(enc)

    def get_checkpoint(self, thread_id: str) -> dict[str, Any] | None:
        """The latest checkpoint, or ``None``."""
        with self._lock:
            history = self._threads.get(check_thread_id(thread_id))
            return history[-1].to_dict() if history else None

    def list_threads(self) -> list[str]:
        """Threads with checkpoints, sorted."""
        with self._lock:
            return sorted(self._threads)

    def list_checkpoints(self, thread_id: str) -> list[dict[str, Any]]:
        """The thread's checkpoints, oldest first."""
        with self._lock:
            return [c.to_dict() for c in self._threads.get(check_thread_id(thread_id), [])]

    def delete_thread(self, thread_id: str) -> None:
        """Forget the thread."""
        with self._lock:
            self._threads.pop(check_thread_id(thread_id), None)

    def prune(self, thread_id: str, keep_last: int) -> int:
        """Keep the newest ``keep_last`` checkpoints; return how many were removed."""
        check_keep_last(keep_last)
        with self._lock:
            history = self._threads.get(check_thread_id(thread_id), [])
            removed = max(0, len(history) - keep_last)
            del history[:removed]
            return removed

    def close(self) -> None:
        """Nothing to release."""


class NullCheckpointer(AsyncCheckpointerMixin):
    """Saves nothing (after checking the arguments like every backend); every read is empty."""

    def save_checkpoint(self, thread_id: str, step: int, state_dump: Any, tree_state: Any = None, runtime_metadata: Any = None) -> None:
        """Validate and discard."""
        encode_checkpoint(thread_id, step, state_dump, tree_state, runtime_metadata)

    def get_checkpoint(self, thread_id: str) -> dict[str, Any] | None:
        """Always ``None``."""
        check_thread_id(thread_id)
        return None

    def list_threads(self) -> list[str]:
        """Always empty."""
        return []

    def list_checkpoints(self, thread_id: str) -> list[dict[str, Any]]:
        """Always empty."""
        check_thread_id(thread_id)
        return []

    def delete_thread(self, thread_id: str) -> None:
        """Nothing to delete."""
        check_thread_id(thread_id)

    def prune(self, thread_id: str, keep_last: int) -> int:
        """Nothing to prune: 0."""
        check_thread_id(thread_id)
        check_keep_last(keep_last)
        return 0

    def close(self) -> None:
        """Nothing to release."""
