"""Tests for the `ctx` CLI, run as a real subprocess against the installed plugins."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

from ctxcore.model.messages import Message
from ctxcore.model.transactions import check_tool_pairing

ROOT = pathlib.Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "coding-agent.yaml"
STATE = ROOT / "examples" / "conversation.json"

pytestmark = pytest.mark.integration


def ctx(*args: str, env: dict[str, str] | None = None, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run `ctx` in a clean environment (autoload on, no CTXCORE_* overrides, 200 columns wide)."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("CTXCORE_")}
    return subprocess.run(
        [sys.executable, "-m", "ctxcore", *args],
        capture_output=True, text=True, env={**base, "COLUMNS": "200", **(env or {})}, input=stdin, timeout=120, cwd=ROOT,
    )


@pytest.fixture
def broken_dist(tmp_path: pathlib.Path) -> dict[str, str]:
    """An installed-looking distribution whose ctxcore entry point raises ImportError."""
    info = tmp_path / "ctxcore_broken-0.0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: ctxcore-broken\nVersion: 0.0.1\n")
    (info / "entry_points.txt").write_text("[ctxcore]\nctxcore-broken = ctxcore_broken_plugin\n")
    (tmp_path / "ctxcore_broken_plugin.py").write_text("import module_that_does_not_exist_anywhere\n")
    return {"PYTHONPATH": str(tmp_path)}


class TestPluginsList:
    def test_json_lists_workspace_plugins_loaded(self) -> None:
        """The three workspace distributions are 'loaded' with their components."""
        result = ctx("plugins", "list", "--json")
        assert result.returncode == 0, result.stderr
        plugins = {p["name"]: p for p in json.loads(result.stdout)}
        for name in ("ctxcore-counters", "ctxcore-filters", "ctxcore-providers"):
            assert plugins[name]["status"] == "loaded"
            assert set(plugins[name]) == {"name", "version", "entry_point", "status", "hooks", "components", "integrations", "error"}
        assert {"static_prompt", "history"} <= set(plugins["ctxcore-providers"]["components"]["provider"])
        assert {"max_messages", "token_budget"} <= set(plugins["ctxcore-filters"]["components"]["filter"])
        assert {"approximate", "tiktoken"} <= set(plugins["ctxcore-counters"]["components"]["counter"])
        assert [p["name"] for p in json.loads(result.stdout)] == sorted(plugins, key=str.lower)

    def test_failing_distribution_is_reported_others_load(self, broken_dist) -> None:
        """A plugin raising ImportError shows as failed with its error; exit stays 0."""
        result = ctx("plugins", "list", "--json", env=broken_dist)
        assert result.returncode == 0, result.stderr
        plugins = {p["name"]: p for p in json.loads(result.stdout)}
        assert plugins["ctxcore-broken"]["status"] == "failed"
        assert plugins["ctxcore-broken"]["error"]["type"] == "ModuleNotFoundError"
        assert "module_that_does_not_exist_anywhere" in plugins["ctxcore-broken"]["error"]["message"]
        assert all(plugins[n]["status"] == "loaded" for n in ("ctxcore-counters", "ctxcore-filters", "ctxcore-providers"))

    def test_strict_env_and_flag_exit_nonzero(self, broken_dist) -> None:
        """CTXCORE_STRICT_PLUGINS=1 or --strict turns a failed plugin into a non-zero exit."""
        strict_env = ctx("plugins", "list", "--json", env={**broken_dist, "CTXCORE_STRICT_PLUGINS": "1"})
        assert strict_env.returncode != 0
        assert "plugin 'ctxcore-broken' 0.0.1 failed to load: ModuleNotFoundError" in strict_env.stderr
        assert ctx("plugins", "list", "--strict", env=broken_dist).returncode == 1

    def test_block_list_and_all(self, broken_dist) -> None:
        """A blocked plugin is hidden unless --all, and is never imported."""
        env = {**broken_dist, "CTXCORE_BLOCK_PLUGINS": "ctxcore-broken", "CTXCORE_STRICT_PLUGINS": "1"}
        hidden = json.loads(ctx("plugins", "list", "--json", env=env).stdout)
        assert "ctxcore-broken" not in {p["name"] for p in hidden}
        shown = {p["name"]: p["status"] for p in json.loads(ctx("plugins", "list", "--json", "--all", env=env).stdout)}
        assert shown["ctxcore-broken"] == "blocked"

    def test_table_output(self) -> None:
        """Without --json a table names each plugin and component."""
        result = ctx("plugins", "list")
        assert result.returncode == 0 and "ctxcore-filters" in result.stdout and "filter:token_budget" in result.stdout


class TestPipelineValidate:
    def test_example_is_valid(self) -> None:
        """The shipped example validates and its components are created."""
        result = ctx("pipeline", "validate", str(EXAMPLE))
        assert result.returncode == 0, result.stderr
        assert result.stdout.startswith("ok: ")

    def test_typo_reports_line_and_suggestion(self, tmp_path) -> None:
        """A misspelled filter type fails with its line number and the close name."""
        bad = tmp_path / "bad.yaml"
        bad.write_text(EXAMPLE.read_text().replace("type: token_budget", "type: tokn_budget"))
        line = next(i for i, text in enumerate(bad.read_text().splitlines(), 1) if "tokn_budget" in text)
        result = ctx("pipeline", "validate", str(bad))
        assert result.returncode == 1
        assert f"bad.yaml:{line}:" in result.stderr
        assert "did you mean 'token_budget'?" in result.stderr


class TestBuild:
    def test_example_build_is_legal_and_within_budget(self) -> None:
        """static_prompt + history, max_messages + token_budget with tiktoken: legal, in budget."""
        result = ctx("build", str(EXAMPLE), "--state", str(STATE))
        assert result.returncode == 0, result.stderr
        out = json.loads(result.stdout)
        assert out[0]["role"] == "system"
        messages = [Message.from_openai(m) for m in out]
        check_tool_pairing(messages)
        from ctxcore_counters import TiktokenCounter

        assert TiktokenCounter("cl100k_base").count_messages(messages) <= 1000 - 200
        source = json.loads(STATE.read_text())["messages"]
        assert len(out) - 1 < len(source), "the example budget should force trimming"
        assert out[-1] == source[-1]

    def test_json_format_and_explain(self) -> None:
        """--format json carries provenance and the report; --explain writes tables to stderr."""
        result = ctx("build", str(EXAMPLE), "--state", str(STATE), "--format", "json", "--explain")
        assert result.returncode == 0, result.stderr
        payload = json.loads(result.stdout)
        assert payload["messages"][0]["source"] == "static_prompt"
        report = payload["report"]
        assert report["budget"] == 800 and report["total_tokens"] <= 800
        dropped = [m for m in report["messages"] if m["fate"] == "dropped"]
        assert dropped and all(m["by"] in ("token_budget", "legal_start") and m["tokens"] > 0 for m in dropped)
        first_turn = next(m for m in payload["messages"] if m["role"] != "system")
        assert first_turn["role"] == "user", "the legal start makes the user speak first"
        assert "by source" in result.stderr and "token_budget" in result.stderr

    def test_budget_exceeded_is_a_clear_error(self, tmp_path) -> None:
        """A system prompt larger than the window exits 1 naming BudgetExceeded."""
        p = tmp_path / "tiny.yaml"
        p.write_text("version: 1\nmodel: {context_window: 20}\nproviders:\n  - {type: static_prompt, text: '" + "word " * 50 + "'}\nfilters: [token_budget]\n")
        result = ctx("build", str(p), "--state", str(STATE))
        assert result.returncode == 1 and "BudgetExceeded" in result.stderr and "pinned prefix" in result.stderr

    def test_bad_state_file(self, tmp_path) -> None:
        """Invalid state JSON is reported with its position."""
        s = tmp_path / "state.json"
        s.write_text('{"messages": [}')
        result = ctx("build", str(EXAMPLE), "--state", str(s))
        assert result.returncode == 1 and "state.json:1:" in result.stderr

    def test_invalid_message_in_state(self, tmp_path) -> None:
        """A malformed message names the provider and the item."""
        s = tmp_path / "state.json"
        s.write_text(json.dumps({"messages": [{"role": "tool", "content": "x"}]}))
        result = ctx("build", str(EXAMPLE), "--state", str(s))
        assert result.returncode == 1
        assert "provider 'chat' failed" in result.stderr and "state['messages'][0]" in result.stderr


class TestCount:
    def test_files_and_total(self, tmp_path) -> None:
        """Token counts per file and a total, with the chosen counter."""
        a, b = tmp_path / "a.txt", tmp_path / "b.txt"
        a.write_text("hello world")
        b.write_text("abcdefgh")
        result = ctx("count", str(a), str(b), "--json")
        assert result.returncode == 0, result.stderr
        data = json.loads(result.stdout)
        assert data["files"][str(a)] == 2 and data["total"] == sum(data["files"].values())
        approx = json.loads(ctx("count", "--counter", "approximate", str(b), "--json").stdout)
        assert approx["files"][str(b)] == 2

    def test_stdin(self) -> None:
        """Without files, standard input is counted."""
        result = ctx("count", stdin="hello world")
        assert result.returncode == 0 and result.stdout.split() == ["2", "<stdin>"]

    def test_unknown_counter(self) -> None:
        """A misspelled counter suggests the right one."""
        result = ctx("count", "--counter", "tiktokn", stdin="x")
        assert result.returncode == 1 and "did you mean 'tiktoken'" in result.stderr


def test_plugin_commands_are_added(tmp_path) -> None:
    """register_commands lets a plugin add a `ctx` subcommand."""
    info = tmp_path / "ctxcore_hello-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: ctxcore-hello\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[ctxcore]\nctxcore-hello = ctxcore_hello_plugin\n")
    (tmp_path / "ctxcore_hello_plugin.py").write_text(textwrap.dedent("""
        import click
        from ctxcore import hookimpl

        @hookimpl
        def register_commands(cli):
            @cli.command()
            def hello():
                "Say hello."
                click.echo("hello from a plugin")
    """))
    result = ctx("hello", env={"PYTHONPATH": str(tmp_path)})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "hello from a plugin"
    assert "hello" in ctx("--help", env={"PYTHONPATH": str(tmp_path)}).stdout


def test_broken_register_commands_does_not_break_ctx(tmp_path) -> None:
    """A plugin whose register_commands raises is reported; built-in commands still run."""
    info = tmp_path / "ctxcore_badcmd-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: ctxcore-badcmd\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[ctxcore]\nctxcore-badcmd = ctxcore_badcmd_plugin\n")
    (tmp_path / "ctxcore_badcmd_plugin.py").write_text(
        "from ctxcore import hookimpl\n\n@hookimpl\ndef register_commands(cli):\n    raise RuntimeError('bad command table')\n"
    )
    result = ctx("--help", env={"PYTHONPATH": str(tmp_path)})
    assert result.returncode == 0 and "build" in result.stdout
    assert "plugin 'ctxcore-badcmd' failed in register_commands: RuntimeError: bad command table" in result.stderr
