"""``CheckpointerSession``: the Agents SDK's ``Session`` protocol on a ctxcore thread log.

The SDK asks a session for ``get_items(limit)``, ``add_items(items)``,
``pop_item()`` and ``clear_session()``. This one stores the items as a ctxcore
*thread* in the pipeline's thread store (``sqlite``, ``jsonl``, ``memory``,
``postgres`` from ctxcore-postgres, ``redis`` from ctxcore-redis): one ctxcore
message per user message, assistant turn or tool result, each carrying its
Responses items in ``metadata["openai_agents_items"]``, so
``pipeline.thread(session_id)`` opens the same conversation as ctxcore
messages and ``ctx thread`` shows it.

``add_items`` appends: it writes only the new messages (in the compact form a
``Thread`` stores, :func:`ctxcore.kit.stored_dump`) and one step record,
so its cost follows the items added, not the session's length. Two writes
replace the newest message instead: ``pop_item``, and ``add_items`` whose first
items continue the stored assistant turn (parallel tool calls split over two
writes stay one assistant message). Both append the replacement and write a
step whose ``view`` leaves the replaced message out (docs/persistence.md,
"Removing a message from an append-only log"); the log is never rewritten.

Writers do not lose each other's items: every write is fenced on the step the
session last read or wrote; when another writer saved first (``StaleWrite``)
the session reads the newest step and applies its change again (up to
``retries`` times). A process killed mid-write leaves the previous step.
Sessions stored by older versions as whole checkpoints (the ``ctxcore.thread/1``
format, in the pipeline's checkpointer) open; their first write moves them to
the log.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ctxcore import CheckpointCorrupt, Message, Pipeline, StaleWrite, Thread
from ctxcore.kit import THREAD_LOG_FORMAT, StepRecord, extend_view, stored_dump, view_of
from ctxcore_openai_agents.converters import ITEMS_KEY, is_assistant_side, messages_from_items, plain_item

__all__ = ["CheckpointerSession"]

_Dumps = list[dict[str, Any]]


@dataclass
class _State:
    """What the session knows of its thread as of ``step``: enough to append without reading the log again."""

    step: int | None = None  # the latest step (the fence); None: no step in the log
    end: int = 0  # messages in the log
    view: list[list[int]] | None = None  # the step's view (None: the whole log)
    shown: int = 0  # messages the step shows
    last: dict[str, Any] | None = None  # the newest shown message (None with shown > 0: unknown, read again)
    legacy: _Dumps | None = None  # an old-format session's messages, not in the log yet
    first_step: int = 0


@dataclass
class _Change:
    """A write: drop the newest shown message (or not), then show ``append`` after the rest."""

    drop_last: bool
    append: _Dumps = field(default_factory=list)


class CheckpointerSession:
    """An Agents SDK session stored in a ctxcore thread log: ``Runner.run(agent, text, session=...)``.

    Args:
        session_id: the conversation's id (the thread id).
        store: a ctxcore thread store (``pipeline.thread_store()``, or one from the registry).
        legacy: the checkpointer older versions stored sessions in (``pipeline.thread_checkpointer()``), read
            when the store does not know the session.
        session_settings: the SDK's ``SessionSettings`` (its ``limit`` is the default of ``get_items``).
        keep_steps: how many of the newest step records to keep after each write (``None``: all; the log stays).
        retries: how often a write refused as stale is re-applied on the newest step.
    """

    def __init__(self, session_id: str, store: Any, *, legacy: Any = None, session_settings: Any = None,
                 keep_steps: int | None = None, retries: int = 20) -> None:
        if keep_steps is not None and keep_steps < 1:
            raise ValueError("keep_steps must be >= 1 or None")
        if not callable(getattr(store, "append", None)) or not callable(getattr(store, "read", None)):
            raise TypeError(f"CheckpointerSession needs a ctxcore thread store (got {type(store).__name__}); use "
                            "CheckpointerSession.from_pipeline(pipeline, session_id) or pass pipeline.thread_store()")
        self.session_id = session_id
        self.store = store
        self.legacy = legacy
        self.session_settings = session_settings
        self.keep_steps = keep_steps
        self.retries = retries
        self._lock = asyncio.Lock()
        self._state: _State | None = None

    @classmethod
    def from_pipeline(cls, pipeline: Pipeline, session_id: str, **options: Any) -> CheckpointerSession:
        """The session ``session_id`` in the pipeline's thread store (older sessions: read from its checkpointer)."""
        return cls(session_id, pipeline.thread_store(), legacy=pipeline.thread_checkpointer(), **options)

    # ------------------------------------------------------------ the protocol
    async def get_items(self, limit: int | None = None) -> list[Any]:
        """The stored items, oldest first; with ``limit``, the newest ``limit`` of them."""
        if limit is None and self.session_settings is not None:
            limit = getattr(self.session_settings, "limit", None)
        async with self._lock:
            _, shown = await self._load()
        items = _items_of(shown)
        if limit is not None:
            items = items[-limit:] if limit > 0 else []
        return items

    async def add_items(self, items: list[Any]) -> None:
        """Append the items (one step)."""
        if not items:
            return
        new = [dict(plain_item(item, i)) for i, item in enumerate(items)]
        messages_from_items(new)  # refuse what cannot be stored before anything is read or written

        def change(state: _State) -> tuple[_Change, None]:
            last = state.last
            if last is not None and is_assistant_side(new[0]) and last.get("role") == "assistant":
                # the new items continue the stored assistant turn (its calls after its text): regroup that turn
                return _Change(True, _dump(_items_of([last]) + new)), None
            return _Change(False, _dump(new)), None

        await self._update(change)

    async def pop_item(self) -> Any | None:
        """Remove and return the newest item (``None`` when the session is empty)."""

        def change(state: _State) -> tuple[_Change | None, Any]:
            if state.last is None:
                return None, None
            rest = _items_of([state.last])
            popped = rest.pop()
            return _Change(True, _dump(rest) if rest else []), popped

        return await self._update(change)

    async def clear_session(self) -> None:
        """Remove the session: its log and steps (and an old-format session's checkpoints)."""
        async with self._lock:
            await asyncio.to_thread(self.store.delete_thread, self.session_id)
            if self.legacy is not None:
                await self._call_legacy("delete_thread", self.session_id)
            self._state = None

    # ------------------------------------------------------------ storage
    async def _load(self) -> tuple[_State, _Dumps]:
        """Read the latest step (or an old-format session); remember it for the next write."""
        snapshot = await asyncio.to_thread(self.store.read, self.session_id)
        if snapshot is not None:
            shown, view = view_of(snapshot)
            state = _State(snapshot.record.step, snapshot.record.messages, view, len(shown), shown[-1] if shown else None)
        else:
            old = await self._read_legacy()
            shown = old[1] if old else []
            state = _State(shown=len(shown), last=shown[-1] if shown else None, legacy=shown if old else None,
                           first_step=old[0] + 1 if old else 0)
        self._state = state
        return state, shown

    async def _update(self, change: Callable[[_State], tuple[_Change | None, Any]]) -> Any:
        """Apply ``change`` to the newest step and write it as the next one; read again and re-apply when stale."""
        async with self._lock:
            for _ in range(self.retries + 1):
                state = self._state
                if state is None or (state.shown and state.last is None):
                    state, _ = await self._load()
                todo, result = change(state)
                if todo is None:
                    return result
                try:
                    await asyncio.to_thread(self._write, state, todo)
                except StaleWrite:
                    self._state = None  # another writer saved first: apply the change to what it wrote
                    continue
                if self.keep_steps is not None:
                    await asyncio.to_thread(self.store.prune, self.session_id, self.keep_steps)
                return result
            self._state = None
            raise StaleWrite(f"session {self.session_id!r}: {self.retries + 1} writes in a row were overtaken by other "
                             "writers; nothing was written by this call, retry it")

    def _write(self, state: _State, todo: _Change) -> StepRecord:
        """Append ``todo`` fenced on ``state.step``; on success the session's state is the new step."""
        if state.legacy is not None:  # the first write of an old-format session puts what it shows into the log
            messages = (state.legacy[:-1] if todo.drop_last else state.legacy) + todo.append
            record = self.store.append(self.session_id, messages, expected_step=None,
                                       metadata={"format": THREAD_LOG_FORMAT}, first_step=state.first_step)
            self._state = _State(record.step, record.messages, None, len(messages), messages[-1] if messages else None)
            return record
        view = state.view
        if todo.drop_last:
            ranges = [list(r) for r in view] if view is not None else ([[0, state.end]] if state.end else [])
            ranges[-1][1] -= 1
            view = [r for r in ranges if r[0] < r[1]]
        end = state.end + len(todo.append)
        view = extend_view(view, state.end, end)
        if view == [[0, end]]:
            view = None
        meta: dict[str, Any] = {"format": THREAD_LOG_FORMAT} if view is None else {"format": THREAD_LOG_FORMAT, "view": view}
        record = self.store.append(self.session_id, todo.append, expected_step=state.step, metadata=meta)
        shown = state.shown - todo.drop_last + len(todo.append)
        last = todo.append[-1] if todo.append else None  # after a drop with nothing shown after it: read again
        self._state = _State(record.step, record.messages, view, shown, last)
        return record

    async def _read_legacy(self) -> tuple[int, _Dumps] | None:
        """An old-format session's newest checkpoint as (step, message dumps), or ``None``."""
        if self.legacy is None:
            return None
        checkpoint = await self._call_legacy("get_checkpoint", self.session_id)
        if checkpoint is None:
            return None
        meta = checkpoint.get("runtime_metadata") or {}
        state = checkpoint.get("state_dump")
        dumps = state.get("messages") if isinstance(state, Mapping) else None
        if meta.get("format") != Thread.FORMAT or not isinstance(dumps, list):
            raise CheckpointCorrupt(
                f"session {self.session_id!r} step {checkpoint.get('step')}: the checkpoint was not written by a ctxcore "
                "thread or session; use another session id or inspect it with `ctx checkpoint show`")
        return int(checkpoint["step"]), dumps

    async def _call_legacy(self, name: str, *args: Any) -> Any:
        """The legacy checkpointer's async form of ``name`` when it has one, else the sync call in a worker thread."""
        async_fn = getattr(self.legacy, "a" + name, None)
        if async_fn is not None:
            return await async_fn(*args)
        return await asyncio.to_thread(getattr(self.legacy, name), *args)


def _items_of(dumps: Sequence[Mapping[str, Any]]) -> list[Any]:
    """The Responses items recorded in stored message dumps, in order (copies: the dumps stay as read)."""
    out: list[Any] = []
    for d in dumps:
        items = (d.get("metadata") or {}).get(ITEMS_KEY)
        if not isinstance(items, list):
            raise CheckpointCorrupt("a stored message carries no Responses items: the thread was not written by "
                                    "CheckpointerSession; open it with pipeline.thread() instead")
        out.extend(dict(i) if isinstance(i, Mapping) else i for i in items)
    return out


def _dump(items: list[Any]) -> _Dumps:
    messages: list[Message] = messages_from_items(items)
    return [stored_dump(m) for m in messages]
