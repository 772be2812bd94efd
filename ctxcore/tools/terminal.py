"""Human-readable output that behaves like a Unix tool: escaped, terminal-sized, plain in pipes.

Every table and line a ``ctx`` command prints for a person goes through a
console made here, so the rules hold everywhere (docs/cli.md, "Output and
scripting"):

- User text is never markup: the console has markup, emoji codes and
  highlighting off, and :func:`clean` turns control characters (ANSI escape
  sequences, bells, carriage returns, bidi overrides) into visible ``\\x1b``
  style escapes, so text such as ``[/b]`` or ``[tool result]`` prints as it is.
- Width follows the terminal: ``COLUMNS`` when set, else the terminal's size
  (rich's own detection), 80 columns when neither is known.
- When the stream is not a terminal the output is plain: no box drawing and no
  escape codes at all. ``NO_COLOR`` (any non-empty value) removes every style,
  bold and italic included, on a terminal too.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Sequence
from typing import Any, TextIO

from rich import box
from rich.console import Console, RenderableType
from rich.table import Table
from rich.text import Text

__all__ = ["cells", "clean", "is_plain", "make_console", "make_table", "show"]

# C0 controls except tab and newline, DEL, C1 controls, and the bidi embedding/override/isolate marks.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_LINE_BREAKS = re.compile("[\t\n]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def clean(text: str, *, one_line: bool = False) -> str:
    """``text`` with every control character shown as an escape (``\\x1b``), so it cannot drive the terminal.

    With ``one_line`` tabs and newlines are escaped too (``\\t``, ``\\n``), for table cells.
    """
    text = _CONTROL.sub(_escape, text)
    if one_line:
        text = _LINE_BREAKS.sub(lambda m: "\\t" if m.group() == "\t" else "\\n", text)
    return text


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or foreign stream is not a terminal
        return False


def make_console(*, stderr: bool = False, file: TextIO | None = None) -> Console:
    """A console for human-readable output on stdout (or ``stderr``, or ``file``), following the rules above."""
    stream = file if file is not None else (sys.stderr if stderr else sys.stdout)
    tty = _isatty(stream)
    styled = tty and os.environ.get("NO_COLOR", "") == ""
    return (Console if tty else _PlainConsole)(
        file=stream,
        color_system="auto" if styled else None,
        force_terminal=None,
        markup=False,
        emoji=False,
        highlight=False,
        soft_wrap=False,
    )


def is_plain(console: Console) -> bool:
    """Whether ``console`` writes to something other than a terminal (no box drawing there)."""
    return not console.is_terminal


def make_table(console: Console, title: str, columns: Sequence[str], *, right: Sequence[str] = (),
               wrap: Sequence[str] = ()) -> Table:
    """A table with ``columns``: boxed on a terminal, plain space-separated columns elsewhere.

    Columns in ``right`` (numbers) are right-aligned and may wrap their header
    words; of the others only those in ``wrap`` (the long free text: previews,
    errors) wrap to fit the width, the short ones stay on one line.
    """
    if is_plain(console):
        table = Table(title=clean(title, one_line=True), box=None, show_edge=False, pad_edge=False,
                      title_justify="left", header_style="", title_style="")
    else:
        table = Table(title=clean(title, one_line=True), box=box.HEAVY_HEAD)
    for column in columns:
        table.add_column(column, justify="right" if column in right else "left", overflow="fold",
                         no_wrap=column not in wrap and column not in right)
    return table


def show(console: Console, *renderables: RenderableType) -> None:
    """Print ``renderables`` (kept for callers; :func:`make_console` consoles strip line ends themselves)."""
    console.print(*renderables)


class _PlainConsole(Console):
    """A console for pipes and files: every printed line without the padding spaces at its end."""

    def print(self, *objects: Any, **kwargs: Any) -> None:  # noqa: A003 - rich's method name
        with self.capture() as captured:
            super().print(*objects, **kwargs)
        self.file.write("".join(line.rstrip() + "\n" for line in captured.get().splitlines()))
        self.file.flush()


def cells(*values: str) -> list[Text]:
    """Table cells from user strings: cleaned to one line, never read as markup."""
    return [Text(clean(v, one_line=True)) for v in values]
