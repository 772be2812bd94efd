"""``CheckpointerSession``: the Agents SDK's ``Session`` protocol on a ctxcore checkpointer.

The SDK asks a session for ``get_items(limit)``, ``add_items(items)``,
``pop_item()`` and ``clear_session()``. This one stores the items as a ctxcore
*thread*: each write is one checkpoint in the format of
:class:`ctxcore.Thread` (``state_dump["messages"]`` holds ctxcore messages, each
carrying its Responses items in ``metadata["openai_agents_items"]``), so the
session persists wherever the checkpointer does (``sqlite``, ``postgres`` from
ctxcore-postgres, ``memory``), ``pipeline.thread(session_id)`` opens the same
conversation as ctxcore messages, and ``ctx checkpoint``/``ctx thread`` show it.

Writers do not lose each other's items: a write is a new step, the checkpointer
refuses a step that is not newer than the stored latest (``StaleWrite``), and the
session then re-reads the newest checkpoint and applies its change again (up to
``retries`` times). A process killed mid-write leaves the previous checkpoint.
Only the newest ``keep_checkpoints`` checkpoints of the session are kept.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ctxcore import CheckpointCorrupt, Message, Pipeline, StaleWrite, Thread
from ctxcore_openai_agents.converters import ITEMS_KEY, is_assistant_side, messages_from_items, plain_item

__all__ = ["CheckpointerSession"]

_Dumps = list[dict[str, Any]]


class CheckpointerSession:
    """An Agents SDK session stored by a ctxcore checkpointer: ``Runner.run(agent, text, session=...)``.

    Args:
        session_id: the conversation's id (the checkpointer's thread id).
        checkpointer: any ctxcore checkpointer (``pipeline.thread_checkpointer()``, or one from the registry).
        session_settings: the SDK's ``SessionSettings`` (its ``limit`` is the default of ``get_items``).
        keep_checkpoints: how many of the newest checkpoints to keep after each write (``None``: all).
        retries: how often a write refused as stale is re-applied on the newest checkpoint.
    """

    def __init__(self, session_id: str, checkpointer: Any, *, session_settings: Any = None,
                 keep_checkpoints: int | None = 2, retries: int = 20) -> None:
        if keep_checkpoints is not None and keep_checkpoints < 1:
            raise ValueError("keep_checkpoints must be >= 1 or None")
        self.session_id = session_id
        self.checkpointer = checkpointer
        self.session_settings = session_settings
        self.keep_checkpoints = keep_checkpoints
        self.retries = retries
        self._lock = asyncio.Lock()

    @classmethod
    def from_pipeline(cls, pipeline: Pipeline, session_id: str, **options: Any) -> CheckpointerSession:
        """The session ``session_id`` on the pipeline's checkpointer (its ``checkpointer:``, else in memory)."""
        return cls(session_id, pipeline.thread_checkpointer(), **options)

    # ------------------------------------------------------------ the protocol
    async def get_items(self, limit: int | None = None) -> list[Any]:
        """The stored items, oldest first; with ``limit``, the newest ``limit`` of them."""
        if limit is None and self.session_settings is not None:
            limit = getattr(self.session_settings, "limit", None)
        _, dumps = await self._read()
        items = _items_of(dumps)
        if limit is not None:
            items = items[-limit:] if limit > 0 else []
        return items

    async def add_items(self, items: list[Any]) -> None:
        """Append the items (one checkpoint)."""
        if not items:
            return
        new = [dict(plain_item(item, i)) for i, item in enumerate(items)]
        messages_from_items(new)  # refuse what cannot be stored before anything is read or written

        def change(dumps: _Dumps) -> tuple[_Dumps, None]:
            if dumps and is_assistant_side(new[0]) and _is_assistant_group(dumps[-1]):
                # the new items continue the stored assistant turn (its calls after its text): regroup that turn
                return dumps[:-1] + _dump(_items_of(dumps[-1:]) + new), None
            return dumps + _dump(new), None

        await self._update(change)

    async def pop_item(self) -> Any | None:
        """Remove and return the newest item (``None`` when the session is empty)."""

        def change(dumps: _Dumps) -> tuple[_Dumps | None, Any]:
            if not dumps:
                return None, None
            last = _items_of(dumps[-1:])
            popped = last.pop()
            return dumps[:-1] + (_dump(last) if last else []), popped

        return await self._update(change)

    async def clear_session(self) -> None:
        """Remove every checkpoint of the session."""
        async with self._lock:
            await self._call("delete_thread", self.session_id)

    # ------------------------------------------------------------ storage
    async def _read(self) -> tuple[int | None, _Dumps]:
        checkpoint = await self._call("get_checkpoint", self.session_id)
        if checkpoint is None:
            return None, []
        meta = checkpoint.get("runtime_metadata") or {}
        state = checkpoint.get("state_dump")
        dumps = state.get("messages") if isinstance(state, Mapping) else None
        if meta.get("format") != Thread.FORMAT or not isinstance(dumps, list):
            raise CheckpointCorrupt(
                f"session {self.session_id!r} step {checkpoint.get('step')}: the checkpoint was not written by a ctxcore "
                "thread or session; use another session id or inspect it with `ctx checkpoint show`")
        return int(checkpoint["step"]), dumps

    async def _update(self, change: Callable[[_Dumps], tuple[_Dumps | None, Any]]) -> Any:
        """Apply ``change`` to the newest stored messages and write the result as the next step; re-apply when stale."""
        async with self._lock:
            for _ in range(self.retries + 1):
                step, dumps = await self._read()
                new, result = change(dumps)
                if new is None:
                    return result
                nxt = 0 if step is None else step + 1
                try:
                    await self._call("save_checkpoint", self.session_id, nxt, {"messages": new}, None,
                                     {"format": Thread.FORMAT, "messages": len(new)})
                except StaleWrite:
                    continue  # another writer saved first: apply the change to what it wrote
                if self.keep_checkpoints is not None:
                    await self._call("prune", self.session_id, self.keep_checkpoints)
                return result
            raise StaleWrite(f"session {self.session_id!r}: {self.retries + 1} writes in a row were overtaken by other "
                             "writers; nothing was written by this call, retry it")

    async def _call(self, name: str, *args: Any) -> Any:
        """The checkpointer's async form of ``name`` when it has one, else the sync call in a worker thread."""
        async_fn = getattr(self.checkpointer, "a" + name, None)
        if async_fn is not None:
            return await async_fn(*args)
        return await asyncio.to_thread(getattr(self.checkpointer, name), *args)


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


def _is_assistant_group(dump: Mapping[str, Any]) -> bool:
    return dump.get("role") == "assistant"


def _dump(items: list[Any]) -> _Dumps:
    messages: list[Message] = messages_from_items(items)
    return [m.model_dump(mode="json") for m in messages]
