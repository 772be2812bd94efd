"""A new user's mistakes on the `ctx` command line: each one gets a clear error, never a traceback or a hang.

Every test runs `ctx` as a real subprocess (like tests/test_cli.py) and checks
the exit status and that the message names the file/component and the fix.
"""

from __future__ import annotations

import json
import os
import pathlib
import socket
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "coding-agent.yaml"

pytestmark = pytest.mark.integration


def ctx(*args: str, cwd: pathlib.Path = ROOT, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run `ctx` in a clean environment (no CTXCORE_* overrides)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CTXCORE_")}
    return subprocess.run(
        [sys.executable, "-m", "ctxcore", *args],
        capture_output=True, text=True, env=env, timeout=timeout, cwd=cwd,
    )


def closed_port() -> int:
    """A local TCP port nobody listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize("command", ["build", "explain"])
def test_state_tools_not_a_list_names_the_state_file(tmp_path: pathlib.Path, command: str) -> None:
    """`"tools": "read_file"` in the state is reported against the state file, not as a ValueError traceback."""
    state = tmp_path / "state.json"
    state.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"}], "tools": "read_file"}))
    result = ctx(command, str(EXAMPLE), "--state", str(state))
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert f"{state}: 'tools' must be a list of tool definitions (JSON objects)" in result.stderr


@pytest.mark.parametrize(("slot", "args"), [
    ("checkpointer", ("checkpoint", "list")),
    ("memory", ("memory", "add", "hello")),
    ("memory", ("memory", "search", "hello")),
])
def test_unreachable_postgres_fails_fast_with_the_reason(tmp_path: pathlib.Path, slot: str, args: tuple[str, ...]) -> None:
    """A DSN pointing at a closed port fails at once (not after the 30 s pool timeout) naming the dsn to check."""
    pipeline = tmp_path / "p.yaml"
    pipeline.write_text(
        f"version: 1\nproviders: [history]\n{slot}: {{type: postgres, dsn: 'postgresql://u@127.0.0.1:{closed_port()}/db'}}\n"
    )
    result = ctx(*args, "--pipeline", str(pipeline), timeout=20)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert "cannot connect to PostgreSQL" in result.stderr
    assert "Connection refused" in result.stderr
    assert "dsn" in result.stderr
    assert "error connecting in" not in result.stderr  # no retry log spam from the pool


def test_budget_hint_unknown_placeholder_is_located(tmp_path: pathlib.Path) -> None:
    """A misspelt placeholder in budget_hint's template is a located config problem naming the valid ones."""
    pipeline = tmp_path / "p.yaml"
    pipeline.write_text("version: 1\nproviders: [history]\nfilters:\n  - {type: budget_hint, template: '{totl} left'}\n")
    result = ctx("pipeline", "validate", str(pipeline))
    assert result.returncode == 1
    assert "KeyError" not in result.stderr
    line = next(ln for ln in result.stderr.splitlines() if "filters[0].template" in ln)
    assert line.startswith(f"{pipeline}:4:")
    assert "'{totl}'" in line and "{total}, {used}, {remaining}, {pressure}" in line


def test_counters_compare_named_counter_that_cannot_be_created_exits_1(tmp_path: pathlib.Path) -> None:
    """`--counter tiktoken:nope` names a counter explicitly: failing to create it is an error, not an empty table."""
    text = tmp_path / "t.txt"
    text.write_text("hello world")
    result = ctx("counters", "compare", str(text), "--counter", "tiktoken:nope")
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert "tiktoken:nope" in result.stderr and "cl100k_base" in result.stderr
    assert "name it with --counter" not in result.stderr  # the user did; that hint is for defaults only


def test_json_memory_in_a_path_that_cannot_be_created_names_the_store(tmp_path: pathlib.Path) -> None:
    """A json memory path under a regular file fails naming the store, the path and the fix."""
    (tmp_path / "file.txt").write_text("x")
    pipeline = tmp_path / "p.yaml"
    pipeline.write_text("version: 1\nproviders: [history]\nmemory: {type: json, path: file.txt/sub/m.json}\n")
    result = ctx("memory", "add", "hello", "--pipeline", str(pipeline), cwd=tmp_path)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert "memory 'json'" in result.stderr
    assert "file.txt/sub/m.json" in result.stderr
    assert "path" in result.stderr.split("file.txt/sub/m.json", 1)[1]


@pytest.mark.parametrize(("kind", "path"), [
    ("sqlite", "file.txt/sub/c.db"),  # its directory cannot be created
    ("sqlite", "adir"),  # a directory, not a database file
    ("jsonl", "file.txt/sub"),
])
def test_checkpointer_path_that_cannot_be_used_names_the_pipeline(tmp_path: pathlib.Path, kind: str, path: str) -> None:
    """A checkpointer path under a regular file (or a directory for sqlite) exits 1 with the fix, no traceback."""
    (tmp_path / "file.txt").write_text("x")
    (tmp_path / "adir").mkdir()
    pipeline = tmp_path / "p.yaml"
    pipeline.write_text(f"version: 1\nproviders: [history]\ncheckpointer: {{type: {kind}, path: {path}}}\n")
    for args in (("list",), ("show", "t1"), ("prune", "--all", "--keep-last", "1")):
        result = ctx("checkpoint", *args, "--pipeline", "p.yaml", cwd=tmp_path)
        assert result.returncode == 1, (args, result.stderr)
        assert "Traceback" not in result.stderr
        assert f"checkpointer '{kind}' of p.yaml" in result.stderr and "'path'" in result.stderr


def test_memory_recall_without_a_memory_slot_fails_validation(tmp_path: pathlib.Path) -> None:
    """`ctx pipeline validate` catches memory_recall in a pipeline with no `memory:` (not only the first build)."""
    pipeline = tmp_path / "p.yaml"
    pipeline.write_text("version: 1\nproviders:\n  - {type: memory_recall}\n  - history\n")
    result = ctx("pipeline", "validate", str(pipeline))
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    line = next(ln for ln in result.stderr.splitlines() if "memory_recall" in ln)
    assert line.startswith(f"{pipeline}:3:") and "add a 'memory:' step" in line
    pipeline.write_text("version: 1\nproviders:\n  - {type: memory_recall}\n  - history\nmemory: {type: json, path: m.json}\n")
    assert ctx("pipeline", "validate", str(pipeline), cwd=tmp_path).returncode == 0
