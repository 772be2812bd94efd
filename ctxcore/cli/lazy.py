"""A click group whose commands are imported only when one of them runs.

A :class:`LazyGroup` holds a table of command name -> (``module:attribute``,
summary). Help lists the table's summaries without importing anything, and a
command's module is imported the first time the command is looked up to run
(click's "lazily loading subcommands" pattern). A test holds every summary
equal to its command's own short help, so the two never drift.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any, NamedTuple

import click

__all__ = ["LazyCommand", "LazyGroup", "SHORT_HELP_LIMIT", "stand_in"]

#: the summary a table or cache keeps is the short help at this width: the whole first sentence
SHORT_HELP_LIMIT = 10_000


class LazyCommand(NamedTuple):
    """Where a command lives and its one-line summary for help."""

    target: str  # "package.module:attribute"
    summary: str


def stand_in(name: str, summary: str, *, hidden: bool = False) -> click.Command:
    """A command that only carries ``summary`` for help (click shortens it to the terminal's width)."""
    return click.Command(name, help=summary, hidden=hidden)


class LazyGroup(click.Group):
    """A group whose table commands load on first use; the table wins over a same-named added command."""

    def __init__(self, *args: Any, lazy_commands: Mapping[str, LazyCommand] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy_commands: dict[str, LazyCommand] = dict(lazy_commands or {})
        self._imported: dict[str, click.Command] = {}

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy_commands:
            return self._import(cmd_name)
        return super().get_command(ctx, cmd_name)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.lazy_commands, *self.commands})

    def help_commands(self, ctx: click.Context) -> dict[str, click.Command]:
        """What help lists: the imported command where there is one, else a stand-in with the table's summary."""
        listed = {name: command for name, command in self.commands.items() if name not in self.lazy_commands}
        for name, entry in self.lazy_commands.items():
            listed[name] = self._imported.get(name) or stand_in(name, entry.summary)
        return listed

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        click.Group.format_commands(click.Group(self.name, commands=self.help_commands(ctx)), ctx, formatter)

    def _import(self, cmd_name: str) -> click.Command:
        command = self._imported.get(cmd_name)
        if command is None:
            module_name, _, attribute = self.lazy_commands[cmd_name].target.partition(":")
            command = getattr(importlib.import_module(module_name), attribute)
            if not isinstance(command, click.Command):
                raise TypeError(f"{self.lazy_commands[cmd_name].target} is not a click command")
            self._imported[cmd_name] = command
        return command
