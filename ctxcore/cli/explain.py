"""``ctx explain``: where the tokens of a build went, per source and zone, and why.

The same table and decision list are printed by ``ctx build --explain``
(after the per-message tables). The data functions, :func:`budget_rows` and
:func:`decisions`, live in :mod:`ctxcore.tools.explain` and work on any :class:`BuildReport`.
"""

from __future__ import annotations

import json
from typing import Any

import click
from rich.console import Console

from ctxcore.cli._common import (
    echo_issues,
    fail,
    load_pipeline,
    parse_runtime,
    read_state,
)
from ctxcore.engine.builder import BuiltContext
from ctxcore.engine.report import BuildReport
from ctxcore.errors import ConfigError, CtxError
from ctxcore.tools.explain import budget_rows, decisions, explain_payload
from ctxcore.tools.terminal import cells, clean, make_console, make_table, show

__all__ = ["budget_rows", "decisions", "print_explain", "build_from_cli"]


def build_from_cli(ctx: click.Context, file: str, state: dict[str, Any], runtime_items: tuple[str, ...]) -> tuple[Any, BuiltContext]:
    """Load pipeline FILE and build it for ``state`` (read with ``_read_state``); exit 1 with a clear message on failure.

    Returns the :class:`~ctxcore.pipeline.Pipeline` and the :class:`BuiltContext`.
    Shared by ``ctx explain`` and ``ctx report``.
    """
    p = load_pipeline(ctx, file)
    runtime = parse_runtime(runtime_items)
    try:
        return p, p.build(state, runtime)
    except ConfigError as exc:
        echo_issues(exc)
        fail(f"{file}: components could not be created")
    except CtxError as exc:
        fail(f"{type(exc).__name__}: {exc}")


def print_explain(report: BuildReport, console: Console | None = None) -> None:
    """Print the per-source/zone budget table and the decision list."""
    console = console or make_console(stderr=True)
    table = make_table(console, "budget by source and zone",
                       ("source", "zone", "tokens in", "tokens out", "units dropped", "compressed"),
                       right=("tokens in", "tokens out", "units dropped", "compressed"))
    for row in budget_rows(report):
        table.add_row(*cells(row["source"], row["zone"], str(row["tokens_in"]), str(row["tokens_out"]),
                             str(row["units_dropped"]), str(row["compressed"])))
    show(console, table)
    budget = f" of a {report.budget}-token input budget ({report.utilization:.1%})" if report.budget else ""
    tools = f", {report.tool_tokens} of them tool schemas" if report.tool_tokens else ""
    console.print(f"request: {report.total_tokens} tokens{budget}{tools}")
    lines = decisions(report)
    console.print("decisions:" if lines else "decisions: none (everything fit)")
    for line in lines:
        console.print(f"  - {clean(line, one_line=True)}", overflow="fold")


@click.command("explain")
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--state", "state_file", required=True, type=click.Path(dir_okay=False, allow_dash=True), help='JSON file: {"messages": [...], "tools": [...]}.')
@click.option("--runtime", "runtime_items", multiple=True, metavar="KEY=VALUE", help="Runtime values passed to providers.")
@click.option("--json", "as_json", is_flag=True, help="Print {budget, total_tokens, tool_tokens, utilization, rows, decisions} as JSON.")
@click.pass_context
def explain(ctx: click.Context, file: str, state_file: str, runtime_items: tuple[str, ...], as_json: bool) -> None:
    """Build FILE for STATE and explain the budget: tokens per source and zone, and every decision."""
    _, built = build_from_cli(ctx, file, read_state(state_file), runtime_items)
    report = built.report
    if as_json:
        click.echo(json.dumps(explain_payload(report), indent=2, ensure_ascii=False))
        return
    print_explain(report, make_console())
