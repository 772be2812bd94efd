"""``ctx``: the command-line interface.

Plugins load lazily: built-in commands that need components load them when
they run, and plugin-added commands (``register_commands``) are looked up only
when a name is not a built-in command or when help lists the commands.
Machine-readable output goes to stdout; explanations, warnings and logs go to
stderr, so ``ctx build ... --explain | jq`` keeps working.
"""

from __future__ import annotations

import json
import sys
from typing import Any, NoReturn

import click

from ctxcore import __version__
from ctxcore.errors import ConfigError, CtxError, PluginError
from ctxcore.plugins import PluginHost
from ctxcore.registry import KINDS

__all__ = ["cli", "main"]


class _CliState:
    """Per-invocation state: the plugin host, loaded on first use."""

    def __init__(self) -> None:
        self._host: PluginHost | None = None

    @property
    def host(self) -> PluginHost:
        if self._host is None:
            try:
                self._host = PluginHost.load()
            except PluginError as exc:
                _fail(str(exc))
        return self._host


def _state(ctx: click.Context) -> _CliState:
    return ctx.find_root().ensure_object(_CliState)


def _echo_issues(exc: ConfigError) -> None:
    """Print each located problem of a pipeline on its own stderr line."""
    for issue in exc.issues:
        click.echo(str(issue), err=True)


def _fail(message: str, code: int = 1) -> NoReturn:
    from ctxcore.redaction import redact_text

    click.echo(f"error: {redact_text(message)}", err=True)  # an error may quote a DSN or a header
    sys.exit(code)


def _configure_logging(params: dict[str, Any]) -> None:
    """Set logging up from the root command's options (``--log-level`` wins over ``-v``)."""
    from ctxcore.logging_setup import configure_logging

    level = params.get("log_level") or {0: "warning", 1: "info"}.get(params.get("verbose") or 0, "debug")
    configure_logging(level, params.get("log_format") or "console")


class _PluginCommandsGroup(click.Group):
    """A click group that asks plugins for extra commands only when needed."""

    def _load_plugin_commands(self, ctx: click.Context) -> None:
        if getattr(self, "_plugin_commands_loaded", False):
            return
        self._plugin_commands_loaded = True
        # Runs before the group callback: set logging up from the parsed options now.
        _configure_logging(ctx.find_root().params)
        for impl in _state(ctx).host.hook.register_commands.get_hookimpls():
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


@click.group(cls=_PluginCommandsGroup)
@click.version_option(__version__, prog_name="ctx")
@click.option("-v", "--verbose", count=True, help="More log output on stderr (-v info, -vv debug).")
@click.option("--log-level", type=click.Choice(["debug", "info", "warning", "error"]), envvar="CTXCORE_LOG_LEVEL",
              help="Log level on stderr (default warning; wins over -v).  [env: CTXCORE_LOG_LEVEL]")
@click.option("--log-format", type=click.Choice(["console", "json"]), default="console", envvar="CTXCORE_LOG_FORMAT",
              show_default=True, help="console: one readable line per event; json: one JSON object per line.  [env: CTXCORE_LOG_FORMAT]")
@click.pass_context
def cli(ctx: click.Context, verbose: int, log_level: str | None, log_format: str) -> None:
    """Build, inspect and validate LLM contexts with ctxcore pipelines."""
    _configure_logging(ctx.params)
    ctx.ensure_object(_CliState)


# ------------------------------------------------------------------ plugins
@cli.group()
def plugins() -> None:
    """Inspect installed plugins."""


@plugins.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list (stable fields, sorted by name).")
@click.option("--all", "show_all", is_flag=True, help="Also show plugins excluded by CTXCORE_PLUGINS / CTXCORE_BLOCK_PLUGINS.")
@click.option("--strict", is_flag=True, help="Exit 1 when any plugin failed or conflicts.")
@click.pass_context
def plugins_list(ctx: click.Context, as_json: bool, show_all: bool, strict: bool) -> None:
    """List plugins, their status and the components they register."""
    host = _state(ctx).host
    infos = sorted(host.plugins, key=lambda p: p.name.lower())
    if not show_all:
        infos = [p for p in infos if p.status != "blocked"]
    if as_json:
        click.echo(json.dumps([p.to_dict() for p in infos], indent=2, sort_keys=True))
    else:
        from rich.console import Console
        from rich.table import Table

        table = Table(title="ctxcore plugins")
        for column in ("name", "version", "status", "components", "error"):
            table.add_column(column)
        for p in infos:
            comps = ", ".join(f"{k}:{n}" for k in KINDS for n in sorted(p.components.get(k, [])))
            error = f"{p.error['type']}: {p.error['message']}" if p.error else ""
            table.add_row(p.name, p.version, p.status, comps, error)
        Console(width=200).print(table)
        failed = [p for p in infos if p.status == "failed"]
        if failed and ctx.find_root().params.get("verbose", 0) == 0:
            click.echo("(run with -v for the tracebacks of failed plugins)", err=True)
        for p in failed if ctx.find_root().params.get("verbose", 0) else []:
            click.echo(f"--- {p.name} {p.version}\n{p.traceback}", err=True)
    if strict and any(p.status in ("failed", "conflict") for p in host.plugins):
        sys.exit(1)


# ----------------------------------------------------------------- pipeline
@cli.group()
def pipeline() -> None:
    """Work with pipeline files."""


