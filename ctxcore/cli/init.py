"""``ctx init``: a starter pipeline, an example state and the schema, ready for ``ctx build``.

The pipeline is a shipped preset's YAML (``register_presets``; see
ctxcore.pipeline.presets) with the YAML language-server modeline and a few comments
put in front: there is no second copy of the pipeline text here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from ctxcore.cli._common import echo_issues, fail, state
from ctxcore.errors import ConfigError

__all__ = ["PIPELINE_FILE", "STATE_FILE", "SCHEMA_FILE", "MODELINE", "example_state", "starter_pipeline"]

PIPELINE_FILE = "ctxcore.yaml"
STATE_FILE = "state.json"
SCHEMA_FILE = "ctxcore.schema.json"
#: first line of the starter pipeline: editors with the YAML language server check the file against the schema.
MODELINE = f"# yaml-language-server: $schema=./{SCHEMA_FILE}"


def starter_pipeline(preset_yaml: str, preset: str) -> str:
    """The preset's YAML with the modeline and a short guide in front."""
    header = [
        MODELINE,
        f"# A ctxcore pipeline, started from the {preset!r} preset by `ctx init`.",
        f"#   build:     ctx build {PIPELINE_FILE} --state {STATE_FILE} --explain",
        f"#   check:     ctx pipeline validate {PIPELINE_FILE}",
        f"#   schema:    ctx pipeline schema > {SCHEMA_FILE}   (re-run after installing plugins)",
        "#   reference: docs/pipeline.md; components: ctx plugins list",
        "",
    ]
    return "\n".join(header) + preset_yaml


def example_state(preset: str) -> dict[str, Any]:
    """A small conversation with one tool round trip, plus what the preset's providers read."""
    state: dict[str, Any] = {
        "messages": [
            {"role": "user", "content": "What is in README.md?"},
            {
                "role": "assistant",
                "content": "I'll read the file.",
                "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\": \"README.md\"}"}}
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "# Demo\nA small project that parses lists."},
            {"role": "assistant", "content": "README.md describes a small project that parses lists."},
            {"role": "user", "content": "Thanks. Which tools can you use?"},
        ],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "read_file",
                    "description": "Read a text file of the workspace.",
                    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
                },
            }
        ],
    }
    if preset == "agent":  # the agent preset's runtime_context step reads the current user message from state["input"]
        state["messages"].pop()
        state["input"] = "Thanks. Which tools can you use?"
    return state


@click.command("init")
@click.argument("directory", type=click.Path(file_okay=False), default=".", required=False)
@click.option("--preset", default="chat", show_default=True, help="The preset to start from (see `ctx pipeline presets`).")
@click.option("--force", is_flag=True, help="Overwrite files that already exist.")
@click.pass_context
def init(ctx: click.Context, directory: str, preset: str, force: bool) -> None:
    """Write a starter pipeline, an example state and the pipeline schema into DIRECTORY.

    Writes ctxcore.yaml (the preset's YAML with the schema modeline),
    state.json (a conversation `ctx build` accepts) and ctxcore.schema.json.
    """
    from ctxcore.pipeline.presets import preset_text
    from ctxcore.pipeline.schema import pipeline_schema

    host = state(ctx).host
    try:
        text = preset_text(preset, host=host)
    except ConfigError as exc:
        echo_issues(exc)
        fail(f"preset {preset}: not found")
    root = Path(directory)
    files = {
        root / PIPELINE_FILE: starter_pipeline(text, preset),
        root / STATE_FILE: json.dumps(example_state(preset), indent=2) + "\n",
        root / SCHEMA_FILE: json.dumps(pipeline_schema(host), indent=2) + "\n",
    }
    existing = [str(p) for p in files if p.exists()]
    if existing and not force:
        fail(f"{', '.join(existing)} already exist{'s' if len(existing) == 1 else ''}; pass --force to overwrite")
    try:
        root.mkdir(parents=True, exist_ok=True)
        for path, content in files.items():
            path.write_text(content, encoding="utf-8")
    except OSError as exc:
        fail(f"cannot write into {root}: {exc.strerror or exc}")
    click.echo(f"wrote {', '.join(str(p) for p in files)}", err=True)
    pipeline_path, state_path = (str(p) for p in list(files)[:2])
    click.echo(f"next: ctx build {pipeline_path} --state {state_path} --explain", err=True)
