"""Tests for `ctx checkpoint list|show|prune`, run as a real subprocess on real jsonl and SQLite stores."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.integration


def ctx(*args: str, cwd: pathlib.Path) -> subprocess.CompletedProcess[str]:
    """Run `ctx` with plugin autoload on."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CTXCORE_")}
    return subprocess.run([sys.executable, "-m", "ctxcore", *args], capture_output=True, text=True, env=env, timeout=120, cwd=cwd)


@pytest.fixture(params=["sqlite", "jsonl"])
def store(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> pathlib.Path:
    """A pipeline file whose checkpointer holds threads chat-1 (steps 0..4) and chat-2 (step 0)."""
    if request.param == "sqlite":
        from ctxcore_checkpointers import SqliteCheckpointer

        cp = SqliteCheckpointer(tmp_path / "cps.db")
        slot = "{type: sqlite, path: cps.db}"
    else:
        from ctxcore_checkpointers import JsonlCheckpointer

        cp = JsonlCheckpointer(tmp_path / "cps")
        slot = "{type: jsonl, path: cps}"
    for step in range(5):
        cp.save_checkpoint("chat-1", step, {"messages": [{"role": "user", "content": f"hi {step}"}]})
    cp.save_checkpoint("chat-2", 0, {"emoji": "😀", "nul": "\x00"})
    pipeline = tmp_path / "pipeline.yaml"
    pipeline.write_text(f"version: 1\ncheckpointer: {slot}\n")
    return pipeline


class TestCheckpointCommands:
    def test_list_threads(self, store: pathlib.Path) -> None:
        """`list --json` names every thread with its count and newest step; the table shows the same."""
        result = ctx("checkpoint", "list", "--pipeline", str(store), "--json", cwd=store.parent)
        assert result.returncode == 0, result.stderr
        rows = json.loads(result.stdout)
        assert [(r["thread_id"], r["checkpoints"], r["latest_step"]) for r in rows] == [("chat-1", 5, 4), ("chat-2", 1, 0)]
        table = ctx("checkpoint", "list", "--pipeline", str(store), cwd=store.parent)
        assert table.returncode == 0 and "chat-1" in table.stdout and "chat-2" in table.stdout

    def test_list_one_thread(self, store: pathlib.Path) -> None:
        """`list --thread` lists that thread's steps oldest first."""
        result = ctx("checkpoint", "list", "--pipeline", str(store), "--thread", "chat-1", "--json", cwd=store.parent)
        assert [c["step"] for c in json.loads(result.stdout)] == [0, 1, 2, 3, 4]

    def test_show_latest_and_step(self, store: pathlib.Path) -> None:
        """`show` prints the latest checkpoint exactly; `--step` picks an older one."""
        latest = json.loads(ctx("checkpoint", "show", "--pipeline", str(store), "chat-2", cwd=store.parent).stdout)
        assert latest["state_dump"] == {"emoji": "😀", "nul": "\x00"} and latest["step"] == 0
        older = json.loads(ctx("checkpoint", "show", "--pipeline", str(store), "chat-1", "--step", "2", cwd=store.parent).stdout)
        assert older["state_dump"]["messages"][0]["content"] == "hi 2"

    def test_show_unknown_thread_fails_clearly(self, store: pathlib.Path) -> None:
        """An unknown thread exits 1 and says it has no checkpoints."""
        result = ctx("checkpoint", "show", "--pipeline", str(store), "nope", cwd=store.parent)
        assert result.returncode == 1 and "thread 'nope' has no checkpoints" in result.stderr

    def test_prune(self, store: pathlib.Path) -> None:
        """`prune --keep-last 2 chat-1` removes three; `--all` prunes every thread."""
        result = ctx("checkpoint", "prune", "--pipeline", str(store), "chat-1", "--keep-last", "2", cwd=store.parent)
        assert result.returncode == 0 and "chat-1: removed 3" in result.stdout
        rows = json.loads(ctx("checkpoint", "list", "--pipeline", str(store), "--thread", "chat-1", "--json", cwd=store.parent).stdout)
        assert [c["step"] for c in rows] == [3, 4]
        again = ctx("checkpoint", "prune", "--pipeline", str(store), "--all", "--keep-last", "1", cwd=store.parent)
        assert again.returncode == 0 and "chat-1: removed 1" in again.stdout and "chat-2: removed 0" in again.stdout
        assert ctx("checkpoint", "prune", "--pipeline", str(store), "--keep-last", "1", cwd=store.parent).returncode == 2


def test_pipeline_without_checkpointer(tmp_path: pathlib.Path) -> None:
    """A pipeline with no checkpointer slot gets an error showing how to add one."""
    p = tmp_path / "p.yaml"
    p.write_text("version: 1\n")
    result = ctx("checkpoint", "list", "--pipeline", str(p), cwd=tmp_path)
    assert result.returncode == 1 and "has no checkpointer" in result.stderr and "type: sqlite" in result.stderr


def test_corrupt_store_is_reported(tmp_path: pathlib.Path) -> None:
    """A jsonl file damaged before its last record makes `show` exit 1 with CheckpointCorrupt."""
    from ctxcore_checkpointers import JsonlCheckpointer

    cp = JsonlCheckpointer(tmp_path / "cps")
    for step in range(3):
        cp.save_checkpoint("t", step, {"s": step})
    file = cp.file_for("t")
    data = bytearray(file.read_bytes())
    data[20] ^= 1
    file.write_bytes(bytes(data))
    p = tmp_path / "p.yaml"
    p.write_text("version: 1\ncheckpointer: {type: jsonl, path: cps}\n")
    result = ctx("checkpoint", "show", "--pipeline", str(p), "t", cwd=tmp_path)
    assert result.returncode == 1 and "CheckpointCorrupt" in result.stderr and "t.jsonl" in result.stderr
