"""Progress bars of long commands: drawn on stderr when it is a terminal (a real pseudo-terminal here), never in a
pipe and never with ``ctx --quiet``; stdout stays clean either way.

The real ``ctx`` runs in a subprocess: its stderr is a pipe, or the slave end of a pty whose master the test reads.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.pty_run import ROOT, clean_env, run_on_terminal
from tests.test_cli_thread import saved  # noqa: F401  (the fixture: a sqlite thread store with thread chat-1)

PIPELINE = """\
version: 1
name: progress
model: {context_window: 4000, reserve_output_tokens: 200}
counter: approximate
providers:
  - {type: static_prompt, text: You are terse.}
  - {type: history}
filters:
  - token_budget
"""


def _env() -> dict[str, str]:
    return clean_env()


def _run_on_terminal(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """Run ctx with stderr on a pseudo-terminal; return (exit code, stdout, everything the terminal got)."""
    return run_on_terminal([sys.executable, "-m", "ctxcore", *args], env=env)


@pytest.fixture
def session(tmp_path: Path) -> tuple[Path, Path]:
    """A pipeline file and a 120-call transcript."""
    pipeline = tmp_path / "p.yaml"
    pipeline.write_text(PIPELINE)
    messages = []
    for i in range(120):
        messages += [{"role": "user", "content": f"question {i} " + "word " * 20},
                     {"role": "assistant", "content": f"answer {i} " + "word " * 20}]
    transcript = tmp_path / "t.json"
    transcript.write_text(json.dumps({"messages": messages}))
    return pipeline, transcript


class TestReplay:
    def test_a_terminal_gets_a_bar_and_stdout_stays_clean(self, session: tuple[Path, Path]) -> None:
        """On a terminal ``ctx replay --json`` draws nothing (scripts), plain ``ctx replay`` draws the bar on stderr."""
        pipeline, transcript = session
        code, out, terminal = _run_on_terminal("replay", str(transcript), "--pipeline", str(pipeline))
        assert code == 0, terminal
        assert "replaying" in terminal and "/120" in terminal
        assert "replaying" not in out
        assert "totals: 120 calls" in out

    def test_a_pipe_gets_no_bar(self, session: tuple[Path, Path]) -> None:
        """With stderr a pipe (CI, redirection) nothing about progress is written."""
        pipeline, transcript = session
        done = subprocess.run([sys.executable, "-m", "ctxcore", "replay", str(transcript), "--pipeline", str(pipeline)],
                              capture_output=True, text=True, env=_env(), cwd=ROOT, timeout=120)
        assert done.returncode == 0, done.stderr
        assert "replaying" not in done.stderr and "\x1b" not in done.stderr
        assert "totals: 120 calls" in done.stdout

    def test_quiet_silences_the_bar_on_a_terminal(self, session: tuple[Path, Path]) -> None:
        """``ctx --quiet`` (or CTXCORE_QUIET=1) draws no bar even on a terminal."""
        pipeline, transcript = session
        code, out, terminal = _run_on_terminal("--quiet", "replay", str(transcript), "--pipeline", str(pipeline))
        assert code == 0 and "replaying" not in terminal and "totals: 120 calls" in out
        code, out, terminal = _run_on_terminal("replay", str(transcript), "--pipeline", str(pipeline),
                                               env={**_env(), "CTXCORE_QUIET": "1"})
        assert code == 0 and "replaying" not in terminal

    def test_the_html_page_shows_progress_too(self, session: tuple[Path, Path], tmp_path: Path) -> None:
        """``ctx replay --html`` replays with the same bar on a terminal."""
        pipeline, transcript = session
        page = tmp_path / "r.html"
        code, _, terminal = _run_on_terminal("replay", str(transcript), "--pipeline", str(pipeline), "--html", str(page))
        assert code == 0, terminal
        assert "replaying" in terminal and page.exists()


def test_thread_export_shows_progress_only_on_a_terminal(saved: Path, tmp_path: Path) -> None:  # noqa: F811
    """``ctx thread export`` draws its bar on a terminal; the exported JSON on stdout is untouched."""
    code, out, terminal = _run_on_terminal("thread", "export", "chat-1", "--pipeline", str(saved))
    assert code == 0, terminal
    assert "exporting" in terminal
    assert [m["role"] for m in json.loads(out)["messages"]] == ["user", "assistant", "tool", "assistant"]
    done = subprocess.run([sys.executable, "-m", "ctxcore", "thread", "export", "chat-1", "--pipeline", str(saved)],
                          capture_output=True, text=True, env=_env(), cwd=ROOT, timeout=120)
    assert done.returncode == 0 and "exporting" not in done.stderr and json.loads(done.stdout)["messages"]


def test_thread_migrate_shows_progress_on_a_terminal(saved: Path) -> None:  # noqa: F811
    """``ctx thread migrate`` draws its bar over the stored threads on a terminal, and its summary on stdout."""
    code, out, terminal = _run_on_terminal("thread", "migrate", "--pipeline", str(saved))
    assert code == 0, terminal
    assert "migrating" in terminal
    assert "thread(s) converted" in out


class TestBenchScripts:
    """The long bench scripts draw the same kind of bar on a terminal, and nothing in a pipe or with ``--quiet``."""

    CASES = {
        "retention": (["bench/retention.py", "--quick", "--cases", "2"], "retention", "Next-turn build"),
        "caching_rules": (["bench/caching_rules.py", "--quick", "--messages", "60"], "caching rules", "input tokens"),
    }

    @pytest.mark.parametrize("name", sorted(CASES))
    def test_a_terminal_gets_a_bar_and_stdout_keeps_the_tables(self, name: str) -> None:
        """On a terminal the bar is drawn on stderr; the tables on stdout carry no escape code."""
        argv, label, table = self.CASES[name]
        code, out, terminal = run_on_terminal([sys.executable, *argv])
        assert code == 0, terminal
        assert label in terminal and "━" in terminal
        assert table in out and "\x1b" not in out

    @pytest.mark.parametrize("name", sorted(CASES))
    def test_quiet_or_a_pipe_gets_no_bar(self, name: str) -> None:
        """``--quiet`` on a terminal, or stderr in a pipe: nothing about progress is written."""
        argv, label, table = self.CASES[name]
        code, out, terminal = run_on_terminal([sys.executable, *argv, "--quiet"])
        assert code == 0 and "━" not in terminal and table in out
        # the label is the bar's: it shows only in a notice of a row not measured here (a bench package missing)
        assert all(line.startswith(f"{label}: row ") for line in terminal.splitlines() if label in line), terminal
        done = subprocess.run([sys.executable, *argv], capture_output=True, text=True, env=_env(), cwd=ROOT, timeout=300)
        assert done.returncode == 0 and "━" not in done.stderr and "\x1b" not in done.stderr
