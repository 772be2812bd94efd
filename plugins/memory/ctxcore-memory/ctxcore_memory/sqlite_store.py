"""``sqlite``: the embedded default, ranked with SQLite FTS5 (BM25).

One table holds the memories (``UNIQUE(namespace, id)``), an FTS5 table indexes
their content and a text rendering of their metadata (porter stemming, so
"running" finds "runs"), and a side table holds one row per metadata key for
exact-match filters. Every value a caller gives - query words, namespace,
filter keys and values, limit - is bound as a parameter; the SQL text is fixed
(a filter adds one more copy of the same ``EXISTS (... key = ? AND value = ?)``
clause).

Writes run in ``BEGIN IMMEDIATE`` transactions with a busy timeout, in WAL mode
with ``synchronous=FULL``, so a memory is on disk when ``record`` returns and
several processes can share one file. Each thread (and each process after a
fork) opens its own connection.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ctxcore import MemoryCorrupt, MemoryItem
from ctxcore.kit import (
    MemoryStoreBase,
    canonical_json,
    check_record,
    check_retrieve,
    item_id,
    resolve_namespace,
)
from ctxcore_memory._files import make_parent_dir

__all__ = ["SqliteStoreConfig", "SqliteMemoryStore", "SCHEMA_VERSION", "fts5_available"]

SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS memories (
    rowid      INTEGER PRIMARY KEY,
    namespace  TEXT NOT NULL,
    id         TEXT NOT NULL,
    content    TEXT NOT NULL,
    metadata   TEXT NOT NULL,
    created_at TEXT NOT NULL,
    UNIQUE (namespace, id)
);
CREATE TABLE IF NOT EXISTS memory_meta (
    memory_rowid INTEGER NOT NULL REFERENCES memories(rowid) ON DELETE CASCADE,
    key          TEXT NOT NULL,
    value        TEXT NOT NULL,
    PRIMARY KEY (memory_rowid, key)
);
CREATE INDEX IF NOT EXISTS memory_meta_key_value ON memory_meta (key, value);
CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts USING fts5 (
    content, meta, tokenize = 'porter unicode61 remove_diacritics 2'
);
"""

# bm25() weights per FTS column: the content counts more than the metadata labels.
_RANK = "bm25(memories_fts, 1.0, 0.5)"
_FILTER = " AND EXISTS (SELECT 1 FROM memory_meta f WHERE f.memory_rowid = m.rowid AND f.key = ? AND f.value = ?)"


def _storable(text: str) -> bool:
    """Whether ``text`` can be stored (encodes as UTF-8: no lone surrogates)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def fts5_available() -> bool:
    """Whether this Python's sqlite3 library was built with FTS5."""
    con = sqlite3.connect(":memory:")
    try:
        con.execute("CREATE VIRTUAL TABLE t USING fts5(a)")
        return True
    except sqlite3.OperationalError:
        return False
    finally:
        con.close()


class SqliteStoreConfig(BaseModel):
    """Options of the ``sqlite`` memory store."""

    model_config = ConfigDict(extra="forbid")

    path: str = Field(default=".ctx/memory.db", description="The database file (created with its directory on first use).")
    busy_timeout_ms: int = Field(default=10_000, ge=0, description="How long a write waits for another writer before failing.")


