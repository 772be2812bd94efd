"""The thread log contract: a conversation stored once, appended in order, with small step records.

A :class:`ThreadStore` keeps, per thread, an append-only list of messages (each
a JSON object that ``Message.model_validate`` reads: a ``Thread`` writes
:func:`ctxcore.model.stored.stored_dump`, a dump without role defaults)
and a list of step records. A step record (:class:`StepRecord`) says "as of
step N the thread had its first ``messages`` messages" plus a time and
metadata. Saving a turn appends the turn's new messages and one step record in
one transaction, so its cost follows what the turn added, never the thread's
length; every step stays readable (time travel, fork) because a step is only a
count into the log.

Rules every backend shares (the conformance suite is
:class:`ctxcore.testing.contracts.ThreadStoreContract`):

- ``append`` is fenced: it writes only when the thread's latest step equals
  ``expected_step`` (``None``: the thread has no step yet); otherwise it raises
  :class:`StaleWrite` and writes nothing. The new step is ``expected_step + 1``
  (``first_step`` for a new thread). Message counts never decrease.
- Messages and metadata are stored as exact JSON (:func:`encode_messages`), checked
  before anything is written (:class:`UnstorableState`).
- A crash mid-append leaves no partial step visible. Damage to anything a
  returned ``append`` acknowledged raises :class:`CheckpointCorrupt` naming the
  file or table, the thread, the step and how to recover (:func:`corrupt`);
  only a torn tail (a write that never returned) may be dropped.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from operator import itemgetter
from typing import Any, Protocol, runtime_checkable

from ctxcore.errors import CheckpointCorrupt, CtxError, StaleWrite
from ctxcore.kit.checkpoints import check_step, encode_value, utc_now

__all__ = [
    "THREAD_LOG_FORMAT",
    "StepRecord",
    "ThreadSnapshot",
    "ThreadStore",
    "UnknownStep",
    "check_expected",
    "corrupt",
    "encode_messages",
    "encode_metadata",
    "extend_view",
    "fence",
    "idle_cutoff",
    "newest_readable",
    "parse_age",
    "step_time",
    "snapshot_of_rows",
    "unknown_step",
    "view_of",
]

#: ``metadata["format"]`` of the step records a :class:`ctxcore.Thread` writes (docs/persistence.md).
THREAD_LOG_FORMAT = "ctxcore.threadlog/1"


class UnknownStep(CtxError, LookupError):
    """A thread has no step record with the asked step number (pruned, or never written)."""


@dataclass(frozen=True)
class StepRecord:
    """One saved step of a thread: as of ``step`` the thread held its first ``messages`` messages."""

    thread_id: str
    step: int
    messages: int
    created_at: str
    metadata: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The record as plain JSON values (what ``ctx thread list/show --json`` prints)."""
        return {"thread_id": self.thread_id, "step": self.step, "messages": self.messages,
                "created_at": self.created_at, "metadata": self.metadata}


@dataclass(frozen=True)
class ThreadSnapshot:
    """A thread as of one step: that step's record and the messages it counts, oldest first."""

    record: StepRecord
    messages: list[dict[str, Any]] = field(default_factory=list)


@runtime_checkable
class ThreadStore(Protocol):
    """A message log per thread plus step records; see the module docstring for the rules."""

    def append(
        self, thread_id: str, messages: Sequence[Mapping[str, Any]], *, expected_step: int | None,
        metadata: Mapping[str, Any] | None = None, first_step: int = 0,
    ) -> StepRecord:
        """Append ``messages`` and one step record in one transaction; ``StaleWrite`` unless the latest step is ``expected_step``."""
        ...

    def read(self, thread_id: str, step: int | None = None) -> ThreadSnapshot | None:
        """The thread as of ``step`` (default: the latest); ``None`` for an unknown thread; ``UnknownStep`` for a missing step."""
        ...

    def list_steps(self, thread_id: str) -> list[StepRecord]:
        """The thread's step records, oldest first (``[]`` for an unknown thread)."""
        ...

    def list_threads(self) -> list[str]:
        """Every thread with at least one step, sorted."""
        ...

    def fork(self, thread_id: str, new_thread_id: str, step: int | None = None) -> StepRecord:
        """Copy the thread as of ``step`` into ``new_thread_id`` (one step record); ``StaleWrite`` if that id exists."""
        ...

    def prune(self, thread_id: str, keep_last: int) -> int:
        """Delete all but the newest ``keep_last`` step records (the log stays); return how many went."""
        ...

    def expire(self, idle_before: str) -> list[str]:
        """Delete every thread whose latest step is older than ``idle_before`` (ISO UTC); return their ids, sorted."""
        ...

    def delete_thread(self, thread_id: str) -> None:
        """Delete the thread's log and steps (a no-op for an unknown thread)."""
        ...

    def salvage(self, thread_id: str) -> ThreadSnapshot | None:
        """The newest step that reads intact, for recovery after ``CheckpointCorrupt`` (never raises it)."""
        ...

    def close(self) -> None:
        """Release connections and files."""
        ...


