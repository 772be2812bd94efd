"""What every ``ctx`` command shares: the per-invocation state, reading inputs, failing cleanly.

A command fails with :func:`fail` (one ``error:`` line on stderr, redacted, exit
1), never with a traceback; pipelines, state files and ``--runtime`` options are
read here so every command words its errors alike.

Every input file is bounded (docs/security.md): its size is checked with
``fstat`` before reading and at most the cap is read (pipelines 1 MB, state and
transcripts ``CTXCORE_MAX_INPUT_BYTES``, default 512 MiB); a FIFO or device is
refused at once; ``-`` reads stdin. JSON must be UTF-8, strict JSON (no
``NaN``), nested at most :data:`MAX_JSON_DEPTH` levels, and free of lone
surrogates, so every later step (rendering, writing the request) can rely on it.
"""

from __future__ import annotations

import json
import os
import re
import sys
from typing import Any, NoReturn

import click

from ctxcore.errors import ConfigError, FileRefused, PluginError
from ctxcore.kit.files import read_capped
from ctxcore.model.safe_yaml import MAX_DOCUMENT_BYTES
from ctxcore.plugins.host import PluginHost
from ctxcore.redaction import redact_text
from ctxcore.tools.terminal import clean

__all__ = [
    "CliState",
    "configure_logging_from",
    "echo_issues",
    "fail",
    "load_pipeline",
    "open_checkpointer",
    "parse_runtime",
    "pipeline_text",
    "read_input",
    "read_json",
    "read_state",
    "shown",
    "state",
    "MAX_JSON_DEPTH",
    "max_input_bytes",
]

#: deepest nesting of a state or transcript JSON document (a message is about 6 levels deep).
MAX_JSON_DEPTH = 100
_DEFAULT_MAX_INPUT = 512 * 1024 * 1024
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89abAB]", re.ASCII)
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")



class CliState:
    """Per-invocation state: the plugin host, loaded on first use."""

    def __init__(self) -> None:
        self._host: PluginHost | None = None
        #: which input (state, pipeline, transcript) read stdin; stdin can be read once
        self.stdin_used: str | None = None

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


def max_input_bytes() -> int:
    """The cap of a state or transcript file: ``CTXCORE_MAX_INPUT_BYTES`` (bytes), default 512 MiB."""
    raw = os.environ.get("CTXCORE_MAX_INPUT_BYTES")
    if raw is None:
        return _DEFAULT_MAX_INPUT
    try:
        value = int(raw)
    except ValueError:
        fail(f"CTXCORE_MAX_INPUT_BYTES={raw!r}: expected a whole number of bytes")
    if value <= 0:
        fail(f"CTXCORE_MAX_INPUT_BYTES={raw!r}: must be positive")
    return value


def read_input(path: str, what: str, max_bytes: int) -> bytes:
    """The bytes of input ``path`` (``-``: stdin, once per invocation); a refused input exits 1 naming the file and rule."""
    if path == "-":
        ctx = click.get_current_context(silent=True)
        if ctx is not None:
            cli_state = state(ctx)
            if cli_state.stdin_used is not None:
                fail(f"{what} '-': stdin is already the {cli_state.stdin_used}; only one input can come from stdin")
            cli_state.stdin_used = what
    try:
        return read_capped(path, max_bytes=max_bytes, what=what)
    except FileRefused as exc:
        hint = " (raise CTXCORE_MAX_INPUT_BYTES to allow it)" if "limit" in str(exc) and what != "pipeline" else ""
        fail(f"{exc}{hint}")


def shown(path: str) -> str:
    """How an input path is named in messages (``-`` is ``<stdin>``)."""
    return "<stdin>" if path == "-" else path


def pipeline_text(path: str) -> str:
    """The text of pipeline file ``path`` (``-``: stdin), at most 1 MB of UTF-8; anything else exits 1 naming it."""
    data = read_input(path, "pipeline", MAX_DOCUMENT_BYTES)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        fail(f"{shown(path)}: the pipeline is not UTF-8 text (invalid byte at offset {exc.start})")