def _load_pipeline(ctx: click.Context, path: str) -> Any:
    from ctxcore.pipeline import Pipeline

    try:
        return Pipeline.from_yaml(path, host=_state(ctx).host)
    except ConfigError as exc:
        _echo_issues(exc)
        noun = "problem" if len(exc.issues) == 1 else "problems"
        _fail(f"{path}: {len(exc.issues)} {noun}")


@pipeline.command("validate")
@click.argument("file", type=click.Path(dir_okay=False))
@click.pass_context
def pipeline_validate(ctx: click.Context, file: str) -> None:
    """Check FILE and create its components; print every problem with its line."""
    p = _load_pipeline(ctx, file)
    try:
        p.builder()
    except ConfigError as exc:
        _echo_issues(exc)
        _fail(f"{file}: components could not be created")
    for warning in p.warnings:
        click.echo(f"warning: {warning}", err=True)
    builder = p.builder()
    counter = p.spec.counter.type if p.spec.counter else "approximate (default)"
    click.echo(f"ok: {file} — {len(builder.providers)} providers, {len(builder.filters)} filters, counter {counter}")


# -------------------------------------------------------------------- build
def _read_json(path: str, what: str) -> Any:
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except OSError as exc:
        _fail(f"cannot read {what} {path}: {exc.strerror}")
    except json.JSONDecodeError as exc:
        _fail(f"{path}:{exc.lineno}:{exc.colno}: {what} is not valid JSON: {exc.msg}")


def _parse_runtime(items: tuple[str, ...]) -> dict[str, str]:
    """The ``--runtime KEY=VALUE`` options as a dict; a malformed item exits 1 naming it."""
    runtime: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            _fail(f"--runtime {item!r}: expected KEY=VALUE")
        runtime[key] = value
    return runtime


def _read_state(state_file: str) -> dict[str, Any]:
    """The state JSON object of ``state_file``; a wrong shape exits 1 naming the file and the expected shape."""
    state = _read_json(state_file, "state")
    if not isinstance(state, dict):
        _fail(f'{state_file}: the state must be a JSON object like {{"messages": [...]}}')
    tools = state.get("tools")
    if tools is not None and (not isinstance(tools, list) or not all(isinstance(t, dict) for t in tools)):
        _fail(f"{state_file}: 'tools' must be a list of tool definitions (JSON objects), "
              'like [{"type": "function", "function": {"name": ..., "parameters": {...}}}]')
    return state


@cli.command()
@click.argument("file", type=click.Path(dir_okay=False), required=False)
@click.option("--preset", help="Build with a preset pipeline (chat, react, skill, agent) instead of FILE.")
@click.option("--state", "state_file", required=True, type=click.Path(dir_okay=False), help='JSON file: {"messages": [OpenAI-style dicts...]}.')
@click.option("--format", "fmt", type=click.Choice(["openai", "json"]), default="openai", show_default=True,
              help="openai: the request's messages; json: ctxcore messages with provenance plus the report.")
@click.option("--explain", is_flag=True, help="Print the build report as tables on stderr.")
@click.option("--runtime", "runtime_items", multiple=True, metavar="KEY=VALUE", help="Runtime values passed to providers.")
@click.pass_context
def build(ctx: click.Context, file: str | None, preset: str | None, state_file: str, fmt: str, explain: bool,
          runtime_items: tuple[str, ...]) -> None:
    """Build the context of pipeline FILE (or --preset NAME) for the conversation in STATE."""
    from ctxcore.cli_presets import load_file_or_preset

    p = load_file_or_preset(ctx, file, preset)
    file = file or f"preset {preset}"
    state = _read_state(state_file)
    runtime = _parse_runtime(runtime_items)
    try:
        built = p.build(state, runtime)
    except ConfigError as exc:
        _echo_issues(exc)
        _fail(f"{file}: components could not be created")
    except CtxError as exc:
        _fail(f"{type(exc).__name__}: {exc}")
    if fmt == "openai":
        click.echo(json.dumps(built.to_openai(), indent=2, ensure_ascii=False))
    else:
        payload = {
            "messages": [m.model_dump(mode="json") for m in built.messages],
            "report": built.report.to_dict(),
        }
        click.echo(json.dumps(payload, indent=2, ensure_ascii=False))
    if explain:
        from ctxcore._explain import print_report
        from ctxcore.cli_explain import print_explain

        print_report(built.report)
        print_explain(built.report)


def main() -> None:
    """Console-script entry point."""
    cli(prog_name="ctx")


if __name__ == "__main__":  # pragma: no cover
    # Run the imported module's group: `python -m ctxcore.cli` executes this file as
    # __main__, and the cli_* modules below register their commands on ctxcore.cli.
    from ctxcore.cli import main as _main

    _main()


from ctxcore import cli_counters as _cli_counters  # noqa: E402,F401
from ctxcore import cli_presets as _cli_presets  # noqa: E402,F401
from ctxcore import cli_memory as _cli_memory  # noqa: E402,F401
from ctxcore import cli_explain as _cli_explain  # noqa: E402,F401
from ctxcore import cli_checkpoint as _cli_checkpoint  # noqa: E402,F401
from ctxcore import cli_scaffold as _cli_scaffold  # noqa: E402,F401
from ctxcore import cli_report as _cli_report  # noqa: E402,F401
from ctxcore import cli_replay as _cli_replay  # noqa: E402,F401
from ctxcore import cli_schema as _cli_schema  # noqa: E402,F401
from ctxcore import cli_init as _cli_init  # noqa: E402,F401
