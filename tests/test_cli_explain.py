"""Tests for `ctx explain` and the budget table of `ctx build --explain` (real subprocesses)."""

from __future__ import annotations

import json

import pytest

from ctxcore.cli.explain import budget_rows, decisions
from ctxcore.engine.report import BuildReport, MessageRecord
from tests.test_cli import ROOT, STATE, ctx

BUDGETING = ROOT / "examples" / "budgeting.yaml"
INTERRUPTED = ROOT / "examples" / "interrupted.json"

pytestmark = pytest.mark.integration


class TestExplainCommand:
    def test_json_rows_and_decisions(self) -> None:
        """--json gives per source/zone rows that add up, and one decision line per step."""
        result = ctx("explain", str(BUDGETING), "--state", str(INTERRUPTED), "--json")
        assert result.returncode == 0, result.stderr
        data = json.loads(result.stdout)
        rows = {(r["source"], r["zone"]): r for r in data["rows"]}
        assert rows[("static_prompt", "protected")]["tokens_in"] == rows[("static_prompt", "protected")]["tokens_out"] > 0
        chat = rows[("chat", "dynamic")]
        assert chat["tokens_out"] < chat["tokens_in"] and chat["units_dropped"] == 3 and chat["compressed"] == 0
        assert data["tool_tokens"] > 0
        assert data["total_tokens"] == sum(r["tokens_out"] for r in data["rows"]) + data["tool_tokens"] + 3
        assert data["total_tokens"] <= data["budget"] == 1000 - 200 - 50
        joined = "\n".join(data["decisions"])
        assert "token_budget dropped 5 message(s) in 3 unit(s)" in joined
        assert "legal_start recovered the earlier user message 'That hung. Just run the tests.'" in joined
        assert "backfilled 1 placeholder" in joined

    def test_table_output(self) -> None:
        """Without --json a table with the budget columns and the decisions is printed on stdout."""
        result = ctx("explain", str(BUDGETING), "--state", str(INTERRUPTED))
        assert result.returncode == 0, result.stderr
        for word in ("tokens in", "tokens out", "units dropped", "compressed", "decisions:", "tool schemas"):
            assert word in result.stdout

    def test_build_explain_includes_the_budget_table(self) -> None:
        """ctx build --explain prints the budget table and decisions on stderr, keeping stdout JSON."""
        result = ctx("build", str(ROOT / "examples" / "coding-agent.yaml"), "--state", str(STATE), "--explain")
        assert result.returncode == 0, result.stderr
        json.loads(result.stdout)
        assert "budget by source and zone" in result.stderr and "legal_start dropped" in result.stderr

    def test_errors_are_clear(self, tmp_path) -> None:
        """A broken current turn exits 1 naming InvalidHistory and the message index."""
        state = tmp_path / "s.json"
        state.write_text(json.dumps({"messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
        ]}))
        result = ctx("explain", str(BUDGETING), "--state", str(state))
        # The index is the position in the assembled request: prompt, history semantics, user, assistant.
        assert result.returncode == 1 and "InvalidHistory: message 3" in result.stderr and "current turn" in result.stderr


def _record(fate: str, tokens: int, role: str = "user", by: str | None = None, unit_start: bool = True) -> MessageRecord:
    return MessageRecord(id=f"{fate}{tokens}", role=role, source="chat", zone="dynamic", trust="trusted", fate=fate,  # type: ignore[arg-type]
                         tokens=tokens, by=by, unit_start=unit_start, preview="p")


def test_rows_count_compressed_and_units() -> None:
    """A compressed record counts as input and in 'compressed'; a tool result dropped with its call is not a unit."""
    report = BuildReport()
    report._records = [
        _record("kept", 10), _record("added", 4), _record("compressed", 30, by="compaction"),
        _record("dropped", 7, role="assistant", by="token_budget"), _record("dropped", 5, role="tool", by="token_budget", unit_start=False),
    ]
    [row] = budget_rows(report)
    assert row == {"source": "chat", "zone": "dynamic", "tokens_in": 52, "tokens_out": 14, "units_dropped": 1, "compressed": 1}
    lines = decisions(report)
    assert lines[0].startswith("token_budget dropped 2 message(s) in 1 unit(s), 12 tokens")
    assert lines[1].startswith("compaction compressed 1 message(s)")
