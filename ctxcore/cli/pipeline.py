"""``ctx pipeline``: work with pipeline files (``validate`` here; ``show``, ``presets`` and ``schema`` load when they run)."""

from __future__ import annotations

import click

from ctxcore.cli._common import echo_issues, fail, load_pipeline
from ctxcore.cli.lazy import LazyCommand, LazyGroup
from ctxcore.errors import ConfigError

__all__ = ["pipeline"]


@click.group(cls=LazyGroup, lazy_commands={
    "presets": LazyCommand("ctxcore.cli.presets:pipeline_presets", "List the preset pipelines installed plugins offer."),
    "schema": LazyCommand("ctxcore.cli.schema:pipeline_schema_command",
                          "Print the JSON Schema (draft 2020-12) of pipeline files for the installed components."),
    "show": LazyCommand("ctxcore.cli.presets:pipeline_show",
                        "Print pipeline FILE, or the YAML of --preset NAME to copy and edit."),
})
def pipeline() -> None:
    """Work with pipeline files."""


@pipeline.command("validate")
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True))
@click.pass_context
def pipeline_validate(ctx: click.Context, file: str) -> None:
    """Check FILE and create its components; print every problem with its line."""
    p = load_pipeline(ctx, file)
    try:
        p.builder()
    except ConfigError as exc:
        echo_issues(exc)
        fail(f"{file}: components could not be created")
    for warning in p.warnings:
        click.echo(f"warning: {warning}", err=True)
    builder = p.builder()
    counter = p.spec.counter.type if p.spec.counter else "approximate (default)"
    click.echo(f"ok: {file} — {len(builder.providers)} providers, {len(builder.filters)} filters, counter {counter}")
