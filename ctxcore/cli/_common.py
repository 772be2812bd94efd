"""What every ``ctx`` command shares: the per-invocation state, reading inputs, failing cleanly.

A command fails with :func:`fail` (one ``error:`` line on stderr, redacted, exit
1), never with a traceback; pipelines, state files and ``--runtime`` options are
read here so every command words its errors alike.
"""

from __future__ import annotations

import json
import sys
from typing import Any, NoReturn

import click

from ctxcore.errors import ConfigError, PluginError
from ctxcore.plugins.host import PluginHost
from ctxcore.redaction import redact_text
from ctxcore.tools.terminal import clean

__all__ = [
    "CliState",
    "configure_logging_from",
    "echo_issues",
    "fail",
    "load_pipeline",
    "parse_runtime",
    "read_json",
    "read_state",
    "state",
]


class CliState:
    """Per-invocation state: the plugin host, loaded on first use."""

    def __init__(self) -> None:
        self._host: PluginHost | None = None

    @property
    def host(self) -> PluginHost:
        if self._host is None:
            try:
                self._host = PluginHost.load()
            except PluginError as exc:
                fail(str(exc))
        return self._host


def state(ctx: click.Context) -> CliState:
    """The invocation's :class:`CliState` (created on first use)."""
    return ctx.find_root().ensure_object(CliState)


def echo_issues(exc: ConfigError) -> None:
    """Print each located problem of a pipeline on its own stderr line."""
    for issue in exc.issues:
        click.echo(clean(str(issue)), err=True)


def fail(message: str, code: int = 1) -> NoReturn:
    """Print ``error: MESSAGE`` (secrets redacted, control characters escaped) on stderr and exit with ``code``."""
    click.echo(f"error: {clean(redact_text(message))}", err=True)  # an error may quote a DSN, a header or user text
    sys.exit(code)


def configure_logging_from(params: dict[str, Any]) -> None:
    """Set logging up from the root command's options (``--log-level`` wins over ``-v``)."""
    from ctxcore.runtime.logging_setup import configure_logging

    level = params.get("log_level") or {0: "warning", 1: "info"}.get(params.get("verbose") or 0, "debug")
    configure_logging(level, params.get("log_format") or "console")


def load_pipeline(ctx: click.Context, path: str) -> Any:
    """The :class:`~ctxcore.Pipeline` of ``path``; every located problem is printed before exiting 1."""
    from ctxcore.pipeline.spec import Pipeline

    try:
        return Pipeline.from_yaml(path, host=state(ctx).host)
    except ConfigError as exc:
        echo_issues(exc)
        noun = "problem" if len(exc.issues) == 1 else "problems"
        fail(f"{path}: {len(exc.issues)} {noun}")


def read_json(path: str, what: str) -> Any:
    """The JSON document of ``path``; unreadable or invalid JSON exits 1 naming the file (and line)."""
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except OSError as exc:
        fail(f"cannot read {what} {path}: {exc.strerror}")
    except json.JSONDecodeError as exc:
        fail(f"{path}:{exc.lineno}:{exc.colno}: {what} is not valid JSON: {exc.msg}")


def parse_runtime(items: tuple[str, ...]) -> dict[str, str]:
    """The ``--runtime KEY=VALUE`` options as a dict; a malformed item exits 1 naming it."""
    runtime: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            fail(f"--runtime {item!r}: expected KEY=VALUE")
        runtime[key] = value
    return runtime


def read_state(state_file: str) -> dict[str, Any]:
    """The state JSON object of ``state_file``; a wrong shape exits 1 naming the file and the expected shape."""
    data = read_json(state_file, "state")
    if not isinstance(data, dict):
        fail(f'{state_file}: the state must be a JSON object like {{"messages": [...]}}')
    tools = data.get("tools")
    if tools is not None and (not isinstance(tools, list) or not all(isinstance(t, dict) for t in tools)):
        fail(f"{state_file}: 'tools' must be a list of tool definitions (JSON objects), "
              'like [{"type": "function", "function": {"name": ..., "parameters": {...}}}]')
    return data
