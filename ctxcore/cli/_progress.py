"""Progress bars of long ``ctx`` commands: on stderr, only on a terminal, never with ``--quiet``.

``ctx replay``, ``ctx thread export`` and ``ctx thread migrate`` report their
progress through :func:`progress_bar`, which draws a transient rich bar on
stderr when stderr is a terminal and ``ctx --quiet`` (``CTXCORE_QUIET=1``) is
not given, and does nothing at all otherwise (rich is imported only to draw).

Invariant: stdout never carries a bar, so ``ctx replay --json | jq`` and
``ctx thread export > t.json`` stay clean. Why: a 2,000-message replay takes
seconds, and a silent terminal for that long looks like a hang.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import click

from ctxcore.tools.terminal import make_console

__all__ = ["Advance", "progress_bar", "progress_wanted"]

Advance = Callable[[int, int], None]
"""``advance(done, total)``: how far the work is."""


def progress_wanted(ctx: click.Context) -> bool:
    """Whether to draw a bar: stderr is a terminal and the root ``--quiet`` is off."""
    return not ctx.find_root().params.get("quiet") and sys.stderr.isatty()


def _ignore(done: int, total: int) -> None:
    return None


@contextmanager
def progress_bar(ctx: click.Context, label: str, total: int, *, enabled: bool = True) -> Iterator[Advance]:
    """A transient bar labelled ``label`` on stderr while the block runs; yields ``advance(done, total)``.

    ``enabled=False`` (e.g. a command's own ``--json``) turns it off as
    :func:`progress_wanted` does; the yielded function then does nothing.
    """
    if not (enabled and progress_wanted(ctx)):
        yield _ignore
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    with Progress(TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                  console=make_console(stderr=True), transient=True) as progress:
        task = progress.add_task(label, total=total)

        def advance(done: int, new_total: int) -> None:
            progress.update(task, completed=done, total=new_total)

        yield advance
