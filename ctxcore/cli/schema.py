"""``ctx pipeline schema``: print the JSON Schema of pipeline files (see ctxcore.pipeline.schema)."""

from __future__ import annotations

import json

import click

from ctxcore.cli._common import state

__all__: list[str] = []


@click.command("schema")
@click.option("--indent", type=click.IntRange(0, 8), default=2, show_default=True, help="Spaces per JSON indent level (0: one line).")
@click.pass_context
def pipeline_schema_command(ctx: click.Context, indent: int) -> None:
    """Print the JSON Schema (draft 2020-12) of pipeline files for the installed components.

    Write it next to your pipelines and point the YAML language server at it:
    `ctx pipeline schema > ctxcore.schema.json`, then start the YAML file with
    `# yaml-language-server: $schema=./ctxcore.schema.json`.
    """
    from ctxcore.pipeline.schema import pipeline_schema

    schema = pipeline_schema(state(ctx).host)
    click.echo(json.dumps(schema, indent=indent or None, ensure_ascii=False))
