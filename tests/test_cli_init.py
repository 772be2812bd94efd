"""``ctx init``: the starter files build as they are, and nothing is overwritten by accident.

Every test runs the real ``ctx`` in a subprocess with the installed plugins.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml

from ctxcore.cli.init import MODELINE


def _ctx(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CTXCORE_")}
    return subprocess.run([sys.executable, "-m", "ctxcore", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("preset", ["chat", "react", "skill", "agent"])
def test_init_then_build(tmp_path: Path, preset: str) -> None:
    """The written pipeline and state build with `ctx build` unchanged; the pipeline validates against the written schema."""
    init = _ctx("init", "project", "--preset", preset, cwd=tmp_path)
    assert init.returncode == 0, init.stderr
    project = tmp_path / "project"
    text = (project / "ctxcore.yaml").read_text(encoding="utf-8")
    assert text.splitlines()[0] == MODELINE
    schema = json.loads((project / "ctxcore.schema.json").read_text(encoding="utf-8"))
    assert not list(jsonschema.Draft202012Validator(schema).iter_errors(yaml.safe_load(text)))

    built = _ctx("build", "ctxcore.yaml", "--state", "state.json", cwd=project)
    assert built.returncode == 0, built.stderr
    messages = json.loads(built.stdout)
    assert messages[0]["role"] == "system"
    assert messages[-1]["role"] == "user" and "Which tools can you use?" in str(messages[-1]["content"])
    assert any(m["role"] == "tool" and "parses lists" in m["content"] for m in messages)
    if preset == "react":  # the tools step renders state["tools"]
        assert any("read_file" in str(m["content"]) for m in messages if m["role"] == "system")


def test_init_refuses_to_overwrite(tmp_path: Path) -> None:
    """An existing file is named in the error and left as it was; --force overwrites."""
    (tmp_path / "ctxcore.yaml").write_text("# mine\n", encoding="utf-8")
    refused = _ctx("init", cwd=tmp_path)
    assert refused.returncode == 1
    assert "ctxcore.yaml already exists; pass --force to overwrite" in refused.stderr
    assert (tmp_path / "ctxcore.yaml").read_text(encoding="utf-8") == "# mine\n"
    assert not (tmp_path / "state.json").exists()

    forced = _ctx("init", "--force", cwd=tmp_path)
    assert forced.returncode == 0, forced.stderr
    assert (tmp_path / "ctxcore.yaml").read_text(encoding="utf-8").startswith(MODELINE)


def test_init_unknown_preset(tmp_path: Path) -> None:
    """A misspelt preset is an error that suggests the close name; nothing is written."""
    result = _ctx("init", "--preset", "reactt", cwd=tmp_path)
    assert result.returncode == 1
    assert "did you mean 'react'" in result.stderr
    assert list(tmp_path.iterdir()) == []
