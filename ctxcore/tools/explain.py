"""The data behind ``ctx explain`` and ``ctx report``: tokens per source and zone, and every decision.

Both commands (and :mod:`ctxcore.tools.html_report`) read a :class:`BuildReport`
through these functions, so the numbers a table prints and the numbers an HTML
page shows come from one place.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

from ctxcore.engine.report import BuildReport, MessageRecord

__all__ = ["budget_rows", "decision_items", "decisions", "explain_payload"]

# Fates whose tokens came into the build / went out in the request. "compressed"
# (an original replaced by a shorter message) counts as input; its replacement
# is an "added" message in the output.
_IN = ("kept", "dropped", "compressed")
_OUT = ("kept", "added")
# Notes start with the step that wrote them: "legal_start recovered ...", "sanitize: ...".
_NOTE_AUTHOR = re.compile(r"^([A-Za-z_][\w.-]*)(?::|\s)")


def budget_rows(report: BuildReport) -> list[dict[str, Any]]:
    """One row per (source, zone): tokens in, tokens out, units dropped, messages compressed."""
    rows: dict[tuple[str, str], dict[str, Any]] = defaultdict(
        lambda: {"tokens_in": 0, "tokens_out": 0, "units_dropped": 0, "compressed": 0}
    )
    for r in report.records:
        row = rows[(r.source or "", r.zone)]
        tokens = r.tokens or 0
        fate = str(r.fate)
        if fate in _IN:
            row["tokens_in"] += tokens
        if fate in _OUT:
            row["tokens_out"] += tokens
        if fate == "dropped" and getattr(r, "unit_start", True):
            row["units_dropped"] += 1
        if fate == "compressed":
            row["compressed"] += 1
    return [{"source": s, "zone": z, **v} for (s, z), v in sorted(rows.items())]


def _describe(records: list[MessageRecord], limit: int = 3) -> str:
    shown = ", ".join(f"{r.role} {r.preview!r}" for r in records[:limit])
    more = len(records) - limit
    return shown + (f", and {more} more" if more > 0 else "")


def decision_items(report: BuildReport) -> list[dict[str, Any]]:
    """Every decision of the build with the step that made it.

    Each item has ``by`` (the filter or step id, ``None`` for a warning without
    one), ``kind`` (``dropped``, ``compressed``, ``added``, ``note`` or
    ``warning``), ``messages`` and ``tokens`` (0 for notes and warnings) and
    ``text``, the line ``ctx explain`` prints.
    """
    by_step: dict[str, list[MessageRecord]] = defaultdict(list)
    compressed: dict[str, list[MessageRecord]] = defaultdict(list)
    added: list[MessageRecord] = []
    for r in report.records:
        fate = str(r.fate)
        if fate == "dropped":
            by_step[r.by or "?"].append(r)
        elif fate == "compressed":
            compressed[r.by or "?"].append(r)
        elif fate == "added":
            added.append(r)
    items: list[dict[str, Any]] = []

    def item(by: str | None, kind: str, records: list[MessageRecord], text: str) -> None:
        tokens = sum(r.tokens or 0 for r in records)
        items.append({"by": by, "kind": kind, "messages": len(records), "tokens": tokens, "text": text})

    for step, records in by_step.items():
        units = sum(1 for r in records if getattr(r, "unit_start", True))
        tokens = sum(r.tokens or 0 for r in records)
        item(step, "dropped", records,
             f"{step} dropped {len(records)} message(s) in {units} unit(s), {tokens} tokens: {_describe(records)}")
    for step, records in compressed.items():
        item(step, "compressed", records, f"{step} compressed {len(records)} message(s): {_describe(records)}")
    if added:
        item(None, "added", added, f"{len(added)} message(s) added by the build: {_describe(added)}")
    for note in report.notes:
        match = _NOTE_AUTHOR.match(note)
        item(match.group(1) if match else None, "note", [], note)
    for warning in report.warnings:
        item(None, "warning", [], f"warning: {warning}")
    return items


def decisions(report: BuildReport) -> list[str]:
    """Every decision of the build as one line: who dropped, compressed or added what, plus notes and warnings."""
    return [d["text"] for d in decision_items(report)]


def explain_payload(report: BuildReport) -> dict[str, Any]:
    """What ``ctx explain --json`` prints: the budget, the totals, the rows and the decisions."""
    return {
        "budget": report.budget,
        "total_tokens": report.total_tokens,
        "tool_tokens": report.tool_tokens,
        "utilization": report.utilization,
        "rows": budget_rows(report),
        "decisions": decisions(report),
    }
