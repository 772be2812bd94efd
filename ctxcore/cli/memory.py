"""``ctx memory add|search``: use the long-term memory store a pipeline configures.

The store is the pipeline's ``memory:`` step, created exactly as a build
would create it, so the command reads and writes the memories an agent
running that pipeline sees.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from ctxcore.cli._common import fail, pipeline_component
from ctxcore.errors import CtxError
from ctxcore.runtime.memory_service import MemoryService
from ctxcore.tools.terminal import clean

__all__ = ["memory"]

_PIPELINE = click.option("--pipeline", "pipeline_file", required=True, type=click.Path(dir_okay=False, allow_dash=True),
                         help="Pipeline file whose memory: store to use.")
_NAMESPACE = click.option("--namespace", "-n", default=None, help="Namespace (user or agent); default 'default'.")
_JSON = click.option("--json", "as_json", is_flag=True, help="Print the items as JSON.")


def _pairs(items: tuple[str, ...], option: str) -> dict[str, Any]:
    """KEY=VALUE options as a dict; VALUE is read as JSON when it is valid JSON, else as a string."""
    out: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            fail(f"{option} {item!r}: expected KEY=VALUE")
        try:
            out[key] = json.loads(raw)
        except json.JSONDecodeError:
            out[key] = raw
    return out


def _service(ctx: click.Context, file: str, namespace: str | None) -> MemoryService:
    _, store = pipeline_component(
        ctx, file, "memory", "configures no long-term memory; add e.g. 'memory: {type: sqlite, path: .ctx/memory.db}'"
    )
    try:
        return MemoryService(store, namespace)
    except (TypeError, ValueError) as exc:
        fail(str(exc))


@click.group()
def memory() -> None:
    """Add to and search the long-term memory of a pipeline."""


@memory.command("add")
@click.argument("text")
@_PIPELINE
@_NAMESPACE
@click.option("--meta", "meta", multiple=True, metavar="KEY=VALUE", help="Metadata label (repeatable).")
@click.option("--id", "memory_id", default=None, help="Memory id; an existing memory with it is replaced.")
@_JSON
@click.pass_context
def memory_add(ctx: click.Context, text: str, pipeline_file: str, namespace: str | None, meta: tuple[str, ...],
               memory_id: str | None, as_json: bool) -> None:
    """Record TEXT (standard input for '-') and print the new memory's id."""
    service = _service(ctx, pipeline_file, namespace)
    if text == "-":
        text = sys.stdin.read()
    try:
        items = service.add(text, metadata=_pairs(meta, "--meta"), id=memory_id)
    except (CtxError, ValueError, TypeError, OSError) as exc:
        fail(f"{type(exc).__name__}: {exc}")
    if as_json:
        click.echo(json.dumps([i.to_dict() for i in items], indent=2, ensure_ascii=False))
    else:
        for item in items:
            click.echo(clean(item.id, one_line=True))


@memory.command("search")
@click.argument("query")
@_PIPELINE
@_NAMESPACE
@click.option("--limit", "-k", default=5, show_default=True, type=click.IntRange(min=1), help="Most items to print.")
@click.option("--filter", "filters", multiple=True, metavar="KEY=VALUE", help="Only memories with this metadata (repeatable).")
@_JSON
@click.pass_context
def memory_search(ctx: click.Context, query: str, pipeline_file: str, namespace: str | None, limit: int,
                  filters: tuple[str, ...], as_json: bool) -> None:
    """Print the memories most relevant to QUERY, best first."""
    service = _service(ctx, pipeline_file, namespace)
    try:
        items = service.search(query, limit=limit, filters=_pairs(filters, "--filter"))
    except (CtxError, ValueError, TypeError, OSError) as exc:
        fail(f"{type(exc).__name__}: {exc}")
    if as_json:
        click.echo(json.dumps([i.to_dict() for i in items], indent=2, ensure_ascii=False))
    else:
        click.echo(clean(service.format_retrieved(items)))
