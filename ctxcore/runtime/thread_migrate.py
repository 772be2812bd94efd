"""Threads saved by older versions: whole-conversation checkpoints (``ctxcore.thread/1``) read and converted.

Before the thread log, every ``Thread.save`` wrote the whole conversation as one
checkpoint through the pipeline's checkpointer, with
``runtime_metadata["format"] == "ctxcore.thread/1"`` and the messages in
``state_dump["messages"]``. Such a thread opens from its newest checkpoint when
the thread store does not know it; its first save writes all its messages to
the log as step ``old step + 1`` (:func:`migrate_threads` does that for every
thread at once: ``ctx thread migrate``). The old checkpoints stay where they
are until ``ctx checkpoint prune`` or ``delete`` removes them; once a thread is
in the log, the log wins.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, cast

from ctxcore.errors import CheckpointCorrupt
from ctxcore.model.messages import Message
from ctxcore.model.stored import stored_message

__all__ = ["THREAD_FORMAT", "legacy_thread", "messages_of", "migrate_threads", "saved_messages"]

#: ``runtime_metadata["format"]`` of the whole-conversation checkpoints older versions wrote.
THREAD_FORMAT = "ctxcore.thread/1"


def messages_of(thread_id: str, step: int, raw: Any) -> list[Message]:
    """The stored message dumps ``raw`` as ctxcore messages; ``CheckpointCorrupt`` naming the bad one.

    Stored text is untrusted: a thread never stores a system message (its
    ``add_*`` methods make user, assistant and tool messages), so a stored one
    is refused rather than given the system role. Each item is checked
    completely: one that validation would keep as it is is built without it
    (:func:`ctxcore.model.stored.stored_message`), any other is validated.
    """
    fast = [stored_message(item) for item in raw]  # the usual shapes, without validation; None for the others
    if all(fast):  # a Message is always true
        return cast("list[Message]", fast)
    return [m if m is not None else _validated(thread_id, step, i, item)
            for i, (m, item) in enumerate(zip(fast, raw, strict=True))]


def _validated(thread_id: str, step: int, i: int, item: Any) -> Message:
    """Stored message ``i`` validated; ``CheckpointCorrupt`` unless it is a user, assistant or tool message."""
    try:
        message = Message.model_validate(item)
    except ValueError as exc:
        raise CheckpointCorrupt(f"thread {thread_id!r} step {step}: message {i} is not a ctxcore message: {exc}") from exc
    if message.role == "system":
        raise CheckpointCorrupt(f"thread {thread_id!r} step {step}: message {i} is a system message, which a thread "
                                "never stores (stored text is untrusted and never takes the system role); "
                                f"something else wrote to the store: read it with `ctx thread export {thread_id} --repair`")
    return message


def _legacy_messages(thread_id: str, checkpoint: Mapping[str, Any]) -> list[Any]:
    state = checkpoint.get("state_dump")
    raw = state.get("messages") if isinstance(state, Mapping) else None
    if not isinstance(raw, list):
        raise CheckpointCorrupt(
            f"thread {thread_id!r} step {checkpoint.get('step')}: the checkpoint has no 'messages' list, so it was "
            "not written by a ctxcore Thread; use another thread id or `ctx checkpoint show` to inspect it"
        )
    return raw


def saved_messages(thread_id: str, checkpoint: Mapping[str, Any]) -> list[Message]:
    """The messages an older Thread saved in ``checkpoint`` (one of ``list_checkpoints(thread_id)``), oldest first.

    Raises:
        CheckpointCorrupt: the checkpoint was not written by a Thread.
    """
    return messages_of(thread_id, int(checkpoint.get("step", -1)), _legacy_messages(thread_id, checkpoint))


def legacy_thread(pipeline: Any, thread_id: str) -> tuple[int, list[Any]] | None:
    """The newest old-format checkpoint of ``thread_id`` in the pipeline's checkpointer as (step, message dumps), or ``None``."""
    checkpoint = pipeline.thread_checkpointer().get_checkpoint(thread_id)
    if checkpoint is None:
        return None
    return int(checkpoint["step"]), _legacy_messages(thread_id, checkpoint)


def migrate_threads(pipeline: Any, open_thread: Any,
                    on_thread: Callable[[int, int], None] | None = None) -> list[tuple[str, int]]:
    """Convert every old-format thread of the pipeline's checkpointer the log does not hold yet; return (thread, step) of each.

    ``on_thread(done, total)`` is called before each thread is looked at and once at the end
    (``ctx thread migrate``'s progress bar).
    """
    checkpointer, store = pipeline.thread_checkpointer(), pipeline.thread_store()
    done = []
    thread_ids = list(checkpointer.list_threads())
    for k, thread_id in enumerate(thread_ids, 1):
        if on_thread is not None:
            on_thread(k - 1, len(thread_ids))
        latest = checkpointer.get_checkpoint(thread_id)
        meta = latest.get("runtime_metadata") if latest else None
        if not isinstance(meta, Mapping) or meta.get("format") != THREAD_FORMAT or store.read(thread_id) is not None:
            continue
        done.append((thread_id, open_thread(pipeline, thread_id).save()))
    if on_thread is not None:
        on_thread(len(thread_ids), len(thread_ids))
    return done