def load_pipeline(ctx: click.Context, path: str, text: str | None = None) -> Any:
    """The :class:`~ctxcore.Pipeline` of ``path`` (``-``: stdin); every located problem is printed before exiting 1.

    ``text`` is the file's content when the caller already read it.
    """
    from ctxcore.pipeline.spec import Pipeline

    if text is None:
        text = pipeline_text(path)
    try:
        return Pipeline.from_string(text, file=shown(path), host=state(ctx).host)
    except ConfigError as exc:
        echo_issues(exc)
        noun = "problem" if len(exc.issues) == 1 else "problems"
        fail(f"{shown(path)}: {len(exc.issues)} {noun}")


def pipeline_component(ctx: click.Context, path: str, attribute: str, missing: str) -> tuple[Any, Any]:
    """``path``'s pipeline and its created component ``attribute`` (``"checkpointer"``, ``"memory"``).

    A pipeline whose components cannot be created prints its issues and exits 1;
    one without the component exits 1 with ``missing`` after the file name.
    """
    p = load_pipeline(ctx, path)
    try:
        component = getattr(p, attribute)
    except ConfigError as exc:
        echo_issues(exc)
        fail(f"{path}: components could not be created")
    if component is None:
        fail(f"{path} {missing}")
    return p, component


def open_checkpointer(ctx: click.Context, path: str, missing: str) -> tuple[Any, Any]:
    """``path``'s pipeline and its created checkpointer, closed when the command ends.

    A pipeline whose components cannot be created prints its issues and exits 1;
    one without a ``checkpointer:`` exits 1 with ``missing`` after the file name.
    """
    p, cp = pipeline_component(ctx, path, "checkpointer", missing)
    close = getattr(cp, "close", None)
    if callable(close):
        ctx.call_on_close(close)
    return p, cp


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON (write null, or a string)")


def _check_shape(data: Any, where: str, what: str, check_strings: bool) -> None:
    """Refuse nesting deeper than MAX_JSON_DEPTH and (when escapes were seen) lone surrogates; one pass, no recursion."""
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            children: Any = value.values()
            if check_strings and any(_LONE_SURROGATE.search(k) for k in value):
                fail(f"{where}: {what} holds a lone surrogate escape (\\ud800-\\udfff) in a key; it is not valid Unicode")
        elif isinstance(value, list):
            children = value
        else:
            if check_strings and isinstance(value, str) and _LONE_SURROGATE.search(value):
                fail(f"{where}: {what} holds a lone surrogate escape (\\ud800-\\udfff); it is not valid Unicode text")
            continue
        if depth > MAX_JSON_DEPTH:
            fail(f"{where}: {what} is nested deeper than {MAX_JSON_DEPTH} levels")
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)) or check_strings)


def read_json(path: str, what: str) -> Any:
    """The JSON document of ``path`` (``-``: stdin); unreadable, oversized or invalid input exits 1 naming the file."""
    where = shown(path)
    data = read_input(path, what, max_input_bytes())
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        fail(f"{where}: {what} is not UTF-8 text (invalid byte at offset {exc.start}); JSON files are UTF-8")
    del data
    try:
        doc = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        fail(f"{where}:{exc.lineno}:{exc.colno}: {what} is not valid JSON: {exc.msg}")
    except ValueError as exc:  # NaN, Infinity
        fail(f"{where}: {what} is not valid JSON: {exc}")
    except RecursionError:
        fail(f"{where}: {what} is nested deeper than {MAX_JSON_DEPTH} levels")
    _check_shape(doc, where, what, check_strings=_SURROGATE_ESCAPE.search(text) is not None)
    return doc


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
    state_file = shown(state_file)
    if not isinstance(data, dict):
        fail(f'{state_file}: the state must be a JSON object like {{"messages": [...]}}')
    tools = data.get("tools")
    if tools is not None and (not isinstance(tools, list) or not all(isinstance(t, dict) for t in tools)):
        fail(f"{state_file}: 'tools' must be a list of tool definitions (JSON objects), "
              'like [{"type": "function", "function": {"name": ..., "parameters": {...}}}]')
    return data
