"""Render a BuildReport as tables (``ctx build --explain``), through :mod:`ctxcore.tools.terminal`.

A replacement (a compacted result, a trim marker) shows in the ``by`` column the step and stage that made it
with the tokens before and after; a replaced original points to its replacement's position.
"""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from ctxcore.engine.report import BuildReport
from ctxcore.tools.terminal import cells, clean, make_console, make_table, show

__all__ = ["print_report"]


def _tokens(value: int | None) -> str:
    return "—" if value is None else str(value)


def print_report(report: BuildReport, console: Console | None = None) -> None:
    """Print the per-message fates, per-source totals, timings and warnings (stderr unless ``console``)."""
    console = console or make_console(stderr=True)
    messages = make_table(console, "messages (output order, then dropped)",
                          ("#", "role", "source", "zone", "tokens", "fate", "by", "preview"), right=("#", "tokens"),
                          wrap=("source", "by", "preview"))
    made = {c.new_id: c for c in report.compressions}
    position = {r.id: r.position for r in report.records}
    for r in report.records:
        by = r.by or ""
        c = made.get(r.id)
        if c is not None:  # a replacement: what it replaced, tokens before and after
            by = f"{c.step_id} {c.stage}: {c.tokens_before}→{c.tokens_after} tokens"
        elif r.into is not None:
            into = position.get(r.into)
            by = f"{by} {r.stage or ''} → #{into}".replace("  ", " ") if into is not None else by
        messages.add_row(*cells(
            "" if r.position is None else str(r.position), r.role, r.source or "", r.zone,
            _tokens(r.tokens), r.fate, by, r.preview,
        ))
    show(console, messages)

    sources = make_table(console, "by source", ("source", "kept", "kept tokens", "dropped", "dropped tokens"),
                         right=("kept", "kept tokens", "dropped", "dropped tokens"))
    for name, t in report.totals_by("source").items():
        sources.add_row(*cells(name, str(t["kept"]), str(t["kept_tokens"]), str(t["dropped"]), str(t["dropped_tokens"])))
    show(console, sources)

    timings = make_table(console, "components", ("component", "kind", "in", "out", "ms", "note"), right=("in", "out", "ms"))
    for timing in report.timings:
        timings.add_row(*cells(
            timing.id, timing.kind, str(timing.messages_in), str(timing.messages_out),
            f"{timing.seconds * 1000:.2f}", "skipped" if timing.skipped else "",
        ))
    show(console, timings)

    if report.budget:
        console.print(
            f"total {report.total_tokens} tokens of a {report.budget}-token input budget "
            f"({report.utilization:.1%}); count cache {report.cache_hits} hits / {report.cache_misses} misses"
        )
    else:
        console.print(f"total {report.total_tokens} tokens (no budget set)")
    for warning in report.warnings:
        console.print(Text.assemble(("warning:", "yellow"), " ", clean(warning)))
