"""``postgres`` memory store: long-term memories in PostgreSQL, ranked by full-text search.

Tables (in the configured schema, created on first use through
``PgDatabase.ensure_schema("memory", ...)``, versioned with the checkpointer's):

- ``ctx_memories``: one row per memory, ``UNIQUE (namespace, id)``. ``content``
  is the text; PostgreSQL text cannot hold NUL, so a memory containing NUL
  keeps its exact UTF-8 bytes in ``content_raw`` (``content`` then shows U+FFFD
  in their place). ``metadata`` is canonical JSON *text*, not jsonb: jsonb
  cannot hold ``\\u0000`` and rewrites numbers. ``tsv`` is the search vector:
  the content with weight A and a ``key value`` rendering of the metadata with
  weight B, under a GIN index.
- ``ctx_memory_meta``: one row per metadata key (the key as a JSON string,
  the value as canonical JSON) for exact, typed filters.

Every value a caller gives - namespace, id, text, query, filter keys and
values, limit, the text search configuration - is a bound parameter. The
SQL text is fixed apart from identifiers quoted by psycopg and one more copy
of the same ``EXISTS`` clause per filter.

The query is split into words (``ctxcore.kit.memory.tokenize``) and the words are
OR-ed (``to_tsquery`` over single-quoted words, which never contain quote or
operator characters), so a long question still finds memories sharing only
some of its words, as BM25 does; ``ts_rank_cd`` (or ``ts_rank``) orders them,
by default divided by 1 + log(length) (normalization 1), as BM25 favours
short documents.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import Field

from ctxcore import ConfigError, MemoryCorrupt, MemoryItem
from ctxcore.kit import (
    MemoryStoreBase,
    canonical_json,
    check_record,
    check_retrieve,
    item_id,
    resolve_namespace,
    tokenize,
)
from ctxcore_postgres.connection import PgConfig, PgDatabase

__all__ = ["PostgresMemoryConfig", "PostgresMemoryStore"]

_CONFIG_NAME = r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$"


class PostgresMemoryConfig(PgConfig):
    """Options of the ``postgres`` memory store: the connection options plus search settings."""

    #: PostgreSQL text search configuration (``SELECT cfgname FROM pg_ts_config``): stemming and stop words.
    text_search_config: str = Field(default="english", pattern=_CONFIG_NAME, max_length=127)
    #: ranking function: ``ts_rank_cd`` (cover density) or ``ts_rank`` (term frequency).
    ranking: Literal["ts_rank_cd", "ts_rank"] = "ts_rank_cd"
    #: rank normalization bit mask (PostgreSQL docs, "Ranking Search Results"); 1 divides by 1 + log(length).
    normalization: int = Field(default=1, ge=0, le=63)


def _migrations(db: PgDatabase) -> list[list[Any]]:
    from psycopg import sql

    memories, meta = db.ident("ctx_memories"), db.ident("ctx_memory_meta")
    return [[
        sql.SQL(
            "CREATE TABLE {} (seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, namespace text NOT NULL, "
            "id text NOT NULL, content text NOT NULL, content_raw bytea, metadata text NOT NULL, "
            "created_at timestamptz NOT NULL, tsv tsvector NOT NULL, UNIQUE (namespace, id))"
        ).format(memories),
        sql.SQL("CREATE INDEX {} ON {} USING gin (tsv)").format(sql.Identifier("ctx_memories_tsv"), memories),
        sql.SQL(
            "CREATE TABLE {} (memory_seq bigint NOT NULL REFERENCES {} (seq) ON DELETE CASCADE, "
            "key text NOT NULL, value text NOT NULL, PRIMARY KEY (memory_seq, key))"
        ).format(meta, memories),
        sql.SQL("CREATE INDEX {} ON {} (key, value)").format(sql.Identifier("ctx_memory_meta_key_value"), meta),
    ]]


class PostgresMemoryStore(MemoryStoreBase):
    """Memories in a PostgreSQL schema, shared by every worker that connects to it."""

    def __init__(self, db: PgDatabase, *, text_search_config: str = "english",
                 ranking: Literal["ts_rank_cd", "ts_rank"] = "ts_rank_cd", normalization: int = 1) -> None:
        if ranking not in ("ts_rank_cd", "ts_rank"):
            raise ValueError(f"ranking must be 'ts_rank_cd' or 'ts_rank', got {ranking!r}")
        if isinstance(normalization, bool) or not isinstance(normalization, int) or not 0 <= normalization <= 63:
            raise ValueError(f"normalization must be an integer bit mask 0-63, got {normalization!r}")
        from psycopg import sql

        self.db = db
        self.text_search_config = text_search_config
        self.ranking = ranking
        self.normalization = normalization
        self._memories = db.ident("ctx_memories")
        self._meta = db.ident("ctx_memory_meta")
        self._rank = sql.Identifier("pg_catalog", ranking)
        self._checked_config = False

    @classmethod
    def from_config(cls, config: PostgresMemoryConfig) -> PostgresMemoryStore:
        """A store with its own pool for ``config``."""
        return cls(PgDatabase.from_config(config), text_search_config=config.text_search_config, ranking=config.ranking,
                   normalization=config.normalization)

    # ----------------------------------------------------------- connection
    def _conn(self) -> Any:
        self.db.ensure_schema("memory", _migrations(self.db))
        if not self._checked_config:
            self._check_config()
        return self.db.connection()

    def _check_config(self) -> None:
        import psycopg

        try:
            with self.db.connection() as conn:
                conn.execute("SELECT %s::regconfig", (self.text_search_config,))
        except (psycopg.errors.UndefinedObject, psycopg.errors.InvalidSchemaName) as exc:
            raise ConfigError(
                f"postgres memory store: text_search_config {self.text_search_config!r} is not a text search "
                "configuration on this server; pick one of `SELECT cfgname FROM pg_ts_config` (e.g. 'english', 'simple')"
            ) from exc
        self._checked_config = True

    def close(self) -> None:
        """Close this process's connection pool."""
        self.db.close()

    # ------------------------------------------------------------- contract
    def record(self, inputs: Any, namespace: str | tuple[str, ...] | None = None, **kw: Any) -> list[MemoryItem]:
        """Store ``inputs`` as one memory; ``metadata=`` labels it, ``id=`` replaces that memory."""
        from psycopg import sql

        item = check_record("postgres", inputs, namespace, kw)
        ns, text, metadata, memory_id = item.namespace, item.content, item.metadata, item.id
        if "\x00" in memory_id:
            raise ValueError(f"id {memory_id[:40]!r} holds NUL, which PostgreSQL text cannot store; use another id")
        shown = text.replace("\x00", "\ufffd")
        raw = text.encode("utf-8") if "\x00" in text else None
        meta_json = canonical_json(metadata)
        upsert = sql.SQL(
            "INSERT INTO {m} (namespace, id, content, content_raw, metadata, created_at, tsv) "
            "VALUES (%(ns)s, %(id)s, %(content)s, %(raw)s, %(meta)s, %(at)s, "
            "setweight(to_tsvector(%(cfg)s::regconfig, %(content)s), 'A') || "
            "setweight(to_tsvector(%(cfg)s::regconfig, %(meta_text)s), 'B')) "
            "ON CONFLICT (namespace, id) DO UPDATE SET content = EXCLUDED.content, content_raw = EXCLUDED.content_raw, "
            "metadata = EXCLUDED.metadata, created_at = EXCLUDED.created_at, tsv = EXCLUDED.tsv RETURNING seq"
        ).format(m=self._memories)
        params = {"ns": ns, "id": memory_id, "content": shown, "raw": raw, "meta": meta_json,
                  "at": item.created_at, "cfg": self.text_search_config, "meta_text": _metadata_text(metadata)}
        with self._conn() as conn, conn.transaction():
            row = conn.execute(upsert, params).fetchone()
            seq = row[0]
            conn.execute(sql.SQL("DELETE FROM {} WHERE memory_seq = %s").format(self._meta), (seq,))
            if metadata:
                with conn.cursor() as cur:
                    cur.executemany(sql.SQL("INSERT INTO {} (memory_seq, key, value) VALUES (%s, %s, %s)").format(self._meta),
                                    [(seq, json.dumps(k, ensure_ascii=False), canonical_json(v)) for k, v in metadata.items()])
        return [item]

    def retrieve(self, query: str, limit: int = 5, namespace: str | tuple[str, ...] | None = None, **kw: Any) -> list[MemoryItem]:
        """The best full-text matches of any query word (stemmed), in ``namespace``; ``filters=`` match metadata."""
        from psycopg import sql

        text, limit, ns, filters = check_retrieve("postgres", query, limit, namespace, kw)
        tsquery = _or_query(text)
        if not tsquery:
            return []
        clause = sql.SQL(" AND EXISTS (SELECT 1 FROM {} f WHERE f.memory_seq = m.seq AND f.key = %s AND f.value = %s)").format(self._meta)
        statement = sql.SQL(
            "SELECT m.id, m.content, m.content_raw, m.metadata, m.created_at, {rank}(m.tsv, q, %s) AS score "
            "FROM {m} m, to_tsquery(%s::regconfig, %s) q WHERE m.namespace = %s AND m.tsv @@ q"
        ).format(rank=self._rank, m=self._memories) + sql.SQL("").join([clause] * len(filters)) + sql.SQL(
            " ORDER BY score DESC, m.seq DESC LIMIT %s")
        params: list[Any] = [self.normalization, self.text_search_config, tsquery, ns]
        for key, value in filters.items():
            params += [json.dumps(key, ensure_ascii=False), value]
        params.append(limit)
        with self._conn() as conn:
            rows = conn.execute(statement, params).fetchall()
        return [MemoryItem(id=r[0], content=_content(r[1], r[2]), metadata=_load_json(r[3]), namespace=ns,
                           created_at=r[4], score=float(r[5])) for r in rows]

    def delete(self, item: Any, namespace: str | tuple[str, ...] | None = None) -> None:
        """Remove the memory from ``namespace``; an unknown id changes nothing."""
        from psycopg import sql

        memory_id = item_id(item)
        ns = resolve_namespace(namespace)
        if "\x00" in memory_id or not _storable(memory_id):
            return  # no stored id holds NUL or a lone surrogate
        with self._conn() as conn:
            conn.execute(sql.SQL("DELETE FROM {} WHERE namespace = %s AND id = %s").format(self._memories), (ns, memory_id))

    def count(self, namespace: str | tuple[str, ...] | None = None) -> int:
        """How many memories ``namespace`` holds."""
        from psycopg import sql

        ns = resolve_namespace(namespace)
        with self._conn() as conn:
            row = conn.execute(sql.SQL("SELECT count(*) FROM {} WHERE namespace = %s").format(self._memories), (ns,)).fetchone()
        return int(row[0])


def _or_query(text: str) -> str:
    """``'w1' | 'w2' | ...`` for the distinct words of ``text`` (tsquery syntax, passed as a parameter).

    Words are runs of ``\\w`` characters, so they never hold a quote, backslash or
    operator; quoting them makes ``to_tsquery`` read each as text to normalize
    (stemmed, stop words dropped), never as syntax.
    """
    words = dict.fromkeys(w for w in tokenize(text.replace("\x00", " ")))
    return " | ".join(f"'{w}'" for w in words)


def _storable(text: str) -> bool:
    """Whether ``text`` encodes as UTF-8 (no lone surrogates)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _metadata_text(metadata: dict[str, Any]) -> str:
    """What the search vector sees of the metadata: ``key value`` pairs (NUL-free)."""
    text = " ".join(f"{k} {v if isinstance(v, str) else canonical_json(v)}" for k, v in metadata.items())
    return text.replace("\x00", " ")


def _content(shown: str, raw: bytes | None) -> str:
    return shown if raw is None else bytes(raw).decode("utf-8")


def _load_json(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise MemoryCorrupt(f"postgres memory store: a metadata row is not JSON ({exc})") from exc
    return value if isinstance(value, dict) else {}
