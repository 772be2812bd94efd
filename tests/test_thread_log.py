"""Threads on the thread log: appends only what is new, time travel, fork, bad input refused, old threads converted."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from ctxcore import Pipeline, StaleWrite
from ctxcore.errors import UnstorableState
from ctxcore.kit import UnknownStep
from ctxcore.model.stored import stored_dump
from ctxcore.testing import fresh_host
from tests.test_cli import ctx

PIPELINE = """version: 1
model: {context_window: 8000}
providers:
  - {type: static_prompt, text: You are terse.}
  - {type: history}
%s
"""


@pytest.fixture
def log_host() -> Any:
    import ctxcore_checkpointers.plugin
    import ctxcore_counters.plugin
    import ctxcore_providers.plugin

    return fresh_host(("p", ctxcore_providers.plugin), ("c", ctxcore_counters.plugin), ("k", ctxcore_checkpointers.plugin))


def sqlite_pipeline(host: Any, db: Path) -> Pipeline:
    return Pipeline.from_string(PIPELINE % f"checkpointer: {{type: sqlite, path: {db}}}", host=host)


def turn(thread: Any, i: int) -> None:
    """One coding-agent turn: user, assistant tool call, tool result, answer."""
    thread.add_user(f"question {i}")
    thread.add_response({"role": "assistant", "content": None, "tool_calls": [
        {"id": f"call_{i}", "type": "function", "function": {"name": "read", "arguments": "{}"}}]})
    thread.add_tool_result(f"call_{i}", f"result {i} " + "x" * 1500)
    thread.add_response({"role": "assistant", "content": f"answer {i}"})


class TestSavingAppends:
    def test_each_message_is_stored_once(self, log_host: Any, tmp_path: Path) -> None:
        """After many saves the sqlite log holds each message exactly once (no rewrite per save)."""
        pipeline = sqlite_pipeline(log_host, tmp_path / "c.db")
        thread = pipeline.thread("t")
        for i in range(20):
            turn(thread, i)
            thread.save()
        with sqlite3.connect(tmp_path / "c.db") as conn:
            assert conn.execute("SELECT count(*) FROM ctx_thread_log").fetchone()[0] == 80
            assert conn.execute("SELECT count(*) FROM ctx_thread_steps").fetchone()[0] == 20
            assert conn.execute("SELECT count(*) FROM ctx_checkpoints").fetchone()[0] == 0
        assert pipeline.thread("t").messages == thread.messages

    def test_a_reopened_thread_holds_and_saves_only_its_new_messages(self, log_host: Any, tmp_path: Path) -> None:
        """A reopen keeps no stored form of the saved history (one copy of the conversation in memory); the next save sends only the new turn."""
        pipeline = sqlite_pipeline(log_host, tmp_path / "c.db")
        thread = pipeline.thread("t")
        for i in range(5):
            turn(thread, i)
        thread.save()
        reopened = pipeline.thread("t")
        assert reopened._unsaved == [] and reopened.unsaved == 0
        sent: list[list[dict[str, Any]]] = []
        append = reopened.store.append
        reopened.store.append = lambda tid, messages, **kw: sent.append(list(messages)) or append(tid, messages, **kw)
        turn(reopened, 5)
        assert len(reopened._unsaved) == reopened.unsaved == 4
        reopened.save()
        assert sent == [[stored_dump(m) for m in reopened.messages[-4:]]] and reopened._unsaved == []
        assert pipeline.thread("t").messages == reopened.messages

    def test_the_threads_slot_names_the_store(self, log_host: Any, tmp_path: Path) -> None:
        """`threads:` picks the thread store on its own, apart from the checkpointer."""
        yaml = PIPELINE % f"threads: {{type: jsonl, path: {tmp_path / 'logs'}}}"
        pipeline = Pipeline.from_string(yaml, host=log_host)
        thread = pipeline.thread("t")
        turn(thread, 0)
        thread.save()
        assert (tmp_path / "logs" / "threads" / "t.jsonl").exists()
        assert pipeline.checkpointer is None
        assert len(Pipeline.from_string(yaml, host=log_host).thread("t").messages) == 4

    def test_checkpointer_without_a_thread_store_names_the_fix(self, log_host: Any) -> None:
        """A checkpointer whose plugin offers no thread store of its name is a ConfigError saying to add `threads:`."""
        from ctxcore.errors import ConfigError

        pipeline = Pipeline.from_string(PIPELINE % "checkpointer: {type: 'null'}", host=log_host)
        with pytest.raises(ConfigError, match="offers no thread log.*threads:"):
            pipeline.thread("t")


class TestBadInputIsRefusedBeforeAppending:
    @pytest.mark.parametrize("add", ["user", "response", "tool_result"])
    def test_lone_surrogate_is_refused_and_the_thread_still_saves(self, log_host: Any, tmp_path: Path, add: str) -> None:
        """A lone surrogate is refused by add_* with UnstorableState; nothing is appended and save keeps working."""
        thread = sqlite_pipeline(log_host, tmp_path / "c.db").thread("t")
        thread.add_user("q")
        if add == "tool_result":
            thread.add_response({"role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]})
        before = thread.messages
        with pytest.raises(UnstorableState, match="surrogate"):
            if add == "user":
                thread.add_user("bad \ud800 text")
            elif add == "response":
                thread.add_response({"role": "assistant", "content": "bad \udfff"})
            else:
                thread.add_tool_result("c1", "bad \ud800")
        assert thread.messages == before
        assert thread.save() == 0

    def test_nul_is_stored_and_read_back(self, log_host: Any, tmp_path: Path) -> None:
        """NUL in text is stored escaped, so every backend keeps it; it comes back unchanged."""
        pipeline = sqlite_pipeline(log_host, tmp_path / "c.db")
        thread = pipeline.thread("t")
        thread.add_user("nul \x00 inside")
        thread.save()
        assert pipeline.thread("t").messages[0].text == "nul \x00 inside"


class TestTimeTravelAndFork:
    def test_open_as_of_a_step(self, log_host: Any, tmp_path: Path) -> None:
        """pipeline.thread(id, step=N) is the thread exactly as step N saved it; steps() lists every step."""
        pipeline = sqlite_pipeline(log_host, tmp_path / "c.db")
        thread = pipeline.thread("t")
        for i in range(3):
            turn(thread, i)
            thread.save()
        assert [(r.step, r.messages) for r in thread.steps()] == [(0, 4), (1, 8), (2, 12)]
        old = pipeline.thread("t", step=1)
        assert old.step == 1 and old.messages == thread.messages[:8]
        with pytest.raises(UnknownStep, match="no step 9"):
            pipeline.thread("t", step=9)

    def test_an_older_step_is_not_saved_over(self, log_host: Any, tmp_path: Path) -> None:
        """Saving a thread opened at an older step raises StaleWrite and writes nothing: history is never rewritten."""
        pipeline = sqlite_pipeline(log_host, tmp_path / "c.db")
        thread = pipeline.thread("t")
        for i in range(2):
            turn(thread, i)
            thread.save()
        old = pipeline.thread("t", step=0)
        old.add_user("a different path")
        with pytest.raises(StaleWrite, match="fork"):
            old.save()
        assert len(pipeline.thread("t").messages) == 8

    def test_fork_continues_on_its_own(self, log_host: Any, tmp_path: Path) -> None:
        """thread.fork(new_id, step=N) copies step N into a new thread that saves independently."""
        pipeline = sqlite_pipeline(log_host, tmp_path / "c.db")
        thread = pipeline.thread("t")
        for i in range(2):
            turn(thread, i)
            thread.save()
        branch = thread.fork("t-branch", step=0)
        assert branch.messages == thread.messages[:4] and branch.step == 0
        branch.add_user("another question")
        assert branch.save() == 1
        assert len(pipeline.thread("t").messages) == 8 and len(pipeline.thread("t-branch").messages) == 5


def _write_old_format(db: Path, thread_id: str, turns: int) -> list[dict[str, Any]]:
    """Write checkpoints exactly as the code before the thread log did: the whole conversation per step."""
    from ctxcore_checkpointers import SqliteCheckpointer

    from ctxcore import Message

    cp = SqliteCheckpointer(db)
    dumps: list[dict[str, Any]] = []
    for step in range(turns):
        dumps.append(Message(role="user", content=f"old question {step}").model_dump(mode="json"))
        dumps.append(Message(role="assistant", content=f"old answer {step}").model_dump(mode="json"))
        cp.save_checkpoint(thread_id, step, {"messages": list(dumps)}, None, {"format": "ctxcore.thread/1", "messages": len(dumps)})
    cp.close()
    return dumps


class TestOldThreads:
    def test_old_thread_opens_continues_and_converts(self, log_host: Any, tmp_path: Path) -> None:
        """A thread saved as whole checkpoints opens with its messages and step; its first save moves it to the log."""
        db = tmp_path / "c.db"
        dumps = _write_old_format(db, "old", 3)
        pipeline = sqlite_pipeline(log_host, db)
        thread = pipeline.thread("old")
        assert thread.step == 2 and [m.model_dump(mode="json") for m in thread.messages] == dumps
        thread.add_user("new question")
        assert thread.save() == 3
        snap = pipeline.thread_store().read("old")
        assert snap.record.step == 3 and snap.messages == [*dumps, stored_dump(thread.messages[-1])]
        thread.add_response({"role": "assistant", "content": "new answer"})
        assert thread.save() == 4
        assert len(sqlite_pipeline(log_host, db).thread("old").messages) == 8

    def test_a_log_of_full_dumps_opens_and_continues(self, log_host: Any, tmp_path: Path) -> None:
        """A log whose rows hold the full model_dump (as stores written before the compact form do) opens, equal, and continues."""
        db = tmp_path / "c.db"
        pipeline = sqlite_pipeline(log_host, db)
        writer = pipeline.thread("full")
        for i in range(2):
            turn(writer, i)
        full = [m.model_dump(mode="json") for m in writer.messages]
        pipeline.thread_store().append("full", full, expected_step=None, metadata={"format": "ctxcore.threadlog/1"})
        reopened = sqlite_pipeline(log_host, db).thread("full")
        assert reopened.messages == writer.messages and reopened.step == 0
        assert [m.model_dump(mode="json") for m in reopened.messages] == full
        turn(reopened, 2)
        assert reopened.save() == 1
        rows = sqlite_pipeline(log_host, db).thread_store().read("full").messages
        assert rows[:8] == full and rows[8] == {"id": reopened.messages[8].id, "role": "user", "content": "question 2"}
        assert sqlite_pipeline(log_host, db).thread("full").messages == reopened.messages

    def test_ctx_thread_migrate_converts_every_old_thread(self, tmp_path: Path) -> None:
        """`ctx thread migrate` converts old threads; list then shows them in the log with their messages."""
        db = tmp_path / "c.db"
        _write_old_format(db, "a", 2)
        _write_old_format(db, "b", 1)
        path = tmp_path / "p.yaml"
        path.write_text(PIPELINE % f"checkpointer: {{type: sqlite, path: {db}}}")
        listed = json.loads(ctx("thread", "list", "--pipeline", str(path), "--json").stdout)
        assert [(r["thread_id"], r["stored"], r["messages"]) for r in listed] == [("a", "checkpoint", 4), ("b", "checkpoint", 2)]
        out = ctx("thread", "migrate", "--pipeline", str(path))
        assert out.returncode == 0 and "2 thread(s) converted" in out.stdout
        listed = json.loads(ctx("thread", "list", "--pipeline", str(path), "--json").stdout)
        assert [(r["thread_id"], r["stored"], r["step"], r["messages"]) for r in listed] == [("a", "log", 2, 4), ("b", "log", 1, 2)]
        assert "0 thread(s) converted" in ctx("thread", "migrate", "--pipeline", str(path)).stdout


class TestCommands:
    @pytest.fixture
    def jsonl_pipeline(self, tmp_path: Path, log_host: Any) -> Path:
        path = tmp_path / "p.yaml"
        path.write_text(PIPELINE % f"checkpointer: {{type: jsonl, path: {tmp_path / 'store'}}}")
        pipeline = Pipeline.from_yaml(path, host=log_host)
        for name in ("one", "two"):
            thread = pipeline.thread(name)
            for i in range(3):
                turn(thread, i)
                thread.save()
        return path

    def test_prune_older_than_expires_idle_threads(self, jsonl_pipeline: Path) -> None:
        """`ctx thread prune --older-than 30d` keeps fresh threads; `--older-than 0s` expires them all."""
        out = ctx("thread", "prune", "--pipeline", str(jsonl_pipeline), "--older-than", "30d")
        assert out.returncode == 0 and "expired 0 thread(s)" in out.stdout
        out = ctx("thread", "prune", "--pipeline", str(jsonl_pipeline), "--older-than", "0s")
        assert "expired 2 thread(s)" in out.stdout
        assert json.loads(ctx("thread", "list", "--pipeline", str(jsonl_pipeline), "--json").stdout) == []

    def test_prune_keep_last_and_bad_age(self, jsonl_pipeline: Path) -> None:
        """`--keep-last 1` trims step records but keeps every message; a bad age names the accepted forms."""
        out = ctx("thread", "prune", "--pipeline", str(jsonl_pipeline), "--keep-last", "1")
        assert "removed 4 step record(s)" in out.stdout
        steps = json.loads(ctx("thread", "steps", "one", "--pipeline", str(jsonl_pipeline), "--json").stdout)
        assert [(s["step"], s["messages"]) for s in steps] == [(2, 12)]
        bad = ctx("thread", "prune", "--pipeline", str(jsonl_pipeline), "--older-than", "soon")
        assert bad.returncode != 0 and "30d" in bad.stderr and "Traceback" not in bad.stderr

    def test_damaged_thread_is_reported_and_repair_exports_what_is_readable(self, jsonl_pipeline: Path, tmp_path: Path) -> None:
        """A damaged acknowledged line: show fails naming --repair (no traceback); export --repair writes the intact steps."""
        file = tmp_path / "store" / "threads" / "one.jsonl"
        lines = file.read_bytes().split(b"\n")
        lines[2] = lines[2].replace(b"answer 2", b"answer X")
        file.write_bytes(b"\n".join(lines))
        out = ctx("thread", "show", "one", "--pipeline", str(jsonl_pipeline))
        assert out.returncode == 1 and "CheckpointCorrupt" in out.stderr and "--repair" in out.stderr
        assert "Traceback" not in out.stderr
        exported = ctx("thread", "export", "one", "--repair", "--pipeline", str(jsonl_pipeline))
        assert exported.returncode == 0 and len(json.loads(exported.stdout)["messages"]) == 8

    def test_fork_and_show_a_step(self, jsonl_pipeline: Path) -> None:
        """`ctx thread fork` copies a step into a new id; `show --step` reads an older step."""
        out = ctx("thread", "fork", "one", "one-b", "--step", "1", "--pipeline", str(jsonl_pipeline))
        assert out.returncode == 0 and "8 messages" in out.stdout
        shown = json.loads(ctx("thread", "show", "two", "--step", "0", "--json", "--pipeline", str(jsonl_pipeline)).stdout)
        assert shown["step"] == 0 and len(shown["messages"]) == 4


def test_newest_readable_skips_damaged_and_missing_steps() -> None:
    """Salvage's rule: the newest step that reads, past damaged (CheckpointCorrupt) or pruned (UnknownStep) ones; never raises."""
    from ctxcore.errors import CheckpointCorrupt
    from ctxcore.kit import StepRecord, ThreadSnapshot, newest_readable

    def read(step: int) -> ThreadSnapshot:
        if step == 3:
            raise CheckpointCorrupt("damaged")
        if step == 2:
            raise UnknownStep("pruned")
        return ThreadSnapshot(StepRecord("t", step, step, "2026-01-01T00:00:00+00:00"))

    def unreadable() -> list[int]:
        raise CheckpointCorrupt("steps table damaged")

    assert newest_readable(lambda: [0, 1, 2, 3], read).record.step == 1  # type: ignore[union-attr]
    assert newest_readable(lambda: [2, 3], read) is None
    assert newest_readable(unreadable, read) is None