class SqliteMemoryStore(MemoryStoreBase):
    """Memories in one SQLite file, found by FTS5 BM25 ranking over content and metadata."""

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout_ms: int = 10_000) -> None:
        if not fts5_available():
            raise RuntimeError(f"this Python's SQLite {sqlite3.sqlite_version} lacks FTS5, which the sqlite memory "
                               "store needs; use a Python built with FTS5 or the json store")
        self.path = Path(path)
        self.busy_timeout_ms = busy_timeout_ms
        self._local = threading.local()
        make_parent_dir(self.path, "sqlite")
        self._init_schema()

    # ----------------------------------------------------------- connection
    def _connection(self) -> sqlite3.Connection:
        con: sqlite3.Connection | None = getattr(self._local, "con", None)
        if con is None or self._local.pid != os.getpid():  # never reuse a parent's connection after fork
            con = sqlite3.connect(self.path, isolation_level=None, timeout=self.busy_timeout_ms / 1000)
            con.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_ms)}")
            con.execute("PRAGMA foreign_keys = ON")
            con.execute("PRAGMA synchronous = FULL")
            self._local.con, self._local.pid = con, os.getpid()
        return con

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        con = self._connection()
        con.execute("BEGIN IMMEDIATE")
        try:
            yield con
        except BaseException:
            con.execute("ROLLBACK")
            raise
        con.execute("COMMIT")

    def _init_schema(self) -> None:
        try:
            con = self._connection()
            con.execute("PRAGMA journal_mode = WAL")
            with self._write():
                version = con.execute("PRAGMA user_version").fetchone()[0]
                if version > SCHEMA_VERSION:
                    raise MemoryCorrupt(f"{self.path}: memory schema version {version} is newer than this "
                                        f"ctxcore-memory understands ({SCHEMA_VERSION}); upgrade ctxcore-memory")
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        con.execute(statement)
                con.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        except sqlite3.DatabaseError as exc:
            raise MemoryCorrupt(f"{self.path}: not a usable SQLite memory database ({exc})") from exc

    def close(self) -> None:
        """Close this thread's connection (others close when their thread ends)."""
        con = getattr(self._local, "con", None)
        if con is not None and self._local.pid == os.getpid():
            con.close()
        self._local.con = None

    # ------------------------------------------------------------- contract
    def record(self, inputs: Any, namespace: str | tuple[str, ...] | None = None, **kw: Any) -> list[MemoryItem]:
        """Store ``inputs`` as one memory; ``metadata=`` labels it, ``id=`` replaces that memory."""
        item = check_record("sqlite", inputs, namespace, kw)
        ns, text, metadata, memory_id = item.namespace, item.content, item.metadata, item.id
        with self._write() as con:
            old = con.execute("SELECT rowid FROM memories WHERE namespace = ? AND id = ?", (ns, memory_id)).fetchone()
            if old is not None:
                self._remove(con, old[0])
            cur = con.execute(
                "INSERT INTO memories (namespace, id, content, metadata, created_at) VALUES (?, ?, ?, ?, ?)",
                (ns, memory_id, text, canonical_json(metadata), item.created_at.isoformat()),
            )
            rowid = cur.lastrowid
            con.execute("INSERT INTO memories_fts (rowid, content, meta) VALUES (?, ?, ?)",
                        (rowid, text, _metadata_text(metadata)))
            con.executemany("INSERT INTO memory_meta (memory_rowid, key, value) VALUES (?, ?, ?)",
                            [(rowid, k, canonical_json(v)) for k, v in metadata.items()])
        return [item]

    def retrieve(self, query: str, limit: int = 5, namespace: str | tuple[str, ...] | None = None, **kw: Any) -> list[MemoryItem]:
        """The best BM25 matches of any query word (stemmed), in ``namespace``; ``filters=`` match metadata."""
        text, limit, ns, filters = check_retrieve("sqlite", query, limit, namespace, kw)
        words = _query_terms(text)
        if not words:
            return []
        # Each word is an FTS5 string literal ("..."): never read as an operator, and
        # tokenized by FTS5 itself, exactly as the stored text was.
        match = " OR ".join('"' + w.replace('"', '""') + '"' for w in words)
        sql = (f"SELECT m.id, m.content, m.metadata, m.created_at, {_RANK} AS rank "
               "FROM memories_fts JOIN memories m ON m.rowid = memories_fts.rowid "
               "WHERE memories_fts MATCH ? AND m.namespace = ?" + _FILTER * len(filters) +
               " ORDER BY rank, m.rowid DESC LIMIT ?")
        params: list[Any] = [match, ns]
        for key, value in filters.items():
            params += [key, value]
        params.append(limit)
        rows = self._connection().execute(sql, params).fetchall()
        return [MemoryItem(id=r[0], content=r[1], metadata=_load_json(r[2]), namespace=ns,
                           created_at=datetime.fromisoformat(r[3]), score=-float(r[4])) for r in rows]

    def delete(self, item: Any, namespace: str | tuple[str, ...] | None = None) -> None:
        """Remove the memory from ``namespace``; an unknown id changes nothing."""
        memory_id = item_id(item)
        ns = resolve_namespace(namespace)
        if not _storable(memory_id):
            return  # no stored id holds a lone surrogate: an unknown id
        with self._write() as con:
            row = con.execute("SELECT rowid FROM memories WHERE namespace = ? AND id = ?", (ns, memory_id)).fetchone()
            if row is not None:
                self._remove(con, row[0])

    def count(self, namespace: str | tuple[str, ...] | None = None) -> int:
        """How many memories ``namespace`` holds."""
        ns = resolve_namespace(namespace)
        return int(self._connection().execute("SELECT count(*) FROM memories WHERE namespace = ?", (ns,)).fetchone()[0])

    @staticmethod
    def _remove(con: sqlite3.Connection, rowid: int) -> None:
        con.execute("DELETE FROM memories_fts WHERE rowid = ?", (rowid,))
        con.execute("DELETE FROM memory_meta WHERE memory_rowid = ?", (rowid,))
        con.execute("DELETE FROM memories WHERE rowid = ?", (rowid,))


def _is_term_char(char: str) -> bool:
    # Letters, numbers, marks, private-use and unassigned characters: a superset of
    # what FTS5's unicode61 tokenizer keeps inside a token (it separates only at
    # spaces, punctuation, symbols and controls), so no term splits one of its tokens.
    # The categories come from Unicode 3.2 (unicodedata.ucd_3_2_0), older than the
    # tables SQLite's tokenizer was built from: a character assigned later (an emoji
    # such as U+1FAF0) is "unassigned" there, so it stays inside the term, as it
    # stays inside SQLite's token, instead of splitting "0🫰" into a term "0" that
    # matches nothing. Each term is a phrase literal FTS5 tokenizes itself, so
    # keeping too much together is harmless.
    category = unicodedata.ucd_3_2_0.category(char)
    return category[0] in "LNM" or category in ("Co", "Cn")


def _query_terms(text: str) -> list[str]:
    """The distinct terms of a query, in order (split at every other character)."""
    terms: list[str] = []
    current: list[str] = []
    for char in text.lower() + " ":
        if _is_term_char(char):
            current.append(char)
        elif current:
            terms.append("".join(current))
            current = []
    return list(dict.fromkeys(terms))


def _metadata_text(metadata: dict[str, Any]) -> str:
    """What the FTS index sees of the metadata: ``key value`` pairs."""
    return " ".join(f"{k} {v if isinstance(v, str) else canonical_json(v)}" for k, v in metadata.items())


def _load_json(text: str) -> dict[str, Any]:
    value = json.loads(text)
    return value if isinstance(value, dict) else {}
