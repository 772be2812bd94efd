"""Tests for `ctx memory add|search`, run as real subprocesses against the installed plugins."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest

pytestmark = pytest.mark.integration


def ctx(*args: str, cwd: pathlib.Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run `ctx` (its console entry point) in a clean environment with plugin autoload on."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CTXCORE_")}
    return subprocess.run([sys.executable, "-c", "from ctxcore.cli import main; main()", *args],
                          capture_output=True, text=True, env=env, input=stdin, timeout=120, cwd=cwd)


@pytest.fixture(params=["sqlite", "json"])
def pipeline(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> pathlib.Path:
    """A pipeline whose memory: slot names the store under test, with a path relative to the working directory."""
    path = tmp_path / "agent.yaml"
    suffix = "db" if request.param == "sqlite" else "json"
    path.write_text(f"version: 1\nmemory: {{type: {request.param}, path: .ctx/memory.{suffix}}}\n", encoding="utf-8")
    return path


class TestMemoryCommands:
    def test_add_then_search(self, pipeline: pathlib.Path) -> None:
        """add prints the new id; search finds the memory in the same namespace only."""
        added = ctx("memory", "add", "Priya prefers tabs over spaces", "--pipeline", pipeline.name,
                    "-n", "priya", "--meta", "topic=style", "--meta", "stars=4", cwd=pipeline.parent)
        assert added.returncode == 0, added.stderr
        memory_id = added.stdout.strip()
        found = ctx("memory", "search", "tabs or spaces?", "--pipeline", pipeline.name, "-n", "priya", "--json",
                    cwd=pipeline.parent)
        assert found.returncode == 0, found.stderr
        items = json.loads(found.stdout)
        assert [(i["id"], i["metadata"]) for i in items] == [(memory_id, {"topic": "style", "stars": 4})]
        other = ctx("memory", "search", "tabs", "--pipeline", pipeline.name, "-n", "sam", "--json", cwd=pipeline.parent)
        assert json.loads(other.stdout) == []

    def test_search_text_output_and_filters(self, pipeline: pathlib.Path) -> None:
        """The text form numbers the memories; --filter keeps only matching metadata."""
        for text, kind in (("deploys happen on Tuesday", "rule"), ("deploys were slow last week", "note")):
            assert ctx("memory", "add", text, "--pipeline", pipeline.name, "--meta", f"kind={kind}", cwd=pipeline.parent).returncode == 0
        out = ctx("memory", "search", "deploys", "--pipeline", pipeline.name, "--filter", "kind=rule", cwd=pipeline.parent)
        assert out.returncode == 0, out.stderr
        assert out.stdout.startswith("1. [") and "Tuesday" in out.stdout and "slow" not in out.stdout

    def test_add_reads_stdin_and_replaces_by_id(self, pipeline: pathlib.Path) -> None:
        """'-' reads the text from standard input; --id replaces the memory with that id."""
        for text in ("the office wifi is ctx-guest", "the office wifi is ctx-visitors"):
            result = ctx("memory", "add", "-", "--id", "wifi", "--pipeline", pipeline.name, cwd=pipeline.parent, stdin=text)
            assert result.returncode == 0 and result.stdout.strip() == "wifi"
        found = json.loads(ctx("memory", "search", "office wifi", "--pipeline", pipeline.name, "--json", cwd=pipeline.parent).stdout)
        assert [i["content"] for i in found] == ["the office wifi is ctx-visitors"]


class TestMemoryErrors:
    def test_pipeline_without_memory(self, tmp_path: pathlib.Path) -> None:
        """A pipeline with no memory: step is an error that says what to add."""
        (tmp_path / "p.yaml").write_text("version: 1\n", encoding="utf-8")
        result = ctx("memory", "search", "x", "--pipeline", "p.yaml", cwd=tmp_path)
        assert result.returncode == 1 and "configures no long-term memory" in result.stderr

    def test_unknown_store_names_the_line(self, tmp_path: pathlib.Path) -> None:
        """A misspelt store type is reported with its line and the close name."""
        (tmp_path / "p.yaml").write_text("version: 1\nmemory: {type: sqlit}\n", encoding="utf-8")
        result = ctx("memory", "add", "x", "--pipeline", "p.yaml", cwd=tmp_path)
        assert result.returncode == 1
        assert "p.yaml:2" in result.stderr and "did you mean 'sqlite'" in result.stderr

    def test_bad_input_is_a_clear_error(self, pipeline: pathlib.Path) -> None:
        """A blank text and a bad --meta fail with exit 1 and say what is wrong."""
        blank = ctx("memory", "add", "  ", "--pipeline", pipeline.name, cwd=pipeline.parent)
        assert blank.returncode == 1 and "empty" in blank.stderr
        meta = ctx("memory", "add", "x", "--meta", "novalue", "--pipeline", pipeline.name, cwd=pipeline.parent)
        assert meta.returncode == 1 and "KEY=VALUE" in meta.stderr

    def test_damaged_store_names_the_file(self, pipeline: pathlib.Path) -> None:
        """A store file that is not what the store wrote fails with MemoryCorrupt naming the file."""
        assert ctx("memory", "add", "seed", "--pipeline", pipeline.name, cwd=pipeline.parent).returncode == 0
        store = next(p for p in (pipeline.parent / ".ctx").glob("memory.*") if p.suffix in (".db", ".json"))
        for extra in (".ctx/memory.db-wal", ".ctx/memory.db-shm"):
            (pipeline.parent / extra).unlink(missing_ok=True)
        store.write_bytes(b"garbage, not a memory store" * 50)
        damaged = ctx("memory", "search", "x", "--pipeline", pipeline.name, cwd=pipeline.parent)
        assert damaged.returncode == 1
        assert "MemoryCorrupt" in damaged.stderr and store.name in damaged.stderr
