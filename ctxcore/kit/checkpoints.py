"""What every checkpointer backend shares: argument checks, exact JSON encoding, async variants.

Backends live in plugin distributions that never import each other, so the rules
they must agree on live here:

- a thread id is a non-empty string of at most 512 characters without lone
  surrogates or NUL; a step is an int >= 0
  and each saved step must be newer than the thread's latest (:class:`StaleWrite`);
- a value is stored as JSON text that decodes to an equal value of the same types,
  so anything that would not come back exactly (tuples, non-string keys, NaN, lone
  surrogates, arbitrary objects, nesting deeper than :data:`MAX_DEPTH`) is refused with :class:`UnstorableState` before
  anything is written. No pickle: JSON is the only format.
"""

from __future__ import annotations

import asyncio
import json
import math
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from ctxcore.errors import StaleWrite, UnstorableState

__all__ = [
    "MAX_THREAD_ID",
    "MAX_DEPTH",
    "UnstorableState",
    "EncodedCheckpoint",
    "AsyncCheckpointerMixin",
    "check_thread_id",
    "check_step",
    "check_keep_last",
    "ensure_newer",
    "encode_value",
    "decode_value",
    "encode_checkpoint",
    "utc_now",
]


#: longest thread id, in characters (keeps it indexable by every backend, PostgreSQL's btree included).
MAX_THREAD_ID = 512

#: deepest nesting of lists/dicts a value may have: deeper values are refused up front, so
#: whatever is saved can be read back without running out of stack (and never RecursionError).
MAX_DEPTH = 256


def check_thread_id(thread_id: Any) -> str:
    """Return ``thread_id`` if it is a usable thread id, else raise ``TypeError``/``ValueError``."""
    if not isinstance(thread_id, str):
        raise TypeError(f"thread_id must be a str, got {type(thread_id).__name__}")
    if not thread_id:
        raise ValueError("thread_id must be a non-empty string")
    if len(thread_id) > MAX_THREAD_ID:
        raise ValueError(f"thread_id is {len(thread_id)} characters long; at most {MAX_THREAD_ID} are allowed")
    if not _utf8_ok(thread_id):
        raise UnstorableState(f"thread_id {thread_id!r} contains a lone surrogate and cannot be stored")
    if "\x00" in thread_id:  # PostgreSQL text cannot hold NUL: refuse it on every backend alike
        raise UnstorableState(f"thread_id {thread_id!r} contains NUL, which not every backend can store; use another id")
    return thread_id


def check_step(step: Any) -> int:
    """Return ``step`` if it is an int >= 0 (bool is refused), else raise."""
    if isinstance(step, bool) or not isinstance(step, int):
        raise TypeError(f"step must be an int, got {type(step).__name__}")
    if step < 0 or step > 2**63 - 1:
        raise ValueError(f"step must be between 0 and 2**63-1, got {step}")
    return step


def check_keep_last(keep_last: Any) -> int:
    """Return ``keep_last`` if it is an int >= 1 (``delete_thread`` removes everything)."""
    if isinstance(keep_last, bool) or not isinstance(keep_last, int):
        raise TypeError(f"keep_last must be an int, got {type(keep_last).__name__}")
    if keep_last < 1:
        raise ValueError(f"keep_last must be at least 1, got {keep_last} (use delete_thread to remove a whole thread)")
    return keep_last


def ensure_newer(thread_id: str, step: int, latest: int | None) -> None:
    """Raise :class:`StaleWrite` unless ``step`` is newer than the stored ``latest`` step."""
    if latest is not None and step <= latest:
        raise StaleWrite(
            f"thread {thread_id!r}: step {step} is not newer than the stored latest step {latest}; "
            f"another writer has advanced this thread — reload it with get_checkpoint and continue from there"
        )


def utc_now() -> str:
    """The current time as an ISO 8601 UTC string (the ``created_at`` of a checkpoint)."""
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


