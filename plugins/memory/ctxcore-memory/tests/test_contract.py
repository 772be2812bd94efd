"""The memory contract suite run against the json and sqlite stores."""

from __future__ import annotations

from pathlib import Path

from ctxcore_memory import JsonMemoryStore, SqliteMemoryStore

from ctxcore.testing.contracts.memory_store import MemoryStoreContract


class TestJsonStoreContract(MemoryStoreContract):
    """SimpleStore: one JSON file."""

    def make_store(self, path: Path) -> JsonMemoryStore:
        return JsonMemoryStore(path / "memory.json")


class TestSqliteStoreContract(MemoryStoreContract):
    """The embedded default: SQLite with FTS5."""

    def make_store(self, path: Path) -> SqliteMemoryStore:
        return SqliteMemoryStore(path / "memory.db")
