"""``ctx report``: the built request as a self-contained HTML page (``--html``) or JSON (``--json``).

An over-budget build (``BudgetExceeded``) is reported too: the providers' messages unfiltered, the
shortfall, the protected part's size and what would have to go; the command then warns and exits 0.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from ctxcore.cli._common import echo_issues, fail, load_pipeline, parse_runtime, read_state
from ctxcore.engine.builder import BuiltContext, coerce_messages
from ctxcore.errors import BudgetExceeded, ConfigError, CtxError
from ctxcore.model.messages import Message
from ctxcore.tools.html_report import pipeline_context, render_html, report_payload
from ctxcore.tools.over_budget import inputs_build, over_budget_section

__all__ = ["report"]


def _with_message_ids(state: dict[str, Any]) -> tuple[dict[str, Any], list[Message] | None]:
    """The state with its ``messages`` as Message objects, so the page can order the history by input.

    A list that does not convert is left as it is (the build names the bad item)
    and the history is then drawn in the report's order.
    """
    items = state.get("messages")
    if not isinstance(items, list):
        return state, None
    try:
        messages = coerce_messages(items)
    except (ValueError, TypeError):
        return state, None
    return {**state, "messages": messages}, messages


def _build(p: Any, file: str, state: dict[str, Any], runtime: dict[str, str]
           ) -> tuple[BuiltContext, list[Message], dict[str, Any] | None]:
    """The build, the providers' messages (for the texts of removed ones) and, over budget, the shortfall section.

    A build that raises ``BudgetExceeded`` is reported from the providers'
    output instead: the page shows where the tokens go rather than nothing.
    """
    try:
        builder = p.builder()
        try:
            built = builder.build(state, runtime)
        except BudgetExceeded as exc:
            unfiltered = inputs_build(builder, state, runtime)
            return unfiltered, list(unfiltered.messages), over_budget_section(exc, unfiltered)
        texts: list[Message] = []
        try:  # the providers' output only finds the text of removed provider messages; the history has the rest
            texts = list(inputs_build(builder, state, runtime).messages)
        except CtxError as exc:
            click.echo(f"warning: the providers-only build failed ({type(exc).__name__}: {exc}); "
                       "removed provider messages show their preview only", err=True)
        return built, texts, None
    except ConfigError as exc:
        echo_issues(exc)
        fail(f"{file}: components could not be created")
    except CtxError as exc:
        fail(f"{type(exc).__name__}: {exc}")


@click.command("report")
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--state", "state_file", required=True, type=click.Path(dir_okay=False, allow_dash=True), help='JSON file: {"messages": [...], "tools": [...]}.')
@click.option("--html", "html_file", type=click.Path(dir_okay=False, writable=True), help="Write the report as one self-contained HTML page.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON (a superset of `ctx explain --json`).")
@click.option("--title", help="Page title (default: 'ctx report: <pipeline name>').")
@click.option("--runtime", "runtime_items", multiple=True, metavar="KEY=VALUE", help="Runtime values passed to providers.")
@click.pass_context
def report(ctx: click.Context, file: str, state_file: str, html_file: str | None, as_json: bool, title: str | None,
           runtime_items: tuple[str, ...]) -> None:
    """Build FILE for STATE and show what the model receives: budget bar, history by fate, tokens, decisions."""
    if not html_file and not as_json:
        fail("ctx report: give --html OUT.html, --json, or both")
    state, history = _with_message_ids(read_state(state_file))
    p = load_pipeline(ctx, file)
    runtime = parse_runtime(runtime_items)
    built, inputs, over = _build(p, file, state, runtime)
    model, kinds = pipeline_context(p)
    options: dict[str, Any] = {"model": model, "source_kinds": kinds, "history": history, "inputs": inputs,
                               "over_budget": over, "title": title or f"ctx report: {p.spec.name}"}
    if over is not None:
        click.echo(f"warning: the build is over budget by {over['shortfall']} tokens (BudgetExceeded); "
                   "the report shows the providers' messages unfiltered and what would have to go", err=True)
    if html_file:
        try:
            Path(html_file).write_text(render_html(built, **options), encoding="utf-8")
        except OSError as exc:
            fail(f"cannot write {html_file}: {exc.strerror}")
        click.echo(f"wrote {html_file}", err=True)
    if as_json:
        click.echo(json.dumps(report_payload(built, **options), indent=2, ensure_ascii=False))
