"""``ctx replay``: build the context before every model call of a recorded session.

Prints a per-turn table (input tokens, budget fill, tokens served from the
previous request's prefix, reductions) and totals with a cost estimate;
``--json`` prints the same data (plus every call) for scripts. The work is
:func:`ctxcore.tools.replay.replay`; this module only reads files and prints.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from ctxcore.cli._common import (
    echo_issues,
    fail,
    load_pipeline,
    parse_runtime,
    read_json,
)
from ctxcore.errors import ConfigError, CtxError
from ctxcore.tools.replay import (
    ReplayResult,
    TranscriptError,
    builder_requests,
    call_points,
    load_transcript,
    replay_requests,
)

__all__ = ["print_replay"]


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def print_replay(result: ReplayResult, console: Console) -> None:
    """The per-turn table and the totals with the cost estimate."""
    table = Table(title="replay: one row per turn")
    for column in ("turn", "calls", "input tokens", "max fill", "cached tokens", "cached share", "new reductions",
                   "removed msgs", "over budget"):
        table.add_column(column, justify="right")
    for t in result.turns:
        table.add_row(str(t.turn), str(t.calls), f"{t.input_tokens:,}", _pct(t.fill), f"{t.cached_tokens:,}",
                      _pct(t.cached_share), str(t.new_reductions), str(t.removed), str(t.over_budget) if t.over_budget else "")
    console.print(table)
    s = result.totals
    console.print(
        f"totals: {s['calls']} calls in {s['turns']} turns, {s['input_tokens']:,} input tokens, "
        f"{s['cached_tokens']:,} cached ({_pct(s['cached_share'])}), mean fill {_pct(s['mean_fill'])}, "
        f"max fill {_pct(s['max_fill'])}, {s['over_budget']} request(s) over budget, {s['reductions']} reduction(s)",
        highlight=False,
    )
    console.print(
        f"cost estimate: ${s['cost']:.4f} at ${s['price_per_mtok']}/M input tokens with cached tokens at "
        f"{s['cached_discount']:.0%} of the price (${s['cost_without_cache']:.4f} without prompt caching)",
        highlight=False,
    )


def _progress(enabled: bool) -> Any:
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    return Progress(TextColumn("replaying"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                    console=Console(stderr=True), transient=True, disable=not enabled)


@click.command("replay")
@click.argument("transcript", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--pipeline", "pipeline_file", required=True, type=click.Path(dir_okay=False, allow_dash=True), help="Pipeline YAML to build each request with.")
@click.option("--price-per-mtok", type=click.FloatRange(min=0), default=3.0, show_default=True, help="Price per million input tokens.")
@click.option("--cached-discount", type=click.FloatRange(0, 1), default=0.1, show_default=True,
              help="Fraction of the price a cached input token costs (0.1: cached tokens cost 10%).")
@click.option("--json", "as_json", is_flag=True, help="Print {totals, turns, calls} as JSON on stdout.")
@click.option("--runtime", "runtime_items", multiple=True, metavar="KEY=VALUE", help="Runtime values passed to every build.")
@click.pass_context
def replay_command(ctx: click.Context, transcript: str, pipeline_file: str, price_per_mtok: float, cached_discount: float,
                   as_json: bool, runtime_items: tuple[str, ...]) -> None:
    """Build PIPELINE's request before every model call recorded in TRANSCRIPT and measure it.

    TRANSCRIPT is a JSON list of OpenAI messages or {"messages": [...], "tools": [...]}
    (the state `ctx build` reads). A call happens before every assistant message.
    """
    runtime = parse_runtime(runtime_items)
    try:
        messages, state = load_transcript(read_json(transcript, "transcript"), source=transcript)
    except TranscriptError as exc:
        fail(str(exc))
    p = load_pipeline(ctx, pipeline_file)
    try:
        builder = p.builder()
    except ConfigError as exc:
        echo_issues(exc)
        fail(f"{pipeline_file}: components could not be created")
    request = builder_requests(builder, messages, state, runtime)
    show = not as_json and sys.stderr.isatty()
    done_calls = 0
    try:
        with _progress(show) as progress:
            task = progress.add_task("replay", total=len(call_points(messages)))

            def advance(done: int, total: int) -> None:
                nonlocal done_calls
                done_calls = done
                progress.update(task, completed=done, total=total)

            result = replay_requests(messages, request, price_per_mtok=price_per_mtok, cached_discount=cached_discount,
                                     on_call=advance)
    except (CtxError, ValueError) as exc:
        at = call_points(messages)[done_calls].history
        fail(f"{type(exc).__name__}: {exc} (building the call before {transcript} messages[{at}]; "
              f"check that message and the pipeline {pipeline_file})")
    if as_json:
        click.echo(json.dumps(result.to_dict(), indent=2))
        return
    print_replay(result, Console(width=160))
