"""Notebook display of a build: ``_repr_html_`` and ``_repr_pretty_`` of :class:`BuiltContext` and :class:`BuildReport`.

The HTML is a fragment with inline ``style`` attributes only: no script, no
``<style>`` element, no external resource, so it renders the same in Jupyter,
VS Code, a notebook on GitHub (which strips scripts) and an exported page,
and it cannot restyle the notebook around it. It shows what ``ctx report``
shows first: the budget bar by fate and source, then one row per message.

Invariant: every piece of message text passes through :func:`html.escape` (and
:mod:`ctxcore.redaction`) before it is placed, so untrusted history can never
become markup. Why here, in the engine: the display belongs to the objects a
user holds, which live in this layer.
"""

from __future__ import annotations

import html
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ctxcore.redaction import redact_text

if TYPE_CHECKING:  # pragma: no cover
    from ctxcore.engine.report import BuildReport, MessageRecord

__all__ = ["report_html", "report_summary", "pretty"]

_FATE_COLORS = {"kept": "#22c55e", "added": "#3b82f6", "compressed": "#f59e0b", "dropped": "#ef4444"}
_PALETTE = ("#6366f1", "#14b8a6", "#a855f7", "#0ea5e9", "#f97316", "#64748b")
_CELL = "padding:3px 8px;border-bottom:1px solid #e2e8f0;text-align:left;vertical-align:top"
_MAX_ROWS = 200  # rows shown per table; the rest are counted (a 10,000-message history stays a readable cell)


def _esc(text: object) -> str:
    return html.escape(redact_text(str(text)), quote=True)


def report_summary(report: BuildReport, messages: int | None = None) -> str:
    """One line: messages, tokens against the budget, drops, compressions and warnings."""
    records = report.records
    kept = sum(1 for r in records if r.position is not None) if messages is None else messages
    dropped = sum(1 for r in records if r.fate == "dropped")
    compressed = sum(1 for r in records if r.fate == "compressed")
    tokens = f"{report.total_tokens:,} tokens"
    if report.budget:
        tokens += f" of {report.budget:,} ({report.total_tokens / report.budget:.0%})"
    parts = [f"{kept} messages", tokens, f"{dropped} dropped", f"{compressed} compressed"]
    if report.warnings:
        parts.append(f"{len(report.warnings)} warning(s)")
    return ", ".join(parts)


def _bar(report: BuildReport, kept: Sequence[MessageRecord]) -> str:
    """The budget bar: sent tokens per source, then tools, then the free part of the budget."""
    per_source: Counter[str] = Counter()
    for r in kept:
        per_source[r.source or "?"] += r.tokens or 0
    if report.tool_tokens:
        per_source["tool schemas"] += report.tool_tokens
    whole = max(report.budget or 0, report.total_tokens, 1)
    segments = []
    for k, (source, tokens) in enumerate(per_source.items()):
        width = 100 * tokens / whole
        if width <= 0:
            continue
        color = _PALETTE[k % len(_PALETTE)]
        segments.append(
            f'<div title="{_esc(source)}: {tokens:,} tokens" style="width:{width:.2f}%;background:{color};'
            f'color:#fff;font-size:11px;overflow:hidden;white-space:nowrap;padding:2px 4px;box-sizing:border-box">'
            f"{_esc(source)}</div>"
        )
    return ('<div style="display:flex;height:20px;border:1px solid #e2e8f0;border-radius:4px;overflow:hidden;'
            f'background:#f1f5f9;margin:6px 0">{"".join(segments)}</div>')


def _row(r: MessageRecord) -> str:
    fate = f'<span style="color:#fff;background:{_FATE_COLORS.get(r.fate, "#64748b")};border-radius:8px;padding:0 6px">' \
           f"{_esc(r.fate)}</span>"
    cells = [
        "" if r.position is None else str(r.position), _esc(r.role), _esc(r.source or ""), _esc(r.zone),
        _esc(r.trust), "" if r.tokens is None else f"{r.tokens:,}", fate, _esc(r.by or ""), _esc(r.preview),
    ]
    return "<tr>" + "".join(f'<td style="{_CELL}">{c}</td>' for c in cells) + "</tr>"


def report_html(report: BuildReport, title: str = "ctxcore build") -> str:
    """The report as a self-contained HTML fragment (what a notebook cell shows)."""
    records = report.records
    kept = [r for r in records if r.position is not None]
    head = "".join(f'<th style="{_CELL};color:#64748b">{h}</th>'
                   for h in ("#", "role", "source", "zone", "trust", "tokens", "fate", "by", "text"))
    rows = "".join(_row(r) for r in records[:_MAX_ROWS])
    more = len(records) - _MAX_ROWS
    if more > 0:
        rows += f'<tr><td colspan="9" style="{_CELL};color:#64748b">… {more:,} more message(s)</td></tr>'
    warnings = "".join(f'<li style="color:#92400e">{_esc(w)}</li>' for w in report.warnings)
    notes = "".join(f'<li style="color:#475569">{_esc(n)}</li>' for n in report.notes)
    listed = f'<ul style="margin:6px 0;padding-left:18px">{warnings}{notes}</ul>' if warnings or notes else ""
    return (
        '<div class="ctxcore-report" style="font-family:system-ui,sans-serif;font-size:13px;color:#0f172a">'
        f"<strong>{_esc(title)}</strong>: {_esc(report_summary(report, len(kept)))}"
        f"{_bar(report, kept)}{listed}"
        '<table style="border-collapse:collapse;width:100%;font-size:12px">'
        f"<thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table></div>"
    )


def pretty(obj: Any, printer: Any, cycle: bool, lines: Sequence[str]) -> None:
    """IPython's ``_repr_pretty_``: the class name and summary, then ``lines`` (one per message)."""
    name = type(obj).__name__
    if cycle:
        printer.text(f"{name}(...)")
        return
    with printer.group(2, f"{name}(", ")"):
        for k, line in enumerate(lines):
            if k:
                printer.breakable()
            printer.text(line)
