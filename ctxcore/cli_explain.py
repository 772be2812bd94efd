"""``ctx explain``: where the tokens of a build went, per source and zone, and why.

The same table and decision list are printed by ``ctx build --explain``
(after the per-message tables). The data functions, :func:`budget_rows` and
:func:`decisions`, work on any :class:`BuildReport`.
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from ctxcore.cli import _echo_issues, _fail, _load_pipeline, _parse_runtime, _read_state, cli
from ctxcore.errors import ConfigError, CtxError
from ctxcore.report import BuildReport, MessageRecord

__all__ = ["budget_rows", "decisions", "print_explain"]

# Fates whose tokens came into the build / went out in the request. "compressed"
# (an original replaced by a shorter message) counts as input; its replacement
# is an "added" message in the output.
_IN = ("kept", "dropped", "compressed")
_OUT = ("kept", "added")


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


def decisions(report: BuildReport) -> list[str]:
    """Every decision of the build as one line: who dropped, compressed or added what, plus notes and warnings."""
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
    lines = []
    for step, records in by_step.items():
        units = sum(1 for r in records if getattr(r, "unit_start", True))
        tokens = sum(r.tokens or 0 for r in records)
        lines.append(
            f"{step} dropped {len(records)} message(s) in {units} unit(s), {tokens} tokens: {_describe(records)}"
        )
    for step, records in compressed.items():
        lines.append(f"{step} compressed {len(records)} message(s): {_describe(records)}")
    if added:
        lines.append(f"{len(added)} message(s) added by the build: {_describe(added)}")
    lines.extend(report.notes)
    lines.extend(f"warning: {w}" for w in report.warnings)
    return lines


def print_explain(report: BuildReport, console: Console | None = None) -> None:
    """Print the per-source/zone budget table and the decision list."""
    console = console or Console(stderr=True, width=140)
    table = Table(title="budget by source and zone")
    for column in ("source", "zone", "tokens in", "tokens out", "units dropped", "compressed"):
        table.add_column(column, justify="left" if column in ("source", "zone") else "right")
    for row in budget_rows(report):
        table.add_row(row["source"], row["zone"], str(row["tokens_in"]), str(row["tokens_out"]),
                      str(row["units_dropped"]), str(row["compressed"]))
    console.print(table)
    budget = f" of a {report.budget}-token input budget ({report.utilization:.1%})" if report.budget else ""
    tools = f", {report.tool_tokens} of them tool schemas" if report.tool_tokens else ""
    console.print(f"request: {report.total_tokens} tokens{budget}{tools}")
    lines = decisions(report)
    console.print("decisions:" if lines else "decisions: none (everything fit)")
    for line in lines:
        console.print(f"  - {line}", highlight=False, markup=False, soft_wrap=True)


@cli.command("explain")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--state", "state_file", required=True, type=click.Path(dir_okay=False), help='JSON file: {"messages": [...], "tools": [...]}.')
@click.option("--runtime", "runtime_items", multiple=True, metavar="KEY=VALUE", help="Runtime values passed to providers.")
@click.option("--json", "as_json", is_flag=True, help="Print {budget, total_tokens, tool_tokens, utilization, rows, decisions} as JSON.")
@click.pass_context
def explain(ctx: click.Context, file: str, state_file: str, runtime_items: tuple[str, ...], as_json: bool) -> None:
    """Build FILE for STATE and explain the budget: tokens per source and zone, and every decision."""
    p = _load_pipeline(ctx, file)
    state = _read_state(state_file)
    runtime = _parse_runtime(runtime_items)
    try:
        report = p.build(state, runtime).report
    except ConfigError as exc:
        _echo_issues(exc)
        _fail(f"{file}: components could not be created")
    except CtxError as exc:
        _fail(f"{type(exc).__name__}: {exc}")
    if as_json:
        payload = {
            "budget": report.budget,
            "total_tokens": report.total_tokens,
            "tool_tokens": report.tool_tokens,
            "utilization": report.utilization,
            "rows": budget_rows(report),
            "decisions": decisions(report),
        }
        click.echo(json.dumps(payload, indent=2, ensure_ascii=False))
        return
    print_explain(report, Console(width=140))
