"""CI smoke of bench/thread_growth.py: every side saves and reopens the whole conversation; the tables render."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import thread_growth as tg  # noqa: E402
from report_table import replace_section  # noqa: E402


def test_quick_run_reopens_every_message_on_every_side() -> None:
    """At small sizes each embedded store reopens exactly the saved messages (the run checks it) and the tables render."""
    data = tg.run((8, 16), "pytest smoke", everything=False)
    rows = data["rows"]
    assert set(rows) == {"ctxcore memory", "ctxcore sqlite", "ctxcore jsonl"}
    sqlite = rows["ctxcore sqlite"][16]
    assert sqlite["json_bytes"] > 16 * 400 and sqlite["size_bytes"] > 0
    table = tg.markdown(data)
    assert "| ctxcore sqlite |" in table and "save at 16 messages / save at 8 messages, sqlite (wall-clock; CPU in brackets)" in table
    assert replace_section("a\n<!-- bench:thread_growth:start -->\nold\n<!-- bench:thread_growth:end -->\nb", "thread_growth", table).count("ctxcore jsonl") == 1


def test_probe_saves_time_every_size_and_leave_the_store_as_it_was(tmp_path: Path) -> None:
    """Each round probes every size once (a copy at that size, one saved turn, the copy deleted): only the measured thread stays."""
    side = tg.CtxSide("ctxcore sqlite", f"{{type: sqlite, path: {tmp_path / 'c.db'}}}", tg._host(), tmp_path / "c.db")
    try:
        for i in range(4):
            side.save_turn(i)
            side.reached(4 * (i + 1))
        times = tg.probe_saves(side, (4, 16), rounds=3)
        assert {size: (len(wall), len(cpu)) for size, (wall, cpu) in times.items()} == {4: (3, 3), 16: (3, 3)}
        store = side.pipeline.thread_store()
        assert store.list_threads() == ["bench"] and store.read("bench").record.messages == 16
    finally:
        side.close()


def test_turns_are_the_issue_workload() -> None:
    """A turn is a user message, an assistant tool call, a ~1.5 KB tool result and an answer."""
    user, call, result, answer = tg.turn_items(3)
    assert (user["role"], call["role"], result["role"], answer["role"]) == ("user", "assistant", "tool", "assistant")
    assert call["tool_calls"][0]["id"] == result["tool_call_id"]
    assert 1400 <= len(result["content"]) <= 1700
