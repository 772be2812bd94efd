"""End to end: a YAML pipeline whose `memory:` slot names the embedded sqlite store
feeds the `memory_recall` provider, which recalls what `ctx memory add` stored.

Real parts only: the sqlite store file, the installed plugins, the `ctx` CLI in a
subprocess for the write, and a real build for the read.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import ctxcore_counters.plugin
import ctxcore_filters.plugin
import ctxcore_memory.plugin
import ctxcore_providers.plugin

from ctxcore.pipeline.spec import Pipeline
from ctxcore.testing import fresh_host

PIPELINE = """\
version: 1
model: {{context_window: 4000, reserve_output_tokens: 500}}
counter: approximate
memory: {{type: sqlite, path: {db}}}
providers:
  - {{type: static_prompt, text: "You are a helpful assistant."}}
  - {{type: memory_recall, limit: 3}}
  - history
filters:
  - token_budget
"""


def _host():
    return fresh_host(
        ("ctxcore-providers", ctxcore_providers.plugin),
        ("ctxcore-filters", ctxcore_filters.plugin),
        ("ctxcore-counters", ctxcore_counters.plugin),
        ("ctxcore-memory", ctxcore_memory.plugin),
    )


def _ctx(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ctxcore", *args], capture_output=True, text=True, cwd=cwd, timeout=120,
        env={"PATH": "/usr/bin:/bin", "CTXCORE_PLUGINS": ""},
    )


def test_memories_added_by_the_cli_are_recalled_into_the_build(tmp_path: Path) -> None:
    """`ctx memory add` writes the sqlite file; a build of the same pipeline recalls the relevant memory, untrusted."""
    pipeline_file = tmp_path / "agent.yaml"
    pipeline_file.write_text(PIPELINE.format(db=json.dumps(str(tmp_path / "memory.db"))))
    for text in ("The user prefers tabs over spaces in Python code.", "The user's cat is called Miso.",
                 "Deployments go out on Tuesdays after the standup."):
        added = _ctx("memory", "add", text, "--pipeline", str(pipeline_file), cwd=tmp_path)
        assert added.returncode == 0, added.stderr

    pipeline = Pipeline.from_yaml(pipeline_file, host=_host())
    state = {"messages": [{"role": "user", "content": "What is my cat called?"}]}
    built = pipeline.build(state)

    recalled = [m for m in built.messages if m.source == "memory_recall"]
    assert len(recalled) == 1
    block = recalled[0]
    assert "Miso" in block.text
    assert block.role != "system" and block.trust == "untrusted"  # recalled data never speaks as the system
    assert built.messages[-1].text == "What is my cat called?"


def test_nothing_relevant_recalls_nothing(tmp_path: Path) -> None:
    """An empty store gives no recall message, and the build still succeeds."""
    pipeline_file = tmp_path / "agent.yaml"
    pipeline_file.write_text(PIPELINE.format(db=json.dumps(str(tmp_path / "memory.db"))))
    built = Pipeline.from_yaml(pipeline_file, host=_host()).build({"messages": [{"role": "user", "content": "hello"}]})
    assert not [m for m in built.messages if m.source == "memory_recall"]
