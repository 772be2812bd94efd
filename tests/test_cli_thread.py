"""``ctx thread list|show|export``: a real sqlite checkpointer, the real command in a subprocess."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ctxcore import Pipeline
from tests.test_cli import ctx

PIPELINE = """version: 1
model: {context_window: 8000}
providers:
  - {type: static_prompt, text: You are terse.}
  - {type: history}
checkpointer: {type: sqlite, path: %s}
"""


@pytest.fixture
def saved(tmp_path: Path, host: object) -> Path:
    """A pipeline file whose sqlite checkpointer holds thread chat-1 (a tool-using turn) and a foreign checkpoint."""
    import ctxcore_checkpointers.plugin

    from ctxcore.testing import fresh_host

    path = tmp_path / "p.yaml"
    path.write_text(PIPELINE % (tmp_path / "c.db"))
    import ctxcore_counters.plugin
    import ctxcore_providers.plugin

    h = fresh_host(("p", ctxcore_providers.plugin), ("c", ctxcore_counters.plugin), ("k", ctxcore_checkpointers.plugin))
    pipeline = Pipeline.from_yaml(path, host=h)
    thread = pipeline.thread("chat-1")
    thread.add_user("Weather in [bold]Paris[/]?")
    thread.add_response({"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}]})
    thread.add_tool_result("call_1", "18C")
    thread.add_response({"role": "assistant", "content": "18C."})
    thread.save()
    pipeline.checkpointer.save_checkpoint("other", 0, {"x": 1})
    pipeline.checkpointer.close()
    return path


def test_list_shows_threads_and_marks_foreign_checkpoints(saved: Path) -> None:
    """--json lists each thread with step and message count; a non-Thread checkpoint has thread: false."""
    out = ctx("thread", "list", "--pipeline", str(saved), "--json")
    assert out.returncode == 0, out.stderr
    rows = {r["thread_id"]: r for r in json.loads(out.stdout)}
    assert (rows["chat-1"]["step"], rows["chat-1"]["messages"], rows["chat-1"]["thread"]) == (0, 4, True)
    assert rows["other"]["thread"] is False and rows["other"]["messages"] is None


def test_show_prints_messages_and_explains_the_next_build(saved: Path) -> None:
    """show prints the messages (markup shown literally) and the next build's explanation; --json has both."""
    out = ctx("thread", "show", "chat-1", "--pipeline", str(saved))
    assert out.returncode == 0, out.stderr
    assert "Weather in [bold]Paris[/]?" in out.stdout and "get_weather" in out.stdout
    assert "budget by source and zone" in out.stdout
    data = json.loads(ctx("thread", "show", "chat-1", "--pipeline", str(saved), "--json").stdout)
    assert [m["role"] for m in data["messages"]] == ["user", "assistant", "tool", "assistant"]
    assert data["next_build"]["total_tokens"] > 0


def test_export_is_a_transcript_replay_reads(saved: Path, tmp_path: Path) -> None:
    """export writes {"messages": [...]}, and ctx replay replays it."""
    target = tmp_path / "t.json"
    assert ctx("thread", "export", "chat-1", "--pipeline", str(saved), "-o", str(target)).returncode == 0
    assert len(json.loads(target.read_text())["messages"]) == 4
    replayed = ctx("replay", str(target), "--pipeline", str(saved), "--json")
    assert replayed.returncode == 0, replayed.stderr
    assert json.loads(replayed.stdout)["totals"]["calls"] == 2


@pytest.mark.parametrize(("thread_id", "message"), [
    ("nope", "error: no thread 'nope' in"),
    ("other", "error: CheckpointCorrupt: thread 'other' step 0"),
])
def test_bad_thread_exits_1_without_traceback(saved: Path, thread_id: str, message: str) -> None:
    """An unknown or foreign thread exits 1 with one line naming it; no traceback."""
    out = ctx("thread", "show", thread_id, "--pipeline", str(saved))
    assert out.returncode == 1 and message in out.stderr and "Traceback" not in out.stderr


def test_pipeline_without_checkpointer_is_refused(tmp_path: Path) -> None:
    """Threads of a pipeline without a thread store or checkpointer lived only in their process: the command says so."""
    path = tmp_path / "p.yaml"
    path.write_text("version: 1\nproviders:\n  - {type: history}\n")
    out = ctx("thread", "list", "--pipeline", str(path))
    assert out.returncode == 1 and "has no thread store" in out.stderr


