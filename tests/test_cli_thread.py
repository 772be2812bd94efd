"""``ctx thread list|show|export``: a real sqlite checkpointer, the real command in a subprocess."""

from __future__ import annotations

import json
from pathlib import Path

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
