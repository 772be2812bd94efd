"""ctxcore-checkpointers: checkpointers that need nothing but the standard library."""

from __future__ import annotations

from ctxcore_checkpointers.jsonl import JsonlCheckpointer
from ctxcore_checkpointers.memory import MemoryCheckpointer, NullCheckpointer
from ctxcore_checkpointers.sqlite import SqliteCheckpointer

__all__ = ["JsonlCheckpointer", "MemoryCheckpointer", "NullCheckpointer", "SqliteCheckpointer"]
