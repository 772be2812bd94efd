"""Every backend of ctxcore-checkpointers passes the CheckpointerContract."""

from __future__ import annotations

from typing import Any

from ctxcore_checkpointers import (
    JsonlCheckpointer,
    MemoryCheckpointer,
    NullCheckpointer,
    SqliteCheckpointer,
)

from ctxcore.testing.contracts.checkpointer import CheckpointerContract


class TestMemory(CheckpointerContract):
    """The in-process backend."""

    persistent = False

    def make_checkpointer(self, location: Any) -> MemoryCheckpointer:
        return MemoryCheckpointer()


class TestNull(CheckpointerContract):
    """The backend that stores nothing."""

    stores = False

    def make_checkpointer(self, location: Any) -> NullCheckpointer:
        return NullCheckpointer()


class TestJsonl(CheckpointerContract):
    """jsonl files in a directory that does not exist yet."""

    def make_checkpointer(self, location: Any) -> JsonlCheckpointer:
        return JsonlCheckpointer(location / "nested" / "checkpoints")


class TestSqlite(CheckpointerContract):
    """One SQLite file in a directory that does not exist yet."""

    def make_checkpointer(self, location: Any) -> SqliteCheckpointer:
        return SqliteCheckpointer(location / "nested" / "checkpoints.db")
