"""Entry point of ctxcore-memory: registers the ``json`` and ``sqlite`` memory stores."""

from __future__ import annotations

from typing import Any

from ctxcore import hookimpl
from ctxcore_memory.json_store import JsonMemoryStore, JsonStoreConfig
from ctxcore_memory.sqlite_store import SqliteMemoryStore, SqliteStoreConfig


def _json(config: JsonStoreConfig) -> JsonMemoryStore:
    return JsonMemoryStore(config.path, lock_timeout=config.lock_timeout)


def _sqlite(config: SqliteStoreConfig) -> SqliteMemoryStore:
    return SqliteMemoryStore(config.path, busy_timeout_ms=config.busy_timeout_ms)


@hookimpl
def register_memory_stores(register: Any) -> None:
    """Offer the JSON-file and SQLite memory stores."""
    register("json", _json, config=JsonStoreConfig,
             description="SimpleStore: one JSON file, substring then keyword-overlap ranking.")
    register("sqlite", _sqlite, config=SqliteStoreConfig,
             description="Embedded default: SQLite with FTS5 BM25 ranking over content and metadata.")
