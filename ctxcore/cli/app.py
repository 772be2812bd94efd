"""The root ``ctx`` group: options, logging set-up and plugin-added commands.

Plugins load lazily: built-in commands that need components load them when
they run, and plugin-added commands (``register_commands``) are looked up only
when a name is not a built-in command or when help lists the commands.
Machine-readable output goes to stdout; explanations, warnings and logs go to
stderr, so ``ctx build ... --explain | jq`` keeps working. The built-in
commands are attached in :mod:`ctxcore.cli`.
"""

from __future__ import annotations

import os
import sys

import click

from ctxcore import __version__
from ctxcore.cli._common import CliState, configure_logging_from, state

__all__ = ["cli", "main"]


class _PluginCommandsGroup(click.Group):
    """A click group that asks plugins for extra commands only when needed."""

    def _load_plugin_commands(self, ctx: click.Context) -> None:
        if getattr(self, "_plugin_commands_loaded", False):
            return
        self._plugin_commands_loaded = True
        # Runs before the group callback: set logging up from the parsed options now.
        configure_logging_from(ctx.find_root().params)
        for impl in state(ctx).host.hook.register_commands.get_hookimpls():
            try:
                impl.function(**{arg: self for arg in impl.argnames})
            except Exception as exc:  # one plugin's broken command must not break `ctx`
                click.echo(f"warning: plugin '{impl.plugin_name}' failed in register_commands: {type(exc).__name__}: {exc}", err=True)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        command = super().get_command(ctx, cmd_name)
        if command is None:
            self._load_plugin_commands(ctx)
            command = super().get_command(ctx, cmd_name)
        return command

    def list_commands(self, ctx: click.Context) -> list[str]:
        self._load_plugin_commands(ctx)
        return super().list_commands(ctx)


@click.group(cls=_PluginCommandsGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="ctx")
@click.option("-v", "--verbose", count=True, help="More log output on stderr (-v info, -vv debug).")
@click.option("--log-level", type=click.Choice(["debug", "info", "warning", "error"]), envvar="CTXCORE_LOG_LEVEL",
              help="Log level on stderr (default warning; wins over -v).  [env: CTXCORE_LOG_LEVEL]")
@click.option("--log-format", type=click.Choice(["console", "json"]), default="console", envvar="CTXCORE_LOG_FORMAT",
              show_default=True, help="console: one readable line per event; json: one JSON object per line.  [env: CTXCORE_LOG_FORMAT]")
@click.option("-q", "--quiet", is_flag=True, envvar="CTXCORE_QUIET",
              help="No progress bars on stderr (they are drawn only on a terminal anyway).  [env: CTXCORE_QUIET]")
@click.pass_context
def cli(ctx: click.Context, verbose: int, log_level: str | None, log_format: str, quiet: bool) -> None:
    """Build, inspect and validate LLM contexts with ctxcore pipelines."""
    configure_logging_from(ctx.params)
    ctx.ensure_object(CliState)


def main() -> None:
    """Console-script entry point.

    The last line of defence for "no traceback reaches a user": an exception no
    command turned into an ``error:`` line is printed as one (a bug to report);
    ``CTXCORE_TRACEBACK=1`` shows the traceback instead. The CLI fuzz test
    (tests/test_cli_fuzz.py) fails on any such exception, so this never hides one.
    """
    try:
        cli(prog_name="ctx")
    except Exception as exc:
        if os.environ.get("CTXCORE_TRACEBACK") == "1":
            raise
        from ctxcore.redaction import redact_text

        click.echo(f"error: internal error: {type(exc).__name__}: {redact_text(str(exc))} "
                   "(a bug in ctx or a plugin; CTXCORE_TRACEBACK=1 shows the traceback)", err=True)
        sys.exit(1)
