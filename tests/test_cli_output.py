"""The human-readable output of `ctx`: user text escaped, width of the terminal, plain in pipes, NO_COLOR."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import struct
import subprocess
import sys
import termios
import uuid
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from rich.cells import cell_len

from ctxcore import hookimpl
from ctxcore.cli import cli
from ctxcore.testing import fresh_host
from ctxcore.tools.terminal import clean
from tests.pty_run import drain
from tests.test_cli import ROOT, STATE, ctx

BOX = set("─│┌┐└┘├┤┬┴┼━┃┏┓┗┛┡┩╇╭╮╯╰═║╔╗╚╝")
EXAMPLES = int(os.environ.get("CTXCORE_OUTPUT_EXAMPLES", "15"))  # the thorough profile: CTXCORE_OUTPUT_EXAMPLES=300
WIDE = {"COLUMNS": "3000"}

# Markup brackets, control characters and ANSI escapes, wide CJK and emoji, rich's emoji codes.
_PIECES = st.sampled_from(["[/b]", "[/tmp]", "[bold]", "[tool result 3]", "[", "]", "\\", "\x1b[31m", "\x1b]0;t\x07",
                           "\x07", "\r", "\x00", "\x9b", "\u202e", "東京", "界", "🦀", ":smile:", "a", "Z", " ", "=", "'"])
USER_TEXT = st.lists(st.one_of(_PIECES, st.text(max_size=3)), min_size=1, max_size=8).map("".join)


@pytest.fixture(autouse=True)
def _autoload(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests run the installed plugins, as a user's `ctx` does."""
    from ctxcore.plugins.host import reset_default_host

    monkeypatch.delenv("CTXCORE_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    reset_default_host()


def _run(args: list[str], **env: str) -> Any:
    result = CliRunner().invoke(cli, args, env={**WIDE, **env}, catch_exceptions=False)
    return result


def _one_line(text: str) -> str:
    return clean(" ".join(text.split()), one_line=True)


@pytest.fixture(scope="module")
def history_pipeline(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("out") / "history.yaml"
    path.write_text("version: 1\nproviders:\n  - {type: history, id: chat}\nfilters:\n  - {type: max_messages, max_messages: 1}\n")
    return path


def _state(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "state.json"
    messages = [{"role": "user", "content": text}, {"role": "assistant", "content": "ok"},
                {"role": "user", "content": f"again {text}"}]
    path.write_text(json.dumps({"messages": messages}))
    return path


SETTINGS = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.mark.integration
class TestUserTextIsShownVerbatim:
    """Arbitrary text through every human-readable output: no exception, shown as it is, escapes neutralised."""

    @SETTINGS
    @given(text=USER_TEXT)
    def test_build_explain(self, tmp_path: Path, history_pipeline: Path, text: str) -> None:
        """`ctx build --explain` shows a kept message's preview verbatim on stderr."""
        assume(text.split() and len(text) <= 40)
        result = _run(["build", str(history_pipeline), "--state", str(_state(tmp_path, text)), "--explain"])
        assert result.exit_code == 0, result.output
        assert _one_line(f"again {text}") in result.stderr
        assert "\x1b" not in result.stderr and "\x07" not in result.stderr

    @SETTINGS
    @given(text=USER_TEXT)
    def test_explain(self, tmp_path: Path, history_pipeline: Path, text: str) -> None:
        """`ctx explain` names a dropped message by its (escaped) preview."""
        assume(text.split() and len(text) <= 40)
        result = _run(["explain", str(history_pipeline), "--state", str(_state(tmp_path, text))])
        assert result.exit_code == 0, result.output
        assert repr(" ".join(text.split())) in result.stdout
        assert "\x1b" not in result.stdout

    @SETTINGS
    @given(text=USER_TEXT)
    def test_replay(self, tmp_path: Path, history_pipeline: Path, text: str) -> None:
        """`ctx replay` over a transcript holding the text prints its table without a raw control character."""
        transcript = tmp_path / "t.json"
        transcript.write_text(json.dumps([{"role": "user", "content": text}, {"role": "assistant", "content": text}]))
        result = _run(["replay", str(transcript), "--pipeline", str(history_pipeline)])
        assert result.exit_code == 0, result.output
        assert "replay: one row per turn" in result.stdout and "\x1b" not in result.stdout

    @SETTINGS
    @given(text=USER_TEXT)
    def test_checkpoint_show(self, tmp_path: Path, text: str) -> None:
        """`ctx checkpoint show` prints the stored text back exactly (JSON escapes the controls)."""
        from ctxcore import Pipeline

        pipeline = tmp_path / "cp.yaml"
        pipeline.write_text(f"version: 1\nproviders: [{{type: history}}]\ncheckpointer: {{type: jsonl, path: '{tmp_path}/cp'}}\n")
        cp = Pipeline.from_yaml(pipeline).checkpointer
        thread = "t" + uuid.uuid4().hex  # tmp_path is shared by the examples: a new thread each
        cp.save_checkpoint(thread, 1, {"messages": [{"role": "user", "content": text}]})
        result = _run(["checkpoint", "show", thread, "--pipeline", str(pipeline)])
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout)["state_dump"]["messages"][0]["content"] == text
        assert "\x1b" not in result.stdout

    @SETTINGS
    @given(text=USER_TEXT)
    def test_thread_show(self, tmp_path: Path, text: str) -> None:
        """`ctx thread show` prints a stored user turn's preview verbatim, control characters escaped."""
        from ctxcore import Pipeline

        assume(text.split() and len(text) <= 40)
        pipeline = tmp_path / "th.yaml"
        pipeline.write_text(f"version: 1\nproviders: [{{type: history}}]\ncheckpointer: {{type: sqlite, path: '{tmp_path}/t.db'}}\n")
        p = Pipeline.from_yaml(pipeline)
        thread_id = "t" + uuid.uuid4().hex
        t = p.thread(thread_id)
        t.add_user(f"hello {text}")
        t.save()
        p.checkpointer.close()
        result = _run(["thread", "show", thread_id, "--pipeline", str(pipeline)])
        assert result.exit_code == 0, result.output
        assert _one_line(f"hello {text}") in " ".join(result.stdout.split())
        assert "\x1b" not in result.stdout and "\x07" not in result.stdout

    @SETTINGS
    @given(text=USER_TEXT)
    def test_diff(self, tmp_path: Path, history_pipeline: Path, text: str) -> None:
        """`ctx diff` between two states names the entered message by its escaped preview, no raw control character."""
        assume(text.split() and len(text) <= 40)
        a = _state(tmp_path, "first")
        b = tmp_path / "b.json"
        b.write_text(json.dumps({"messages": [{"role": "user", "content": f"later {text}"}]}))
        result = _run(["diff", str(a), str(b), "--pipeline", str(history_pipeline)])
        assert result.exit_code == 0, result.output
        assert "later" in result.stdout and "first difference made by: chat" in result.stdout
        assert "\x1b" not in result.stdout and "\x07" not in result.stdout and "\x00" not in result.stdout

    @SETTINGS
    @given(text=USER_TEXT)
    def test_memory_search(self, tmp_path: Path, text: str) -> None:
        """`ctx memory search` prints a found memory's content verbatim, control characters escaped."""
        assume(text.strip() == text and text)
        pipeline = tmp_path / "mem.yaml"
        pipeline.write_text(f"version: 1\nproviders: [{{type: history}}]\nmemory: {{type: json, path: '{tmp_path}/m.json'}}\n")
        added = _run(["memory", "add", f"needle {text}", "--pipeline", str(pipeline), "--id", "m1"])
        assert added.exit_code == 0, added.output
        result = _run(["memory", "search", "needle", "--pipeline", str(pipeline)])
        assert result.exit_code == 0, result.output
        assert clean(f"needle {text}") in result.stdout and "\x1b" not in result.stdout

    @SETTINGS
    @given(text=USER_TEXT)
    def test_plugins_list(self, monkeypatch: pytest.MonkeyPatch, text: str) -> None:
        """`ctx plugins list` shows a failed plugin's error message verbatim."""

        class Broken:
            @hookimpl
            def register_filters(self, register: Any) -> None:
                raise RuntimeError(text)

        host = fresh_host(("broken", Broken()), strict=False)
        host.registry  # noqa: B018 - runs the hooks, as PluginHost.load does
        monkeypatch.setattr("ctxcore.cli._common.PluginHost.load", lambda *a, **k: host)
        result = _run(["plugins", "list"])
        assert result.exit_code == 0, result.output
        assert " ".join(f"RuntimeError: {clean(text, one_line=True)}".split()) in " ".join(result.stdout.split())
        assert "\x1b" not in result.stdout


@pytest.mark.integration
class TestPlainAndWidth:
    """Pipes get plain text; a terminal's width (COLUMNS or the TTY size) is never exceeded."""

    def test_the_markup_crash_is_gone(self, tmp_path: Path) -> None:
        """A history holding `[/b]` and `[tool result …]` builds with --explain (exit 0) and both are shown."""
        state = tmp_path / "s.json"
        state.write_text(json.dumps({"messages": [{"role": "user", "content": "see [/b] and [/tmp] [tool result 1]"}]}))
        result = ctx("build", str(ROOT / "examples" / "coding-agent.yaml"), "--state", str(state), "--explain")
        assert result.returncode == 0, result.stderr
        assert "see [/b] and [/tmp] [tool result 1]" in result.stderr

    @pytest.mark.parametrize("args", [
        ("plugins", "list"),
        ("build", "examples/coding-agent.yaml", "--state", "examples/conversation.json", "--explain"),
        ("explain", "examples/budgeting.yaml", "--state", "examples/interrupted.json"),
        ("counters", "compare", "bench/corpora/mixed_technical.txt", "--reference", "tiktoken:o200k_base"),
    ])
    def test_piped_output_is_plain_and_fits_80_columns(self, args: tuple[str, ...]) -> None:
        """Into a pipe with COLUMNS=80: no box drawing, no escape codes, no line wider than 80 cells."""
        result = ctx(*args, env={"COLUMNS": "80"})
        assert result.returncode == 0, result.stderr
        text = result.stdout + result.stderr
        assert not BOX & set(text) and "\x1b" not in text
        human = result.stderr if args[0] == "build" else result.stdout + result.stderr  # build's stdout is JSON
        assert max(cell_len(line) for line in human.splitlines()) <= 80

    def _on_tty(self, *args: str, columns: int = 80, **env: str) -> str:
        """Run `ctx` with stdout and stderr on a pseudo-terminal of ``columns`` columns; return what it printed."""
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
        base = {k: v for k, v in os.environ.items() if not k.startswith("CTXCORE_") and k not in ("COLUMNS", "NO_COLOR")}
        proc = subprocess.Popen([sys.executable, "-m", "ctxcore", *args], stdin=subprocess.DEVNULL, stdout=slave,
                                stderr=slave, env={**base, "TERM": "xterm-256color", **env}, cwd=ROOT)
        os.close(slave)
        text = drain(master)
        proc.wait(timeout=120)
        assert proc.returncode == 0
        return text.replace("\r\n", "\n")

    def test_a_terminal_gets_boxes_and_styles_within_its_width(self) -> None:
        """On an 80-column TTY (no COLUMNS): box tables with styles, no line wider than 80 cells."""
        out = self._on_tty("plugins", "list")
        assert BOX & set(out) and "\x1b[" in out
        from rich.text import Text

        assert max(cell_len(Text.from_ansi(line).plain) for line in out.splitlines()) <= 80

    def test_no_color_removes_every_style(self) -> None:
        """NO_COLOR on a terminal: still boxed, but no escape code at all (bold and italic included)."""
        out = self._on_tty("plugins", "list", NO_COLOR="1")
        assert BOX & set(out) and "\x1b" not in out


@pytest.mark.integration
class TestConventions:
    """-h, --format anthropic, and the install hints."""

    def test_h_is_help(self) -> None:
        """`-h` is an alias of `--help` on the root group and on subcommands."""
        assert "Usage: cli build" in _run(["build", "-h"]).output
        assert "-h, --help" in _run(["-h"]).output

    def test_format_anthropic(self) -> None:
        """`ctx build --format anthropic` prints the Messages API body: system blocks and messages."""
        result = ctx("build", "examples/coding-agent.yaml", "--state", str(STATE), "--format", "anthropic")
        assert result.returncode == 0, result.stderr
        body = json.loads(result.stdout)
        assert body["system"] and body["messages"][0]["role"] == "user"
        assert all(m["role"] in ("user", "assistant") for m in body["messages"])

    def test_an_empty_plugin_list_says_what_to_install(self) -> None:
        """With no plugin loaded, `ctx plugins list` names the one-line install."""
        result = ctx("plugins", "list", env={"CTXCORE_DISABLE_PLUGIN_AUTOLOAD": "1"})
        assert result.returncode == 0, result.stderr
        assert 'pip install "ctxcore-llm[standard]"' in result.stdout

    def test_a_missing_first_party_component_names_its_distribution(self) -> None:
        """A pipeline naming a first-party component that is not installed says which distribution provides it."""
        result = ctx("pipeline", "validate", "examples/coding-agent.yaml", env={"CTXCORE_PLUGINS": "ctxcore-providers"})
        assert result.returncode == 1
        assert "provided by ctxcore-filters: pip install \"ctxcore-llm[standard]\"" in result.stderr

    def test_the_first_party_table_matches_the_installed_plugins(self) -> None:
        """ctxcore.plugins.first_party names exactly what each installed first-party plugin registers."""
        from ctxcore.plugins.first_party import FIRST_PARTY
        from ctxcore.plugins.host import PluginHost

        loaded = {p.name: p for p in PluginHost.load().plugins if p.status == "loaded"}
        assert set(FIRST_PARTY) <= set(loaded)
        for distribution, (_, components) in FIRST_PARTY.items():
            got = {k: tuple(sorted(v)) for k, v in loaded[distribution].components.items() if v}
            assert got == {k: tuple(sorted(v)) for k, v in components.items()}, distribution

    def test_errors_escape_control_characters(self, tmp_path: Path) -> None:
        """An error quoting user text (here a file name with an ANSI escape) cannot drive the terminal."""
        result = _run(["build", "examples/coding-agent.yaml", "--state", str(tmp_path / "\x1b[2Jgone.json")])
        assert result.exit_code != 0
        assert "\x1b" not in result.output
