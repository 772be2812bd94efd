"""The README reads on an 80-column terminal and stays short enough to read through."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
TEXT = README.read_text(encoding="utf-8")


def test_at_most_200_lines_of_at_most_80_columns() -> None:
    """The README has at most 200 lines, and none is wider than 80 columns (prose, tables, code and samples)."""
    lines = TEXT.splitlines()
    assert len(lines) <= 200
    assert [(n, len(line)) for n, line in enumerate(lines, 1) if len(line) > 80] == []


def test_a_newcomer_finds_what_to_type() -> None:
    """The README shows the install line, the two make commands, a picture, a pipeline and a thread loop."""
    assert 'pip install "ctxcore-llm[standard]"' in TEXT
    assert "make demo\nmake test\n" in TEXT
    assert re.search(r"!\[[^\]]+\]\(docs/img/[^)]+\.png\)", TEXT)
    assert "```yaml\nversion: 1\n" in TEXT and "def chat(client, pipeline, thread_id" in TEXT


@pytest.mark.integration
def test_the_build_example_prints_what_the_readme_shows() -> None:
    """The Python build example, run from the repository root, prints exactly the sample that follows it."""
    found = re.search(r"```python\n(?P<code>[^`]*?print\(len\(built\.messages\)[^`]*?)```\n\n```\n(?P<out>[^`]*?)```", TEXT)
    assert found, "the README's build example and its printed sample"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CTX_", "CTXCORE_"))}
    run = subprocess.run([sys.executable, "-c", found["code"]], check=False, cwd=README.parent, env=env,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout == found["out"]
