"""``ctx plugins new``: scaffold a plugin distribution (see :mod:`ctxcore.tools.scaffold`)."""

from __future__ import annotations

import click

from ctxcore.cli._common import fail
from ctxcore.tools.scaffold import SCAFFOLD_KINDS, ScaffoldError, create_plugin, plugin_names


@click.command("new")
@click.argument("name")
@click.option("--kind", required=True, type=click.Choice(SCAFFOLD_KINDS), help="The kind of component the plugin offers.")
@click.option("--dir", "directory", default=".", show_default=True, type=click.Path(file_okay=False),
              help="Where to create the NAME directory.")
@click.option("--component", help="The component's name in pipelines (default: NAME without 'ctxcore-', '-' -> '_').")
def plugins_new(name: str, kind: str, directory: str, component: str | None) -> None:
    """Scaffold plugin distribution NAME offering one component of --kind.

    It installs with pip, passes its own tests (the matching ctxcore.testing
    contract) and shows in `ctx plugins list` as generated; then make it yours.
    """
    try:
        names = plugin_names(name, kind, component)
        target = create_plugin(name, kind, directory, component)
    except ScaffoldError as exc:
        fail(str(exc), code=2)
    click.echo(f"created {target} ({kind} {names.component!r} in {names.package}/{names.module}.py)")
    click.echo("next:")
    click.echo(f"  pip install -e {target}")
    click.echo(f"  python -m pytest {target / 'tests'}")
    click.echo("  ctx plugins list")
