"""``ctx replay``: build the context before every model call of a recorded session.

Prints a per-turn table (input tokens, budget fill, tokens served from the
previous request's prefix, reductions) and totals with a cost estimate;
``--json`` prints the same data (plus every call) for scripts. The work is
:func:`ctxcore.tools.replay.replay`; this module only reads files and prints.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from ctxcore.cli._common import (
    echo_issues,
    fail,
    load_pipeline,
    parse_runtime,
    read_json,
)
from ctxcore.cli._progress import progress_bar
from ctxcore.errors import ConfigError, CtxError
from ctxcore.tools.cache_rules import PRICES, price_for
from ctxcore.tools.replay import (
    ReplayResult,
    TranscriptError,
    anthropic_minimum,
    builder_requests,
    call_points,
    load_transcript,
    replay_requests,
    split_timestamps,
)
from ctxcore.tools.terminal import cells, make_console, make_table, show

__all__ = ["print_replay"]


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def print_replay(result: ReplayResult, console: Console) -> None:
    """The per-turn table and the totals with the cost estimate."""
    columns = ("turn", "calls", "input tokens", "max fill", "cached tokens", "cached share", "new reductions",
               "removed msgs", "over budget")
    table = make_table(console, "replay: one row per turn", columns, right=columns, wrap=columns)
    for t in result.turns:
        table.add_row(*cells(str(t.turn), str(t.calls), f"{t.input_tokens:,}", _pct(t.fill), f"{t.cached_tokens:,}",
                      _pct(t.cached_share), str(t.new_reductions), str(t.removed), str(t.over_budget) if t.over_budget else ""))
    show(console, table)
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
    for name, p in result.providers.items():
        price = p["price"]
        written = f", {p['written_tokens']:,} written at ${price['write']}/M" if p["written_tokens"] else ""
        console.print(
            f"{name} caching rules: {p['cached_tokens']:,} cached ({_pct(p['cached_share'])}) at ${price['read']}/M"
            f"{written}, input ${price['input']}/M: ${p['cost']:.4f} (${p['cost_without_cache']:.4f} without caching)",
            highlight=False,
        )


def _write_page(ctx: click.Context, p: Any, builder: Any, messages: list[dict[str, Any]], state: dict[str, Any],
                runtime: dict[str, str], price_per_mtok: float, cached_discount: float, html_file: str, as_json: bool,
                transcript: str, **replay_options: Any) -> None:
    """``--html``: replay with every call's report kept (and the sliding-window baseline), write the page."""
    from ctxcore.tools.html_report import pipeline_context
    from ctxcore.tools.replay_html import render_replay_html, replay_page, sliding_window_builder

    model, kinds = pipeline_context(p)
    baseline = None
    try:
        baseline = sliding_window_builder(builder, p.host.registry.get("filter", "token_budget").create({}))
    except LookupError:
        click.echo("warning: no token_budget filter is installed, so the page has no sliding-window baseline", err=True)
    try:
        with progress_bar(ctx, "replaying", len(call_points(messages))) as advance:
            result, payload = replay_page(builder, messages, state=state, runtime=runtime, price_per_mtok=price_per_mtok,
                                          cached_discount=cached_discount, model=model, source_kinds=kinds,
                                          baseline=baseline, title=f"ctx replay: {Path(transcript).name} through {p.spec.name}",
                                          on_call=advance, **replay_options)
    except (CtxError, ValueError) as exc:
        fail(f"{type(exc).__name__}: {exc} (replaying {transcript} through {p.spec.name}; run without --html to find the call)")
    try:
        Path(html_file).write_text(render_replay_html(payload), encoding="utf-8")
    except OSError as exc:
        fail(f"cannot write {html_file}: {exc.strerror}")
    click.echo(f"wrote {html_file}", err=True)
    if as_json:
        click.echo(json.dumps({k: v for k, v in payload.items() if k not in ("texts", "reports")}, indent=2))
    else:
        print_replay(result, make_console())


