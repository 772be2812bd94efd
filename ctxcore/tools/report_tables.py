"""Render a BuildReport as rich tables (``ctx build --explain``).

A replacement (a compacted result, a trim marker) shows in the ``by`` column the step and stage that made it
with the tokens before and after; a replaced original points to its replacement's position.
"""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from ctxcore.engine.report import BuildReport

__all__ = ["print_report"]


def _tokens(value: int | None) -> str:
    return "—" if value is None else str(value)


def print_report(report: BuildReport, console: Console | None = None) -> None:
    """Print the per-message fates, per-source totals, timings and warnings."""
    console = console or Console(stderr=True, width=140)
    messages = Table(title="messages (output order, then dropped)")
    for column in ("#", "role", "source", "zone", "tokens", "fate", "by", "preview"):
        messages.add_column(column, justify="right" if column in ("#", "tokens") else "left")
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
        messages.add_row(
            "" if r.position is None else str(r.position), r.role, r.source or "", r.zone,
            _tokens(r.tokens), r.fate, by, r.preview,
        )
    console.print(messages)

    sources = Table(title="by source")
    for column in ("source", "kept", "kept tokens", "dropped", "dropped tokens"):
        sources.add_column(column, justify="left" if column == "source" else "right")
    for name, t in report.totals_by("source").items():
        sources.add_row(name, str(t["kept"]), str(t["kept_tokens"]), str(t["dropped"]), str(t["dropped_tokens"]))
    console.print(sources)

    timings = Table(title="components")
    for column in ("component", "kind", "in", "out", "ms", "note"):
        timings.add_column(column, justify="right" if column in ("in", "out", "ms") else "left")
    for timing in report.timings:
        timings.add_row(
            timing.id, timing.kind, str(timing.messages_in), str(timing.messages_out),
            f"{timing.seconds * 1000:.2f}", "skipped" if timing.skipped else "",
        )
    console.print(timings)

    if report.budget:
        console.print(
            f"total {report.total_tokens} tokens of a {report.budget}-token input budget "
            f"({report.utilization:.1%}); count cache {report.cache_hits} hits / {report.cache_misses} misses"
        )
    else:
        console.print(f"total {report.total_tokens} tokens (no budget set)")
    for warning in report.warnings:
        console.print(f"[yellow]warning:[/yellow] {warning}")
