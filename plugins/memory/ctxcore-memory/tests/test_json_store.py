"""Behaviour of the json store beyond the contract: file format, durability, locking, concurrency."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from ctxcore_memory import JsonMemoryStore
from ctxcore_memory.json_store import FORMAT
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxcore import MemoryCorrupt


class TestFile:
    def test_file_is_readable_json(self, tmp_path: Path) -> None:
        """The file is plain JSON a person can read: format marker, version, namespaces of memories."""
        store = JsonMemoryStore(tmp_path / "sub" / "memory.json")
        item = store.record("likes tea", namespace="u1", metadata={"k": "v"})[0]
        doc = json.loads((tmp_path / "sub" / "memory.json").read_text(encoding="utf-8"))
        assert doc["format"] == FORMAT and doc["version"] == 1
        assert doc["namespaces"]["u1"][item.id]["content"] == "likes tea"
        assert doc["namespaces"]["u1"][item.id]["metadata"] == {"k": "v"}

    def test_no_temp_files_are_left(self, tmp_path: Path) -> None:
        """After writes the directory holds only the file and its lock."""
        store = JsonMemoryStore(tmp_path / "memory.json")
        for i in range(5):
            store.record(f"memory {i}")
        store.delete(store.all_items()[0])
        assert sorted(p.name for p in tmp_path.iterdir()) == ["memory.json", "memory.json.lock"]

    @pytest.mark.parametrize("content", [b"{not json", b"\xff\xfe", b"[]", b'{"format": "other"}',
                                         b'{"format": "ctxcore-memory-json", "version": 99, "namespaces": {}}',
                                         b'{"format": "ctxcore-memory-json", "version": 1, "namespaces": {"u": {"x": {"content": 1}}}}',
                                         b'{"format": "ctxcore-memory-json", "version": 1, "namespaces": {"u": {"x": '
                                         b'{"content": "c", "metadata": {}, "created_at": "yesterday"}}}}'])
    def test_damaged_file_raises_naming_it(self, tmp_path: Path, content: bytes) -> None:
        """A file that is not what the store wrote raises MemoryCorrupt with its path; it is not overwritten."""
        path = tmp_path / "memory.json"
        path.write_bytes(content)
        store = JsonMemoryStore(path)
        with pytest.raises(MemoryCorrupt, match="memory.json"):
            store.retrieve("anything")
        with pytest.raises(MemoryCorrupt):
            store.record("new fact")
        assert path.read_bytes() == content

    def test_failed_write_leaves_the_old_file(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """A write that fails before the rename raises, keeps the previous file and leaves no temp file."""
        from ctxcore_memory import json_store

        path = tmp_path / "memory.json"
        store = JsonMemoryStore(path)
        store.record("kept fact")
        before = path.read_bytes()

        def disk_full(src: str, dst: str) -> None:
            raise OSError(28, "No space left on device")

        monkeypatch.setattr(json_store.os, "replace", disk_full)
        with pytest.raises(OSError, match="No space"):
            store.record("lost fact")
        assert path.read_bytes() == before
        assert sorted(p.name for p in tmp_path.iterdir()) == ["memory.json", "memory.json.lock"]

    def test_instances_see_each_others_writes(self, tmp_path: Path) -> None:
        """Two stores on one file (two processes, in effect) read each other's latest writes."""
        a, b = JsonMemoryStore(tmp_path / "m.json"), JsonMemoryStore(tmp_path / "m.json")
        assert a.retrieve("orchid") == []
        item = b.record("the orchid needs water on Sundays")[0]
        assert [i.id for i in a.retrieve("orchid")] == [item.id]
        a.delete(item)
        assert b.retrieve("orchid") == []

    def test_lock_timeout_names_the_lock(self, tmp_path: Path) -> None:
        """A writer waiting longer than lock_timeout fails with TimeoutError naming the lock file."""
        store = JsonMemoryStore(tmp_path / "m.json", lock_timeout=0.05)
        fd = os.open(tmp_path / "m.json.lock", os.O_RDWR | os.O_CREAT)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            with pytest.raises(TimeoutError, match="m.json.lock"):
                store.record("blocked")
        finally:
            os.close(fd)
        assert store.all_items() == []


class TestRanking:
    def test_substring_beats_keyword_overlap(self, tmp_path: Path) -> None:
        """A memory holding the whole query comes before one sharing more of its words."""
        store = JsonMemoryStore(tmp_path / "m.json")
        store.record("green tea, black tea, tea in the morning and green leaves")
        phrase = store.record("she likes green tea")[0]
        assert store.retrieve("green tea")[0].id == phrase.id

    def test_metadata_is_searched(self, tmp_path: Path) -> None:
        """Metadata keys and values count as text of the memory."""
        store = JsonMemoryStore(tmp_path / "m.json")
        item = store.record("call the plumber", metadata={"room": "bathroom"})[0]
        assert [i.id for i in store.retrieve("bathroom")] == [item.id]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(st.characters(blacklist_categories=("Cs",)), min_size=1).filter(lambda t: t.strip()))
def test_any_text_round_trips(tmp_path_factory: pytest.TempPathFactory, text: str) -> None:
    """Any storable text comes back exactly from a fresh store on the same file."""
    path = tmp_path_factory.mktemp("prop") / "m.json"
    item = JsonMemoryStore(path).record(text)[0]
    assert [(i.id, i.content) for i in JsonMemoryStore(path).all_items()] == [(item.id, text)]


_WRITER = textwrap.dedent("""
    import sys
    from ctxcore_memory import JsonMemoryStore
    path, worker, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    store = JsonMemoryStore(path)
    for i in range(count):
        item = store.record(f"worker {worker} fact {i}", namespace=f"ns{int(worker) % 2}", id=f"w{worker}-{i}")[0]
        print(item.id, flush=True)
""")


def test_concurrent_processes_lose_nothing(tmp_path: Path) -> None:
    """Six processes adding at once: every acknowledged memory is in the file exactly once."""
    path = tmp_path / "m.json"
    workers, count = 6, 25
    procs = [subprocess.Popen([sys.executable, "-c", _WRITER, str(path), str(w), str(count)],
                              stdout=subprocess.PIPE, text=True) for w in range(workers)]
    acked = set()
    for proc in procs:
        out, _ = proc.communicate(timeout=300)
        assert proc.returncode == 0
        acked.update(out.split())
    assert len(acked) == workers * count
    store = JsonMemoryStore(path)
    stored = [i.id for ns in ("ns0", "ns1") for i in store.all_items(ns)]
    assert sorted(stored) == sorted(acked)