@click.command("replay")
@click.argument("transcript", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--pipeline", "pipeline_file", required=True, type=click.Path(dir_okay=False, allow_dash=True), help="Pipeline YAML to build each request with.")
@click.option("--price-per-mtok", type=click.FloatRange(min=0), default=3.0, show_default=True, help="Price per million input tokens.")
@click.option("--cached-discount", type=click.FloatRange(0, 1), default=0.1, show_default=True,
              help="Fraction of the price a cached input token costs (0.1: cached tokens cost 10%).")
@click.option("--openai-model", type=click.Choice(sorted(k for k, v in PRICES.items() if v.provider == "openai")),
              default="gpt-4o", show_default=True, help="Price row of OpenAI's caching rules (docs/caching.md).")
@click.option("--openai-price", type=click.FloatRange(min=0), help="OpenAI input price per million tokens (overrides the row).")
@click.option("--openai-cached-price", type=click.FloatRange(min=0), help="OpenAI cached-input price per million tokens.")
@click.option("--anthropic-model", type=click.Choice(sorted(k for k, v in PRICES.items() if v.provider == "anthropic")),
              default="claude-sonnet", show_default=True, help="Price row of Anthropic's caching rules.")
@click.option("--anthropic-price", type=click.FloatRange(min=0),
              help="Anthropic input price per million tokens (writes cost 1.25x, reads 0.1x of it).")
@click.option("--json", "as_json", is_flag=True, help="Print {totals, providers, turns, calls} as JSON on stdout.")
@click.option("--runtime", "runtime_items", multiple=True, metavar="KEY=VALUE", help="Runtime values passed to every build.")
@click.option("--html", "html_file", type=click.Path(dir_okay=False, writable=True),
              help="Write the session as one self-contained page: timeline, costs, every call's report.")
@click.pass_context
def replay_command(ctx: click.Context, transcript: str, pipeline_file: str, price_per_mtok: float, cached_discount: float,
                   openai_model: str, openai_price: float | None, openai_cached_price: float | None,
                   anthropic_model: str, anthropic_price: float | None, as_json: bool, runtime_items: tuple[str, ...],
                   html_file: str | None) -> None:
    """Build PIPELINE's request before every model call recorded in TRANSCRIPT and measure it.

    TRANSCRIPT is a JSON list of OpenAI messages or {"messages": [...], "tools": [...]}
    (the state `ctx build` reads). A call happens before every assistant message.
    Each call is also billed under OpenAI's and Anthropic's caching rules; a
    message's optional "timestamp" (ISO 8601 or epoch seconds) makes cache
    entries expire after 5 minutes unused.
    """
    runtime = parse_runtime(runtime_items)
    try:
        messages, state = load_transcript(read_json(transcript, "transcript"), source=transcript)
        messages, times = split_timestamps(messages, source=transcript)
    except TranscriptError as exc:
        fail(str(exc))
    prices = {"openai": price_for(openai_model, input_price=openai_price, cached_price=openai_cached_price),
              "anthropic": price_for(anthropic_model, input_price=anthropic_price)}
    p = load_pipeline(ctx, pipeline_file)
    try:
        builder = p.builder()
    except ConfigError as exc:
        echo_issues(exc)
        fail(f"{pipeline_file}: components could not be created")
    if html_file:
        _write_page(ctx, p, builder, messages, state, runtime, price_per_mtok, cached_discount, html_file, as_json, transcript,
                    times=times, prices=prices, anthropic_min_tokens=anthropic_minimum(builder))
        return
    request = builder_requests(builder, messages, state, runtime)
    done_calls = 0
    try:
        with progress_bar(ctx, "replaying", len(call_points(messages)), enabled=not as_json) as bar:

            def advance(done: int, total: int) -> None:
                nonlocal done_calls
                done_calls = done
                bar(done, total)

            result = replay_requests(messages, request, price_per_mtok=price_per_mtok, cached_discount=cached_discount,
                                     on_call=advance, times=times, prices=prices, anthropic_min_tokens=anthropic_minimum(builder))
    except (CtxError, ValueError) as exc:
        at = call_points(messages)[done_calls].history
        fail(f"{type(exc).__name__}: {exc} (building the call before {transcript} messages[{at}]; "
              f"check that message and the pipeline {pipeline_file})")
    if as_json:
        click.echo(json.dumps(result.to_dict(), indent=2))
        return
    print_replay(result, make_console())
