"""Progress of a long bench script: a rich bar on stderr on a terminal, nothing in a pipe or with ``--quiet``.

Invariant: stdout never carries a bar (it carries the tables, which scripts and
``make bench`` logs keep), and nothing at all is written about progress when
stderr is not a terminal. Why: a full bench run takes minutes, and a silent
terminal for that long looks like a hang. The bar follows ``ctx``'s own
(``ctxcore.cli._progress``): transient, label, bar, done/total, time left.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["Advance", "progress_bar"]

Advance = Callable[[int], None]
"""``advance(steps)``: that many more units of work are done."""


def _ignore(steps: int = 1) -> None:
    return None


@contextmanager
def progress_bar(label: str, total: int, *, quiet: bool = False) -> Iterator[Advance]:
    """A transient bar of ``total`` units labelled ``label`` while the block runs; yields ``advance(steps=1)``.

    Draws only when stderr is a terminal and ``quiet`` is false; otherwise the yielded function does
    nothing (rich is imported only to draw).
    """
    if quiet or not sys.stderr.isatty():
        yield _ignore
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    with Progress(TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                  console=Console(stderr=True), transient=True) as progress:
        task = progress.add_task(label, total=total)

        def advance(steps: int = 1) -> None:
            progress.advance(task, steps)

        yield advance
