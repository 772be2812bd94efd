"""``ctx plugins``: what is installed (``list``); ``new`` is in :mod:`ctxcore.cli.scaffold`, loaded when it runs."""

from __future__ import annotations

import json
import sys

import click

from ctxcore.cli._common import state
from ctxcore.cli.lazy import LazyCommand, LazyGroup
from ctxcore.plugins.first_party import STANDARD_INSTALL
from ctxcore.plugins.registry import KINDS

__all__ = ["plugins"]


@click.group(cls=LazyGroup, lazy_commands={
    "new": LazyCommand("ctxcore.cli.scaffold:plugins_new",
                       "Scaffold plugin distribution NAME offering one component of --kind."),
})
def plugins() -> None:
    """Inspect installed plugins."""


@plugins.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list (stable fields, sorted by name).")
@click.option("--all", "show_all", is_flag=True, help="Also show plugins excluded by CTXCORE_PLUGINS / CTXCORE_BLOCK_PLUGINS.")
@click.option("--strict", is_flag=True, help="Exit 1 when any plugin failed or conflicts.")
@click.pass_context
def plugins_list(ctx: click.Context, as_json: bool, show_all: bool, strict: bool) -> None:
    """List plugins, their status and the components they register."""
    host = state(ctx).host
    host.registry  # noqa: B018 - the registration hooks fill each plugin's components and integrations
    infos = sorted(host.plugins, key=lambda p: p.name.lower())
    if not show_all:
        infos = [p for p in infos if p.status != "blocked"]
    if as_json:
        click.echo(json.dumps([p.to_dict() for p in infos], indent=2, sort_keys=True))
    else:
        from ctxcore.tools.terminal import cells, make_console, make_table, show

        console = make_console()
        errors = any(p.error for p in infos)  # the error column only when something failed
        columns = ("name", "version", "status", "components", "error")[: 5 if errors else 4]
        table = make_table(console, "ctxcore plugins", columns, wrap=("components", "error"))
        for p in infos:
            comps = ", ".join(
                [f"{k}:{n}" for k in KINDS for n in sorted(p.components.get(k, []))]
                + [f"integration:{i.name}" for i in sorted(p.integrations, key=lambda i: i.name)]
            )
            error = f"{p.error['type']}: {p.error['message']}" if p.error else ""
            table.add_row(*cells(p.name, p.version, p.status, comps, error)[: len(columns)])
        if infos:
            show(console, table)
        else:
            click.echo("no ctxcore plugins are installed: no providers, filters, counters or stores to build with.")
            click.echo(f"install the standard set with: {STANDARD_INSTALL}")
        failed = [p for p in infos if p.status == "failed"]
        if failed and ctx.find_root().params.get("verbose", 0) == 0:
            click.echo("(run with -v for the tracebacks of failed plugins)", err=True)
        for p in failed if ctx.find_root().params.get("verbose", 0) else []:
            click.echo(f"--- {p.name} {p.version}\n{p.traceback}", err=True)
    if strict and any(p.status in ("failed", "conflict") for p in host.plugins):
        sys.exit(1)
