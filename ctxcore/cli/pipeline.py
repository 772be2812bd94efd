"""``ctx pipeline``: work with pipeline files (``validate`` here; ``show``, ``presets`` and ``schema`` are attached in :mod:`ctxcore.cli`)."""

from __future__ import annotations

import click

from ctxcore.cli._common import echo_issues, fail, load_pipeline
from ctxcore.errors import ConfigError

__all__ = ["pipeline"]


@click.group()
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
