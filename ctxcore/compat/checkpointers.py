"""The reference checkpointers: ``InMemoryCheckpointer``, ``FileCheckpointer``, ``NullCheckpointer``.

Each is ctxcore's own checkpointer (``memory``, ``jsonl``, ``null``; distribution
``ctxcore-checkpointers``) under the reference name, with the same
``save_checkpoint(thread_id, step, state_dump, tree_state=None,
runtime_metadata=None)`` / ``get_checkpoint(thread_id)`` calls, plus the native
listing, pruning and async methods.

Where ctxcore deliberately differs: ``get_checkpoint`` returns the native
envelope (``thread_id``, ``step``, ``state_dump``, ``tree_state``,
``runtime_metadata``, ``created_at``); a step that is not newer than the stored
one raises ``StaleWrite`` (the reference overwrites); a damaged file raises
``CheckpointCorrupt`` naming it (the reference's ``FileCheckpointer`` returns
``None``). ``FileCheckpointer`` writes one fsynced, checksummed
``<thread>.jsonl`` per thread.
"""

from __future__ import annotations

from typing import Any

from ctxcore.compat._resolve import create, project_path

__all__ = ["FileCheckpointer", "InMemoryCheckpointer", "NullCheckpointer"]

#: where FileCheckpointer writes when neither the caller nor the project config names a directory.
DEFAULT_CHECKPOINTS_DIR = ".ctx/checkpoints"


class _Checkpointer:
    """Forwards every checkpointer call to the native checkpointer."""

    _native: Any

    def save_checkpoint(self, thread_id: str, step: int, state_dump: dict[str, Any], tree_state: dict[str, Any] | None = None,
                        runtime_metadata: dict[str, Any] | None = None) -> None:
        """Persist the state of ``thread_id`` at ``step``."""
        self._native.save_checkpoint(thread_id, step, state_dump, tree_state, runtime_metadata)

    def get_checkpoint(self, thread_id: str) -> dict[str, Any] | None:
        """The latest checkpoint of the thread, or ``None``."""
        result: dict[str, Any] | None = self._native.get_checkpoint(thread_id)
        return result

    def __getattr__(self, name: str) -> Any:
        # list_threads, list_checkpoints, delete_thread, prune and the async variants
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._native, name)


class InMemoryCheckpointer(_Checkpointer):
    """Checkpoints in this process's memory (tests, transient sessions); copies in and out."""

    def __init__(self) -> None:
        self._native = create("checkpointer", "memory", {}, for_="InMemoryCheckpointer")


class NullCheckpointer(_Checkpointer):
    """Saves nothing; ``get_checkpoint`` is always ``None``."""

    def __init__(self) -> None:
        self._native = create("checkpointer", "null", {}, for_="NullCheckpointer")


class FileCheckpointer(_Checkpointer):
    """One JSONL file per thread in ``storage_dir``; the latest line is the thread's checkpoint.

    Without ``storage_dir`` the directory is ``paths.checkpoints_dir`` of the
    project config file (``$CTXCORE_CONFIG`` or ``./ctxcore.yaml``), else
    ``.ctx/checkpoints``. The directory is created on first save.
    """

    def __init__(self, storage_dir: str | None = None) -> None:
        from pathlib import Path

        self.storage_dir = Path(storage_dir if storage_dir is not None else project_path("checkpoints_dir", DEFAULT_CHECKPOINTS_DIR))
        self._native = create("checkpointer", "jsonl", {"path": str(self.storage_dir)}, for_="FileCheckpointer")
