"""Crash durability: a writer killed with SIGKILL at random moments loses no acknowledged memory."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from ctxcore_memory import JsonMemoryStore, SqliteMemoryStore

KILLS = int(os.environ.get("CTXCORE_MEMORY_KILLS", "12"))

_WRITER = textwrap.dedent("""
    import sys
    from ctxcore_memory import JsonMemoryStore, SqliteMemoryStore
    kind, path, start = sys.argv[1], sys.argv[2], int(sys.argv[3])
    store = JsonMemoryStore(path) if kind == "json" else SqliteMemoryStore(path)
    print("ready", flush=True)
    i = start
    while True:
        store.record(f"fact number {i}", id=f"m{i}")
        print(i, flush=True)  # acknowledged: record() has returned
        i += 1
""")


def _open(kind: str, path: Path) -> JsonMemoryStore | SqliteMemoryStore:
    return JsonMemoryStore(path) if kind == "json" else SqliteMemoryStore(path)


def _stored_ids(kind: str, path: Path) -> set[str]:
    store = _open(kind, path)
    if isinstance(store, JsonMemoryStore):
        return {i.id for i in store.all_items()}
    import sqlite3

    con = sqlite3.connect(path)
    try:
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        return {r[0] for r in con.execute("SELECT id FROM memories")}
    finally:
        con.close()


@pytest.mark.parametrize("kind", ["json", "sqlite"])
def test_sigkill_loses_no_acknowledged_memory(kind: str, tmp_path: Path) -> None:
    """After each SIGKILL the store opens without error and holds every acknowledged memory."""
    path = tmp_path / ("m.json" if kind == "json" else "m.db")
    rng = random.Random(1234)
    acked: set[str] = set()
    next_id = 0
    for _ in range(KILLS):
        proc = subprocess.Popen([sys.executable, "-c", _WRITER, kind, str(path), str(next_id)],
                                stdout=subprocess.PIPE, text=True)
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
        for _ in range(rng.randint(0, 15)):  # let it acknowledge a random number of writes, then kill mid-stream
            line = proc.stdout.readline().strip()
            acked.add(f"m{line}")
            next_id = int(line) + 1
        proc.send_signal(signal.SIGKILL)
        rest, _ = proc.communicate(timeout=60)
        for line in rest.split():  # acknowledgements already in the pipe when it died
            acked.add(f"m{line}")
            next_id = int(line) + 1
        next_id += 1000  # a half-finished write may have stored the next id unacknowledged; never reuse it
        stored = _stored_ids(kind, path)
        assert acked <= stored, f"lost acknowledged memories: {sorted(acked - stored)[:5]}"
    if kind == "json":
        _open(kind, path).record("one more write cleans up")
        assert not list(tmp_path.glob(".m.json.*.tmp")), "a later writer removes temp files of killed writers"