class TestViewSteps:
    """A step that took messages back (a session's ``pop_item``) shows without them in every thread command."""

    @pytest.fixture(autouse=True)
    def _autoload(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """CliRunner runs `ctx` in this process with the installed plugins, as a user's `ctx` does (stderr kept apart)."""
        from ctxcore.plugins.host import reset_default_host

        monkeypatch.delenv("CTXCORE_DISABLE_PLUGIN_AUTOLOAD", raising=False)
        reset_default_host()

    @pytest.fixture
    def viewed(self, saved: Path) -> Path:
        """chat-1 of ``saved`` plus step 1: the last answer taken back and replaced, as ``pop_item`` + ``add_items`` write it."""
        from ctxcore_checkpointers import SqliteThreadStore

        store = SqliteThreadStore(saved.parent / "c.db")
        snap = store.read("chat-1")
        replacement = {**snap.messages[3], "id": "new-answer", "content": "It is 18C in Paris."}
        store.append("chat-1", [replacement], expected_step=0,
                     metadata={"format": "ctxcore.threadlog/1", "view": [[0, 3], [4, 5]]})
        store.close()
        return saved

    @staticmethod
    def _cli(*args: str) -> Any:
        from click.testing import CliRunner

        from ctxcore.cli import cli

        return CliRunner().invoke(cli, list(args), env={"COLUMNS": "3000"})

    def test_show_and_export_leave_out_taken_back_messages(self, viewed: Path) -> None:
        """show --json, show --step and export show the step's view: the replaced answer is gone, the replacement is last."""
        shown = json.loads(self._cli("thread", "show", "chat-1", "--pipeline", str(viewed), "--json").output)
        assert [m.get("content") for m in shown["messages"]][-2:] == ["18C", "It is 18C in Paris."]
        assert len(shown["messages"]) == 4
        older = json.loads(self._cli("thread", "show", "chat-1", "--step", "0", "--pipeline", str(viewed), "--json").output)
        assert [m.get("content") for m in older["messages"]][-1] == "18C."
        exported = json.loads(self._cli("thread", "export", "chat-1", "--pipeline", str(viewed)).output)
        assert exported["messages"] == shown["messages"]

    def test_repair_applies_the_view(self, viewed: Path) -> None:
        """show --repair and export --repair read the newest intact step as the thread holds it, view applied."""
        out = self._cli("thread", "export", "chat-1", "--repair", "--pipeline", str(viewed))
        assert out.exit_code == 0, out.output
        contents = [m.get("content") for m in json.loads(out.output)["messages"]]
        assert contents[-1] == "It is 18C in Paris." and "18C." not in contents and len(contents) == 4
        table = self._cli("thread", "show", "chat-1", "--repair", "--pipeline", str(viewed))
        assert "4 messages" in table.output and "It is 18C in Paris." in table.output

    def test_repair_of_a_damaged_view_shows_the_whole_step_and_says_so(self, saved: Path) -> None:
        """A step whose view is not valid ranges: --repair exports all the step's log messages and warns on stderr."""
        from ctxcore_checkpointers import SqliteThreadStore

        store = SqliteThreadStore(saved.parent / "c.db")
        store.append("chat-1", [], expected_step=0, metadata={"format": "ctxcore.threadlog/1", "view": [[3, 1]]})
        store.close()
        result = self._cli("thread", "export", "chat-1", "--repair", "--pipeline", str(saved))
        assert result.exit_code == 0
        assert len(json.loads(result.stdout)["messages"]) == 4
        assert "view is damaged" in result.stderr and "step 1" in result.stderr

    def test_diff_thread_compares_what_each_step_holds(self, viewed: Path) -> None:
        """ctx diff --thread: the taken-back answer is replaced (changed), not kept beside its replacement."""
        out = self._cli("diff", "--pipeline", str(viewed), "--thread", "chat-1", "--json")
        assert out.exit_code == 0, out.output
        d = json.loads(out.stdout)
        assert d["steps"] == [0, 1] and d["entered"] == [] and d["left"] == []
        assert [(c["preview"], c["id_b"]) for c in d["changed"]] == [("18C.", "new-answer")]
