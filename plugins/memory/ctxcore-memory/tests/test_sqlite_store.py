"""Behaviour of the sqlite store beyond the contract: ranking, bound parameters, schema, concurrency."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from ctxcore_memory import SqliteMemoryStore
from ctxcore_memory.sqlite_store import SCHEMA_VERSION, fts5_available
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from ctxcore import MemoryCorrupt


def test_this_python_has_fts5() -> None:
    """The sqlite3 module here was built with FTS5 (the store refuses to start otherwise)."""
    assert fts5_available()


class TestRanking:
    def test_stemming_matches_other_word_forms(self, tmp_path: Path) -> None:
        """'running' finds 'runs' and 'holidays' finds 'holiday' (porter stemming)."""
        store = SqliteMemoryStore(tmp_path / "m.db")
        run = store.record("Priya runs half marathons")[0]
        trip = store.record("a holiday in Kyoto next April")[0]
        assert store.retrieve("running")[0].id == run.id
        assert store.retrieve("holidays")[0].id == trip.id

    def test_rare_words_outrank_common_ones(self, tmp_path: Path) -> None:
        """BM25 weighs a rare matching word above a common one."""
        store = SqliteMemoryStore(tmp_path / "m.db")
        for i in range(10):
            store.record(f"the user said thing number {i}")
        rare = store.record("the user owns a theremin")[0]
        assert store.retrieve("does the user play the theremin")[0].id == rare.id

    def test_metadata_is_indexed(self, tmp_path: Path) -> None:
        """Words in metadata values are found, ranked below the same word in content."""
        store = SqliteMemoryStore(tmp_path / "m.db")
        labelled = store.record("call the plumber", metadata={"room": "bathroom"})[0]
        content = store.record("the bathroom tiles are cracked")[0]
        assert [i.id for i in store.retrieve("bathroom")] == [content.id, labelled.id]


class _Recording:
    """Wraps a connection and records the SQL text of every statement (before binding)."""

    def __init__(self, con: sqlite3.Connection) -> None:
        self.con, self.sql = con, []

    def execute(self, sql: str, *params):
        self.sql.append(sql)
        return self.con.execute(sql, *params)

    def executemany(self, sql: str, params):
        self.sql.append(sql)
        return self.con.executemany(sql, params)


class TestBoundParameters:
    def test_caller_values_never_reach_the_sql_text(self, tmp_path: Path) -> None:
        """Filter keys and values, query words, ids and namespaces are bound, never part of a statement."""
        store = SqliteMemoryStore(tmp_path / "m.db")
        recording = _Recording(store._connection())
        store._local.con = recording
        key, value = "KEYMARK' OR 1=1 --", "VALMARK'); DROP TABLE memories; --"
        store.record("WORDMARK text", namespace="NSMARK'--", metadata={key: value}, id="IDMARK'--")
        found = store.retrieve("WORDMARK", namespace="NSMARK'--", filters={key: value})
        assert store.retrieve("WORDMARK", namespace="NSMARK'--", filters={key: "QMARK' OR 1=1 --"}) == []
        assert [i.id for i in found] == ["IDMARK'--"]
        store.delete("IDMARK'--", namespace="NSMARK'--")
        assert recording.sql
        for marker in ("KEYMARK", "VALMARK", "QMARK", "WORDMARK", "NSMARK", "IDMARK"):
            assert not [sql for sql in recording.sql if marker in sql]
        assert store.count("NSMARK'--") == 0
        assert sqlite3.connect(tmp_path / "m.db").execute("PRAGMA integrity_check").fetchone()[0] == "ok"

    def test_filter_sql_is_fixed_text(self) -> None:
        """The only SQL a filter adds is the same placeholder clause, whatever its key and value."""
        from ctxcore_memory import sqlite_store

        assert sqlite_store._FILTER.count("?") == 2 and "'" not in sqlite_store._FILTER


class TestSchema:
    def test_newer_schema_is_refused(self, tmp_path: Path) -> None:
        """A database written by a newer ctxcore-memory raises MemoryCorrupt instead of being changed."""
        path = tmp_path / "m.db"
        SqliteMemoryStore(path).close()
        con = sqlite3.connect(path)
        con.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
        con.close()
        with pytest.raises(MemoryCorrupt, match="newer"):
            SqliteMemoryStore(path)

    def test_not_a_database_is_refused(self, tmp_path: Path) -> None:
        """A file that is not SQLite raises MemoryCorrupt naming it."""
        path = tmp_path / "m.db"
        path.write_bytes(b"this is a text file, not a database" * 100)
        with pytest.raises(MemoryCorrupt, match="m.db"):
            SqliteMemoryStore(path)

    def test_wal_mode(self, tmp_path: Path) -> None:
        """The database runs in WAL mode, so readers never block the writer."""
        SqliteMemoryStore(tmp_path / "m.db").record("x marks the spot")
        assert sqlite3.connect(tmp_path / "m.db").execute("PRAGMA journal_mode").fetchone()[0] == "wal"

    def test_threads_get_their_own_connection(self, tmp_path: Path) -> None:
        """A store used from several threads opens one connection per thread."""
        import threading

        store = SqliteMemoryStore(tmp_path / "m.db")
        errors: list[BaseException] = []

        def work(n: int) -> None:
            try:
                for i in range(20):
                    store.record(f"thread {n} note {i}", namespace=f"t{n}")
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors and [store.count(f"t{n}") for n in range(4)] == [20] * 4


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@example(text="0\U0001faf0", metadata={})  # an emoji newer than SQLite's Unicode tables, inside a word
@given(text=st.text(st.characters(blacklist_categories=("Cs",)), min_size=1).filter(lambda t: t.strip()),
       metadata=st.dictionaries(st.text(min_size=1, alphabet=st.characters(blacklist_categories=("Cs",))),
                                st.one_of(st.text(alphabet=st.characters(blacklist_categories=("Cs",))), st.integers(), st.booleans()),
                                max_size=3))
def test_any_text_and_metadata_round_trip(tmp_path_factory: pytest.TempPathFactory, text: str, metadata: dict) -> None:
    """Any storable text and metadata come back exactly, and a metadata filter on each key finds it."""
    store = SqliteMemoryStore(tmp_path_factory.mktemp("prop") / "m.db")
    item = store.record(text, metadata=metadata, id="the-id")[0]
    words = [w for w in text.split() if any(c.isalnum() for c in w)]
    if words:
        found = store.retrieve(words[0], limit=1, filters=metadata)
        assert [(i.id, i.content, i.metadata) for i in found] == [(item.id, text, metadata)]


_WRITER = textwrap.dedent("""
    import sys
    from ctxcore_memory import SqliteMemoryStore
    path, worker, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    store = SqliteMemoryStore(path)
    for i in range(count):
        print(store.record(f"worker {worker} fact {i}", id=f"w{worker}-{i}")[0].id, flush=True)
""")


def test_eight_processes_share_one_file(tmp_path: Path) -> None:
    """Eight processes writing at once: every acknowledged memory is stored once; integrity_check is ok."""
    path = tmp_path / "m.db"
    SqliteMemoryStore(path).close()
    procs = [subprocess.Popen([sys.executable, "-c", _WRITER, str(path), str(w), "20"], stdout=subprocess.PIPE, text=True)
             for w in range(8)]
    acked = set()
    for proc in procs:
        out, _ = proc.communicate(timeout=300)
        assert proc.returncode == 0
        acked.update(out.split())
    con = sqlite3.connect(path)
    rows = [r[0] for r in con.execute("SELECT id FROM memories")]
    assert sorted(rows) == sorted(acked) and len(acked) == 160
    assert con.execute("SELECT count(*) FROM memories_fts").fetchone()[0] == 160
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    con.execute("INSERT INTO memories_fts(memories_fts) VALUES('integrity-check')")
