"""The README reads on an 80-column terminal and stays short enough to read through."""

from __future__ import annotations

import re
from pathlib import Path

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
