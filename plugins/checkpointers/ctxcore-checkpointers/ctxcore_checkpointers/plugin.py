"""Entry point of ctxcore-checkpointers: registers ``memory``, ``null``, ``jsonl`` and ``sqlite``."""

from __future__ import annotations

from typing import Any

from ctxcore import hookimpl
from ctxcore.kit import EmptyConfig
from ctxcore_checkpointers.jsonl import JsonlCheckpointer, JsonlConfig
from ctxcore_checkpointers.memory import MemoryCheckpointer, NullCheckpointer
from ctxcore_checkpointers.sqlite import SqliteCheckpointer, SqliteConfig


def _memory(config: EmptyConfig) -> MemoryCheckpointer:
    return MemoryCheckpointer()


def _null(config: EmptyConfig) -> NullCheckpointer:
    return NullCheckpointer()


def _jsonl(config: JsonlConfig) -> JsonlCheckpointer:
    return JsonlCheckpointer(config.path)


def _sqlite(config: SqliteConfig) -> SqliteCheckpointer:
    return SqliteCheckpointer(config.path, busy_timeout_ms=config.busy_timeout_ms)


@hookimpl
def register_checkpointers(register: Any) -> None:
    """Offer the in-process and the embedded file checkpointers."""
    register("memory", _memory, description="Checkpoints in this process's memory (tests, transient runs).")
    register("null", _null, description="Saves nothing; every thread reads as new.")
    register("jsonl", _jsonl, config=JsonlConfig,
             description="One fsynced, checksummed jsonl file per thread in a directory.")
    register("sqlite", _sqlite, config=SqliteConfig,
             description="One SQLite file in WAL mode: the embedded default.")
