"""``ctx pipeline show`` and ``ctx pipeline presets``, and ``--preset`` loading for ``ctx build``.

Presets are YAML pipelines shipped by plugins (``register_presets``); showing
one prints the file as shipped, comments included, so a user can copy and edit it.
"""

from __future__ import annotations

from typing import Any

import click

from ctxcore.cli._common import echo_issues, fail, load_pipeline, pipeline_text, state
from ctxcore.errors import ConfigError

__all__ = ["load_file_or_preset"]


def load_file_or_preset(ctx: click.Context, file: str | None, preset: str | None) -> Any:
    """The pipeline of FILE, or of ``--preset NAME`` (exactly one of them)."""
    if (file is None) == (preset is None):
        fail("give a pipeline FILE or --preset NAME (one of them)", code=2)
    if file is not None:
        return load_pipeline(ctx, file)
    from ctxcore.pipeline.presets import preset_pipeline

    try:
        return preset_pipeline(str(preset), host=state(ctx).host)
    except ConfigError as exc:
        echo_issues(exc)
        fail(f"preset {preset}: cannot be loaded")


@click.command("show")
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True), required=False)
@click.option("--preset", help="Print the YAML of a preset pipeline (see `ctx pipeline presets`).")
@click.pass_context
def pipeline_show(ctx: click.Context, file: str | None, preset: str | None) -> None:
    """Print pipeline FILE, or the YAML of --preset NAME to copy and edit."""
    from ctxcore.pipeline.presets import preset_text

    if (file is None) == (preset is None):
        fail("give a pipeline FILE or --preset NAME (one of them)", code=2)
    if file is not None:
        text = pipeline_text(file)
        load_pipeline(ctx, file, text)  # validate first: show only what would load
        click.echo(text, nl=False)
        return
    try:
        click.echo(preset_text(str(preset), host=state(ctx).host), nl=False)
    except ConfigError as exc:
        echo_issues(exc)
        fail(f"preset {preset}: not found")


@click.command("presets")
@click.option("--json", "as_json", is_flag=True, help='Print [{"name", "plugin", "path", "description"}] as JSON.')
@click.pass_context
def pipeline_presets(ctx: click.Context, as_json: bool) -> None:
    """List the preset pipelines installed plugins offer."""
    import json

    from ctxcore.pipeline.presets import available_presets

    presets = available_presets(state(ctx).host)
    if as_json:
        rows = [{"name": p.name, "plugin": p.plugin, "path": str(p.path), "description": p.description} for p in presets.values()]
        click.echo(json.dumps(rows, indent=2, sort_keys=True))
        return
    for p in presets.values():
        click.echo(f"{p.name:<8}  {p.description}  ({p.plugin})")
