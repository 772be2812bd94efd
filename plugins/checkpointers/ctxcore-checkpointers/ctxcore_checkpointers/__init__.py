"""ctxcore-checkpointers: checkpointers and thread stores that need nothing but the standard library."""

from __future__ import annotations

from ctxcore_checkpointers.jsonl import JsonlCheckpointer
from ctxcore_checkpointers.jsonl_log import JsonlThreadStore
from ctxcore_checkpointers.memory import MemoryCheckpointer, NullCheckpointer
from ctxcore_checkpointers.memory_log import MemoryThreadStore
from ctxcore_checkpointers.sqlite import SqliteCheckpointer
from ctxcore_checkpointers.sqlite_log import SqliteThreadStore

__all__ = [
    "JsonlCheckpointer",
    "JsonlThreadStore",
    "MemoryCheckpointer",
    "MemoryThreadStore",
    "NullCheckpointer",
    "SqliteCheckpointer",
    "SqliteThreadStore",
]
