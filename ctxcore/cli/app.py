"""The root ``ctx`` group: options, logging set-up, the built-in command table and plugin-added commands.

Nothing is imported before it is needed: built-in commands are a table of
module and summary (:class:`~ctxcore.cli.lazy.LazyGroup`), and plugin-added
commands (``register_commands``) are listed from
:mod:`~ctxcore.cli.command_cache`, so ``ctx --help`` imports no command module
and no plugin. Plugins load when a command needs components, when a name is not
a built-in command, or when help finds no cached listing. Built-in names win
over plugin-added ones. Machine-readable output goes to stdout; explanations,
warnings and logs go to stderr, so ``ctx build ... --explain | jq`` keeps working.
"""

from __future__ import annotations

import os
import sys

import click

from ctxcore import __version__
from ctxcore.cli import command_cache
from ctxcore.cli.lazy import SHORT_HELP_LIMIT, LazyCommand, LazyGroup, stand_in

__all__ = ["BUILT_IN_COMMANDS", "cli", "main"]

#: every built-in command: name -> where it lives, and its summary (a test holds it equal to the command's)
BUILT_IN_COMMANDS = {
    "build": LazyCommand("ctxcore.cli.build:build",
                         "Build the context of pipeline FILE (or --preset NAME) for the conversation in STATE."),
    "checkpoint": LazyCommand("ctxcore.cli.checkpoint:checkpoint",
                              "Inspect and prune the checkpoints of a pipeline's checkpointer."),
    "count": LazyCommand("ctxcore.cli.counters:count", "Count the tokens of FILES (standard input when none)."),
    "counters": LazyCommand("ctxcore.cli.counters:counters", "Compare the installed token counters."),
    "diff": LazyCommand("ctxcore.cli.diff:diff",
                        "Compare two builds of PIPELINE: two STATES (A.json B.json), two calls of a --replay session, "
                        "or two turns of a --thread."),
    "explain": LazyCommand("ctxcore.cli.explain:explain",
                           "Build FILE for STATE and explain the budget: tokens per source and zone, and every decision."),
    "init": LazyCommand("ctxcore.cli.init:init",
                        "Write a starter pipeline, an example state and the pipeline schema into DIRECTORY."),
    "memory": LazyCommand("ctxcore.cli.memory:memory", "Add to and search the long-term memory of a pipeline."),
    "pipeline": LazyCommand("ctxcore.cli.pipeline:pipeline", "Work with pipeline files."),
    "plugins": LazyCommand("ctxcore.cli.plugins:plugins", "Inspect installed plugins."),
    "replay": LazyCommand("ctxcore.cli.replay:replay_command",
                          "Build PIPELINE's request before every model call recorded in TRANSCRIPT and measure it."),
    "report": LazyCommand("ctxcore.cli.report:report",
                          "Build FILE for STATE and show what the model receives: budget bar, history by fate, tokens, "
                          "decisions."),
    "thread": LazyCommand("ctxcore.cli.thread:thread",
                          "List, show and export the conversations (threads) of a pipeline's checkpointer."),
}


class _RootGroup(LazyGroup):
    """The built-in table, plus the commands plugins add (listed from the cache, loaded when one runs)."""

    _plugins_loaded = False
    _plugin_listing: command_cache.CachedListing | None = None

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        command = super().get_command(ctx, cmd_name)
        if command is None and not self._plugins_loaded:
            self._load_plugin_commands(ctx, command_cache.listing_key(__version__))
            command = super().get_command(ctx, cmd_name)
        return command

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *(c.name for c in self._listing(ctx).commands)})

    def help_commands(self, ctx: click.Context) -> dict[str, click.Command]:
        listed = {c.name: stand_in(c.name, c.summary, hidden=c.hidden) for c in self._listing(ctx).commands}
        return {**listed, **super().help_commands(ctx)}

    def _listing(self, ctx: click.Context) -> command_cache.CachedListing:
        """The plugin-added commands: those loaded, else the cached listing, else load the plugins (and cache them)."""
        if self._plugin_listing is None:
            key = command_cache.listing_key(__version__)
            cached = command_cache.read_listing(key)
            if cached is None:
                cached = self._load_plugin_commands(ctx, key)
            else:
                for warning in cached.warnings:
                    click.echo(warning, err=True)
            self._plugin_listing = cached
        return self._plugin_listing

    def _load_plugin_commands(self, ctx: click.Context, key: str) -> command_cache.CachedListing:
        """Run every plugin's ``register_commands`` on this group and cache what they added and warned."""
        from ctxcore.cli._common import configure_logging_from, state

        self._plugins_loaded = True
        # Runs before the group callback: set logging up from the parsed options now.
        configure_logging_from(ctx.find_root().params)
        before, warnings = set(self.commands), []
        for impl in state(ctx).host.hook.register_commands.get_hookimpls():
            try:
                impl.function(**{arg: self for arg in impl.argnames})
            except Exception as exc:  # one plugin's broken command must not break `ctx`
                warnings.append(f"warning: plugin '{impl.plugin_name}' failed in register_commands: {type(exc).__name__}: {exc}")
                click.echo(warnings[-1], err=True)
        added = sorted(set(self.commands) - before - set(self.lazy_commands))
        self._plugin_listing = command_cache.CachedListing(
            tuple(command_cache.CachedCommand(name, self.commands[name].get_short_help_str(SHORT_HELP_LIMIT),
                                              self.commands[name].hidden) for name in added),
            tuple(warnings),
        )
        command_cache.write_listing(key, self._plugin_listing)
        return self._plugin_listing


@click.group(cls=_RootGroup, lazy_commands=BUILT_IN_COMMANDS, context_settings={"help_option_names": ["-h", "--help"]})
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
    from ctxcore.cli._common import CliState, configure_logging_from

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