def view_of(snapshot: ThreadSnapshot) -> tuple[list[dict[str, Any]], list[list[int]] | None]:
    """The messages a step shows, and its view (``None``: the whole log prefix).

    A step shows the first ``messages`` messages of the log, unless its
    metadata holds ``"view"``: ascending, disjoint ``[start, end)`` ranges of
    log positions below ``messages``, shown in order. A writer that replaces
    messages (the OpenAI Agents SDK session's ``pop_item``) appends the
    replacement and leaves the replaced positions out of the view: the log
    stays append-only and every older step reads as it was.

    Raises:
        CheckpointCorrupt: the view is not such a list of ranges.
    """
    record, messages = snapshot.record, snapshot.messages
    view = record.metadata.get("view") if isinstance(record.metadata, Mapping) else None
    if view is None:
        return messages, None
    if not _is_view(view, record.messages):
        raise corrupt("step metadata", record.thread_id, record.step,
                      f"its view {view!r} is not ascending [start, end) ranges below {record.messages}")
    return [m for start, end in view for m in messages[start:end]], [list(r) for r in view]


def _is_view(view: Any, count: int) -> bool:
    """Whether ``view`` is a list of ascending, disjoint ``[start, end)`` int pairs below ``count``."""
    if not isinstance(view, list):
        return False
    last = 0
    for item in view:
        if not (isinstance(item, list) and len(item) == 2 and all(type(v) is int for v in item)
                and last <= item[0] < item[1] <= count):
            return False
        last = item[1]
    return True


def extend_view(view: list[list[int]] | None, start: int, end: int) -> list[list[int]] | None:
    """``view`` with the log positions ``[start, end)`` shown after it (``None`` stays ``None``: the whole prefix)."""
    if view is None or start == end:
        return view
    if view and view[-1][1] == start:
        return [*view[:-1], [view[-1][0], end]]
    return [*view, [start, end]]


def unknown_step(thread_id: str, step: int, steps: Sequence[int]) -> UnknownStep:
    """The :class:`UnknownStep` for a missing ``step``, naming the steps the thread has."""
    have = f"its steps are {steps[0]}..{steps[-1]}" if steps else "it has no steps"
    return UnknownStep(f"thread {thread_id!r} has no step {step}; {have} (older step records may have been pruned)")


def step_time() -> str:
    """The ``created_at`` of a new step: ISO 8601 UTC with microseconds (sorts as text, as ``expire`` compares it)."""
    return utc_now()


def check_expected(expected_step: Any) -> int | None:
    """Return ``expected_step`` if it is ``None`` or a valid step, else raise."""
    return None if expected_step is None else check_step(expected_step)


def encode_messages(messages: Sequence[Mapping[str, Any]]) -> list[str]:
    """Exact JSON text of each message, checked before anything is written.

    Raises:
        UnstorableState: a message holds something JSON cannot return exactly;
            the message names it (``messages[3]['content']``).
    """
    out = []
    for i, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise TypeError(f"messages[{i}] must be a dict (a message's model_dump(mode='json')), got {type(message).__name__}")
        out.append(encode_value(dict(message), f"messages[{i}]"))
    return out


