"""Write a benchmark's Markdown into its own section of a docs page.

Every benchmark owns one section of a page, delimited by two HTML comments
that render as nothing::

    <!-- bench:perf:start -->
    ...written by bench/perf.py...
    <!-- bench:perf:end -->

``replace_section`` swaps what lies between the markers of one section and
leaves the rest of the page (prose, other benchmarks' sections) byte for byte
as it was, so several scripts can share one page. ``markdown_table`` renders
rows the same way for every benchmark.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

__all__ = ["markers", "replace_section", "write_section", "markdown_table"]

_NAME = re.compile(r"[A-Za-z0-9_-]+")


def markers(name: str) -> tuple[str, str]:
    """The start and end markers of section ``name`` (``bench:<name>:start`` / ``:end``)."""
    if not _NAME.fullmatch(name):
        raise ValueError(f"section name {name!r}: use letters, digits, '-' or '_'")
    return f"<!-- bench:{name}:start -->", f"<!-- bench:{name}:end -->"


def replace_section(text: str, name: str, body: str) -> str:
    """``text`` with the lines between the markers of section ``name`` replaced by ``body``.

    The markers stay on their own lines; ``body`` is stripped of surrounding
    blank lines and framed by one blank line on each side.

    Raises:
        ValueError: a marker is missing, repeated, or the end comes before the start.
    """
    start, end = markers(name)
    for marker in (start, end):
        count = text.count(marker)
        if count != 1:
            raise ValueError(f"expected the marker {marker!r} exactly once, found it {count} times; add it to the page")
    head, rest = text.split(start, 1)
    if end not in rest:
        raise ValueError(f"the marker {end!r} comes before {start!r}")
    _, tail = rest.split(end, 1)
    return f"{head}{start}\n\n{body.strip(chr(10))}\n\n{end}{tail}"


def write_section(path: str | Path, name: str, body: str) -> None:
    """Replace section ``name`` of the page at ``path`` with ``body`` (see :func:`replace_section`)."""
    page = Path(path)
    try:
        text = page.read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"{page}: cannot read the page for section {name!r}: {exc}") from exc
    try:
        updated = replace_section(text, name, body)
    except ValueError as exc:
        raise ValueError(f"{page}: {exc}") from exc
    page.write_text(updated, encoding="utf-8")


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[object]], align: str | None = None) -> str:
    """A Markdown table; ``align`` holds one of ``l``/``r`` per column (default: all left)."""
    if align is not None and len(align) != len(headers):
        raise ValueError("align needs one letter per column")
    for row in rows:
        if len(row) != len(headers):
            raise ValueError(f"row {list(row)!r} has {len(row)} cells, the table {len(headers)} columns")
    rules = ["---:" if (align and align[i] == "r") else "---" for i in range(len(headers))]
    lines = ["| " + " | ".join(headers) + " |", "| " + " | ".join(rules) + " |"]
    lines += ["| " + " | ".join(str(cell).replace("|", "\\|") for cell in row) + " |" for row in rows]
    return "\n".join(lines)
