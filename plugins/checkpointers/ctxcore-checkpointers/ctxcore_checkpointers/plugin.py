"""Entry point of ctxcore-checkpointers: checkpointers ``memory``, ``null``, ``jsonl``, ``sqlite`` and thread stores ``memory``, ``jsonl``, ``sqlite``."""

from __future__ import annotations

from typing import Any

from ctxcore import hookimpl
from ctxcore.kit import EmptyConfig
from ctxcore_checkpointers.jsonl import JsonlCheckpointer, JsonlConfig
from ctxcore_checkpointers.jsonl_log import JsonlThreadStore
from ctxcore_checkpointers.memory import MemoryCheckpointer, NullCheckpointer
from ctxcore_checkpointers.memory_log import MemoryThreadStore
from ctxcore_checkpointers.sqlite import SqliteCheckpointer, SqliteConfig
from ctxcore_checkpointers.sqlite_log import SqliteThreadStore


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


def _memory_log(config: EmptyConfig) -> MemoryThreadStore:
    return MemoryThreadStore()


def _jsonl_log(config: JsonlConfig) -> JsonlThreadStore:
    return JsonlThreadStore(config.path)


def _sqlite_log(config: SqliteConfig) -> SqliteThreadStore:
    return SqliteThreadStore(config.path, busy_timeout_ms=config.busy_timeout_ms)


@hookimpl
def register_thread_stores(register: Any) -> None:
    """Offer the thread logs; each takes the options of the checkpointer of the same name (docs/persistence.md)."""
    register("memory", _memory_log, description="Thread logs in this process's memory (tests, transient runs).")
    register("jsonl", _jsonl_log, config=JsonlConfig,
             description="One fsynced, checksummed append-only jsonl log per thread (under <path>/threads/).")
    register("sqlite", _sqlite_log, config=SqliteConfig,
             description="One row per message and a steps table in a SQLite file (WAL): the embedded default.")