def encode_metadata(metadata: Mapping[str, Any] | None) -> str:
    """Exact JSON text of a step's metadata (``null`` when absent)."""
    if metadata is not None and not isinstance(metadata, Mapping):
        raise TypeError(f"metadata must be a dict or None, got {type(metadata).__name__}")
    return encode_value(None if metadata is None else dict(metadata), "metadata")


def fence(thread_id: str, expected_step: int | None, latest: int | None) -> None:
    """Raise :class:`StaleWrite` unless the thread's ``latest`` step is ``expected_step``."""
    if latest != expected_step:
        seen = "no step" if latest is None else f"step {latest}"
        want = "a new thread" if expected_step is None else f"step {expected_step}"
        raise StaleWrite(
            f"thread {thread_id!r}: expected {want} but the store has {seen}; another writer saved this thread — "
            "reopen it and apply the turn again (nothing was written)"
        )


def corrupt(where: str, thread_id: str, step: int | None, detail: str) -> CheckpointCorrupt:
    """A :class:`CheckpointCorrupt` naming the place, thread and step, with the way to recover."""
    at = f" step {step}" if step is not None else ""
    return CheckpointCorrupt(
        f"{where}: thread {thread_id!r}{at}: {detail}; acknowledged data is damaged, so nothing was rolled back "
        f"silently. Recover what is readable with `ctx thread show {thread_id} --repair` (or `ctx thread export "
        f"{thread_id} --repair > thread.json`), then restore the file/table from a backup or fork the readable part"
    )


def snapshot_of_rows(where: str, thread_id: str, row: Sequence[Any], bodies: Sequence[Sequence[Any]]) -> ThreadSnapshot:
    """The snapshot of a step stored as rows: ``row`` is (step, messages, created_at, metadata JSON),
    ``bodies`` the (seq, message JSON) rows of seq < messages in order.

    Raises:
        CheckpointCorrupt: messages are missing or a stored text is not JSON (naming ``where``, the thread and step).
    """
    step, count = int(row[0]), int(row[1])
    if len(bodies) != count or (bodies and int(bodies[-1][0]) != count - 1):
        raise corrupt(where, thread_id, step, f"the step counts {count} messages but {len(bodies)} are stored")
    try:
        messages = json.loads("[" + ",".join(map(_BODY, bodies)) + "]")
        meta = json.loads(row[3])
    except ValueError as exc:
        raise corrupt(where, thread_id, step, f"a stored message is not JSON ({exc})") from exc
    return ThreadSnapshot(StepRecord(thread_id, step, count, str(row[2]), meta), messages)


def newest_readable(steps: Callable[[], Iterable[int]], read: Callable[[int], ThreadSnapshot | None]) -> ThreadSnapshot | None:
    """What ``ThreadStore.salvage`` returns: ``read(step)`` of the newest of ``steps()`` that reads intact, else ``None``.

    Never raises :class:`CheckpointCorrupt`: a list of steps that cannot be
    read, or a step that is damaged or gone (:class:`UnknownStep`), moves on to
    the next older step. For backends whose steps read independently of each
    other (rows, keys); a file that must be read in order salvages its own way.
    """
    try:
        numbers = list(steps())
    except CheckpointCorrupt:
        return None
    for step in reversed(numbers):
        try:
            return read(step)
        except (CheckpointCorrupt, UnknownStep):
            continue
    return None


_BODY = itemgetter(1)
_AGE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h|d|w)\s*$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_age(text: str) -> timedelta:
    """``"30d"``, ``"12h"``, ``"90m"``, ``"45s"``, ``"2w"`` as a timedelta; ``ValueError`` naming the forms otherwise."""
    match = _AGE.match(text)
    if not match:
        raise ValueError(f"{text!r} is not an age; use a number and a unit: 45s, 90m, 12h, 30d or 2w")
    return timedelta(seconds=float(match.group(1)) * _UNITS[match.group(2)])


def idle_cutoff(older_than: timedelta, now: datetime | None = None) -> str:
    """The ISO UTC time ``older_than`` before ``now``: threads whose latest step is older are idle."""
    now = now or datetime.now(timezone.utc)
    return (now - older_than).isoformat(timespec="microseconds")

