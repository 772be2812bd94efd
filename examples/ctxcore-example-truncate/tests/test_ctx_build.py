"""The example pipeline, run by ``ctx`` as a user would, with the plugin installed (found by its entry point)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parents[1]
CONVERSATION = HERE.parent / "conversation.json"  # examples/conversation.json, shared with the other examples
MARKER = "\n[... truncated]"

pytestmark = pytest.mark.integration


def ctx(*args: str) -> subprocess.CompletedProcess[str]:
    """Run ``ctx`` in a subprocess without this environment's CTXCORE_* settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CTXCORE_")}
    return subprocess.run([sys.executable, "-m", "ctxcore", *args], capture_output=True, text=True, env=env,
                          timeout=120, cwd=HERE)


class TestCtxBuild:
    def test_long_tool_results_are_sent_shortened(self) -> None:
        """The two tool results over 200 characters go out cut and marked; the short ones as they were."""
        done = ctx("build", str(HERE / "pipeline.yaml"), "--state", str(CONVERSATION), "--format", "json")
        assert done.returncode == 0, done.stderr
        given = [m["content"] for m in json.loads(CONVERSATION.read_text())["messages"] if m["role"] == "tool"]
        sent = [m["content"] for m in json.loads(done.stdout)["messages"] if m["role"] == "tool"]
        assert sum(len(c) > 200 for c in given) == 2
        assert sent == [c if len(c) <= 200 else c[:200] + MARKER for c in given]

    def test_the_report_lists_each_replacement(self) -> None:
        """Each shortened result is one compression by the step, and --explain names it."""
        done = ctx("build", str(HERE / "pipeline.yaml"), "--state", str(CONVERSATION), "--format", "json", "--explain")
        assert done.returncode == 0, done.stderr
        compressions = json.loads(done.stdout)["report"]["compressions"]
        assert [(c["step_id"], c["stage"]) for c in compressions] == [("truncate_tool_results", "truncate")] * 2
        assert all(c["tokens_after"] < c["tokens_before"] for c in compressions)
        assert "truncate_tool_results compressed 2 message(s)" in done.stderr

    def test_a_misspelt_option_names_the_key(self, tmp_path: Path) -> None:
        """`ctx pipeline validate` refuses max_char and suggests max_chars."""
        pipeline = tmp_path / "typo.yaml"
        pipeline.write_text((HERE / "pipeline.yaml").read_text().replace("max_chars:", "max_char:"))
        done = ctx("pipeline", "validate", str(pipeline))
        assert done.returncode != 0
        assert "unknown key 'max_char' for filter 'truncate_tool_results' — did you mean 'max_chars'?" in done.stderr