def _utf8_ok(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _where(path: list[str]) -> str:
    return "".join(path)


def _check_key(key: Any, path: list[str]) -> None:
    """Raise UnstorableState unless ``key`` is a str JSON stores exactly (a str with no lone surrogate)."""
    if not isinstance(key, str):
        raise UnstorableState(
            f"{_where(path)} has a {type(key).__name__} key {key!r}; JSON keys are strings, "
            f"so it would come back changed — use str keys; nothing was written"
        )
    if not _utf8_ok(key):
        raise UnstorableState(f"{_where(path)} has a key with a lone surrogate, which cannot be stored; nothing was written")


def _check_exact(value: Any, path: list[str]) -> None:
    """Raise UnstorableState naming the first part of ``value`` JSON cannot return exactly."""
    if value is None or isinstance(value, (bool, int)):
        return
    if isinstance(value, str):
        if not _utf8_ok(value):
            raise UnstorableState(f"{_where(path)} contains a lone surrogate, which cannot be stored; nothing was written")
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise UnstorableState(f"{_where(path)} is {value!r}, which JSON cannot represent; nothing was written")
        return
    if isinstance(value, (dict, list)) and len(path) > MAX_DEPTH:
        raise UnstorableState(
            f"{_where(path[:3])}... is nested more than {MAX_DEPTH} lists/dicts deep, which is too deep to store "
            f"and read back safely; flatten it; nothing was written"
        )
    if isinstance(value, dict):
        for key, item in value.items():
            _check_key(key, path)
            path.append(f"[{key!r}]")
            _check_exact(item, path)
            path.pop()
        return
    if isinstance(value, list):
        for i, item in enumerate(value):
            path.append(f"[{i}]")
            _check_exact(item, path)
            path.pop()
        return
    hint = " (it would come back as a list; pass a list)" if isinstance(value, tuple) else ""
    raise UnstorableState(
        f"{_where(path)} is a {type(value).__name__}, which JSON cannot store exactly{hint}; "
        f"checkpoint state must be JSON values (dict with str keys, list, str, int, float, bool, None); nothing was written"
    )


def encode_value(value: Any, what: str = "state_dump") -> str:
    """Compact JSON text of ``value`` that :func:`decode_value` turns back into an equal value.

    Control characters (NUL included) are escaped by JSON, other characters are kept
    as UTF-8, so the text is valid UTF-8 and storable in any text column.

    Raises:
        UnstorableState: ``value`` holds something JSON cannot return exactly; the
            message names where (``state_dump['messages'][3]``).
    """
    _check_exact(value, [what])
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def decode_value(text: str) -> Any:
    """Inverse of :func:`encode_value`."""
    return json.loads(text)


@dataclass(frozen=True)
class EncodedCheckpoint:
    """One checkpoint, validated and encoded, ready for a backend to write."""

    thread_id: str
    step: int
    state_json: str
    tree_json: str
    metadata_json: str
    created_at: str

    def to_dict(self) -> dict[str, Any]:
        """The checkpoint as ``get_checkpoint`` returns it (fresh objects every call)."""
        return checkpoint_dict(self.thread_id, self.step, self.state_json, self.tree_json, self.metadata_json, self.created_at)


def encode_checkpoint(
    thread_id: Any,
    step: Any,
    state_dump: Any,
    tree_state: Any = None,
    runtime_metadata: Any = None,
) -> EncodedCheckpoint:
    """Check and encode the arguments of ``save_checkpoint`` (raises before anything is written)."""
    return EncodedCheckpoint(
        check_thread_id(thread_id),
        check_step(step),
        encode_value(state_dump, "state_dump"),
        encode_value(tree_state, "tree_state"),
        encode_value(runtime_metadata, "runtime_metadata"),
        utc_now(),
    )


def checkpoint_dict(thread_id: str, step: int, state_json: str, tree_json: str, metadata_json: str, created_at: str) -> dict[str, Any]:
    """The dict every backend returns for a checkpoint."""
    return {
        "thread_id": thread_id,
        "step": step,
        "state_dump": decode_value(state_json),
        "tree_state": decode_value(tree_json),
        "runtime_metadata": decode_value(metadata_json),
        "created_at": created_at,
    }


class AsyncCheckpointerMixin:
    """Async variants that run the sync calls in a worker thread (``asyncio.to_thread``).

    Backends keep their I/O blocking and thread-safe; this keeps the event loop free.
    """

    async def asave_checkpoint(
        self,
        thread_id: str,
        step: int,
        state_dump: Any,
        tree_state: Any = None,
        runtime_metadata: Any = None,
    ) -> None:
        """Async form of ``save_checkpoint``."""
        await asyncio.to_thread(self.save_checkpoint, thread_id, step, state_dump, tree_state, runtime_metadata)  # type: ignore[attr-defined]

    async def aget_checkpoint(self, thread_id: str) -> dict[str, Any] | None:
        """Async form of ``get_checkpoint``."""
        result: dict[str, Any] | None = await asyncio.to_thread(self.get_checkpoint, thread_id)  # type: ignore[attr-defined]
        return result

    async def alist_threads(self) -> list[str]:
        """Async form of ``list_threads``."""
        result: list[str] = await asyncio.to_thread(self.list_threads)  # type: ignore[attr-defined]
        return result

    async def alist_checkpoints(self, thread_id: str) -> list[dict[str, Any]]:
        """Async form of ``list_checkpoints``."""
        result: list[dict[str, Any]] = await asyncio.to_thread(self.list_checkpoints, thread_id)  # type: ignore[attr-defined]
        return result

    async def adelete_thread(self, thread_id: str) -> None:
        """Async form of ``delete_thread``."""
        await asyncio.to_thread(self.delete_thread, thread_id)  # type: ignore[attr-defined]

    async def aprune(self, thread_id: str, keep_last: int) -> int:
        """Async form of ``prune``."""
        result: int = await asyncio.to_thread(self.prune, thread_id, keep_last)  # type: ignore[attr-defined]
        return result
