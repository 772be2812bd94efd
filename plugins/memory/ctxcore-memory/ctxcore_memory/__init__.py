"""Long-term memory stores for ctxcore: ``json`` (SimpleStore) and ``sqlite`` (FTS5 BM25)."""

from ctxcore_memory.json_store import JsonMemoryStore, JsonStoreConfig
from ctxcore_memory.sqlite_store import SqliteMemoryStore, SqliteStoreConfig

__all__ = ["JsonMemoryStore", "JsonStoreConfig", "SqliteMemoryStore", "SqliteStoreConfig"]
