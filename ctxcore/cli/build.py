"""``ctx build``: the request of a pipeline (or preset) for a conversation state."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import click

from ctxcore.cli._common import echo_issues, fail, parse_runtime, read_state
from ctxcore.cli.explain import print_explain
from ctxcore.cli.presets import load_file_or_preset
from ctxcore.errors import ConfigError, CtxError
from ctxcore.tools.report_tables import print_report

__all__ = ["build"]

# --format -> (the body of the built context, the API named when it cannot take the history)
_RENDERERS: dict[str, tuple[Callable[[Any], Any], str]] = {
    "openai": (lambda built: built.to_openai(), "OpenAI chat completions"),
    "anthropic": (lambda built: built.to_anthropic(), "Anthropic"),
    "openai-responses": (lambda built: built.to_openai_responses(), "the OpenAI Responses API"),
}


@click.command()
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True), required=False)
@click.option("--preset", help="Build with a preset pipeline (chat, react, skill, agent) instead of FILE.")
@click.option("--state", "state_file", required=True, type=click.Path(dir_okay=False, allow_dash=True), help='JSON file (- for stdin): {"messages": [OpenAI-style dicts...]}.')
@click.option("--format", "fmt", type=click.Choice(["openai", "anthropic", "openai-responses", "json"]), default="openai",
              show_default=True,
              help="openai: the request's messages; anthropic: the Messages API body (system, messages, tools); "
                   "openai-responses: the Responses API body (input items, tools); "
                   "json: ctxcore messages with provenance plus the report.")
@click.option("--explain", is_flag=True, help="Print the build report as tables on stderr.")
@click.option("--runtime", "runtime_items", multiple=True, metavar="KEY=VALUE", help="Runtime values passed to providers.")
@click.pass_context
def build(ctx: click.Context, file: str | None, preset: str | None, state_file: str, fmt: str, explain: bool,
          runtime_items: tuple[str, ...]) -> None:
    """Build the context of pipeline FILE (or --preset NAME) for the conversation in STATE."""
    p = load_file_or_preset(ctx, file, preset)
    file = file or f"preset {preset}"
    conversation = read_state(state_file)
    runtime = parse_runtime(runtime_items)
    try:
        built = p.build(conversation, runtime)
    except ConfigError as exc:
        echo_issues(exc)
        fail(f"{file}: components could not be created")
    except CtxError as exc:
        fail(f"{type(exc).__name__}: {exc}")
    if fmt in _RENDERERS:
        render, target = _RENDERERS[fmt]
        try:
            body = render(built)
        except (CtxError, ValueError) as exc:
            fail(f"{file}: the request cannot be sent to {target}: {type(exc).__name__}: {exc}")
        click.echo(json.dumps(body, indent=2, ensure_ascii=False))
    else:
        payload = {
            "messages": [m.model_dump(mode="json") for m in built.messages],
            "report": built.report.to_dict(),
        }
        click.echo(json.dumps(payload, indent=2, ensure_ascii=False))
    if explain:
        print_report(built.report)
        print_explain(built.report)
