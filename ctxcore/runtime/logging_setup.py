"""One logging set-up for the CLI and library users: structlog, two formats, secrets redacted.

:func:`configure_logging` configures structlog (every ``structlog.get_logger``
of ctxcore and its plugins) and routes the standard library's ``logging``
(psycopg, urllib3, transformers ...) through the same processors, so every
line on the stream has one format and passes the redaction of
:mod:`ctxcore.redaction`:

* ``console`` — ``2026-11-29T23:00:00Z [debug    ] pipeline_loaded  file=... steps=...``
* ``json`` — one JSON object per line: ``{"event": ..., "level": ..., "timestamp": ..., "logger": ...}``

The chain, for structlog events and stdlib records alike: context variables,
level, logger name, UTC timestamp, stack and exception text (an exception is
rendered into the ``exception`` key here, *before* redaction, so a secret in an
exception message is removed like any other), then :func:`redact_event`, then
the renderer. Calling :func:`configure_logging` again replaces the previous set-up
(it never adds a second handler). See docs/logging.md.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import sys
from collections.abc import Mapping
from typing import Any, TextIO, cast

import structlog
from pydantic import BaseModel
from structlog.typing import EventDict, Processor, WrappedLogger

from ctxcore.redaction import DEFAULT_REDACTOR, Redactor

__all__ = ["LEVELS", "FORMATS", "configure_logging", "configure_default_logging", "redact_event", "RedactingProcessor"]

#: level names accepted by :func:`configure_logging` and ``--log-level``.
LEVELS: dict[str, int] = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}
#: output formats accepted by :func:`configure_logging` and ``--log-format``.
FORMATS: tuple[str, ...] = ("console", "json")

# Private test hook: False turns redaction off (tests prove that, without it,
# the canary secrets do reach the log). Never set by ctxcore itself.
_redaction_enabled = True

_HANDLER_MARK = "_ctxcore_handler"
_PLAIN = (str, int, float, bool, type(None))


class RedactingProcessor:
    """A structlog processor that removes secrets from every key and the event text.

    Values under a secret key name (``api_key``, ``authorization``, ``dsn_password`` ...)
    are replaced whole; strings anywhere (nested dicts and lists included) lose
    secret-looking substrings (``sk-…``, ``Bearer …``, ``AIza…``, ``user:password@``).
    Objects that are not plain data are first turned into data (pydantic models)
    or text (``str(obj)``), so nothing reaches the renderer unscanned.
    """

    def __init__(self, redactor: Redactor = DEFAULT_REDACTOR) -> None:
        self.redactor = redactor

    def __call__(self, logger: WrappedLogger, method_name: str, event_dict: EventDict) -> EventDict:
        if not _redaction_enabled:
            return {k: _plain(v) for k, v in event_dict.items()}
        out: EventDict = {}
        for key, value in event_dict.items():
            if key.startswith("_"):  # structlog's own bookkeeping (ProcessorFormatter's _record)
                out[key] = value
            elif key not in ("event", "exception") and self.redactor.is_secret_key(key):
                out[key] = self.redactor.replacement
            else:
                out[key] = self.redactor.value(_plain(value))
        return out


def redact_event(logger: WrappedLogger, method_name: str, event_dict: EventDict) -> EventDict:
    """The default :class:`RedactingProcessor` as a plain function (for your own structlog chains)."""
    return _DEFAULT_PROCESSOR(logger, method_name, event_dict)


_DEFAULT_PROCESSOR = RedactingProcessor()


def _plain(value: Any) -> Any:
    """``value`` as JSON-like data: models and dataclasses by field, containers walked, bytes decoded,
    anything else as ``str``, so the redactor sees every key (its key rule) and every string (its patterns)."""
    if isinstance(value, _PLAIN):
        return value
    if isinstance(value, BaseModel):
        return _plain(value.model_dump(by_alias=True))  # python mode: a tuple field stays a tuple (a header pair)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):  # a Message, a report row: walked by field
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", "replace")
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, tuple):  # kept a tuple: a ("Authorization", "...") pair is redacted as a pair
        return tuple(_plain(v) for v in value)
    if isinstance(value, (list, set, frozenset)):
        return [_plain(v) for v in value]
    return str(value)


def _add_logger_name(logger: WrappedLogger, method_name: str, event_dict: EventDict) -> EventDict:
    record = event_dict.get("_record")
    name = record.name if record is not None else getattr(logger, "name", None)
    if name and "logger" not in event_dict:
        event_dict["logger"] = name
    return event_dict


class _NamedPrintLogger(structlog.PrintLogger):
    """A PrintLogger that remembers the name given to ``structlog.get_logger(name)``."""

    def __init__(self, file: TextIO, name: str | None) -> None:
        super().__init__(file)
        self.name = name


class _LoggerFactory:
    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def __call__(self, *args: Any) -> _NamedPrintLogger:
        return _NamedPrintLogger(self.stream, str(args[0]) if args else None)


def _chain(redactor: Redactor) -> list[Processor]:
    """Every processor up to (not including) the renderer, shared by structlog and stdlib records."""
    return [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        _add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.processors.StackInfoRenderer(),
        structlog.processors.format_exc_info,  # exception -> text, so redaction sees it
        RedactingProcessor(redactor),
    ]


def _renderer(fmt: str) -> Processor:
    if fmt == "json":
        return structlog.processors.JSONRenderer(serializer=json.dumps, default=str, ensure_ascii=False)
    return structlog.dev.ConsoleRenderer(colors=False)


def configure_logging(
    level: str | int = "warning",
    fmt: str = "console",
    stream: TextIO | None = None,
    *,
    redactor: Redactor = DEFAULT_REDACTOR,
    stdlib: bool = True,
) -> None:
    """Configure structlog (and, with ``stdlib``, the root ``logging`` logger) once for the process.

    Args:
        level: ``debug``, ``info``, ``warning`` or ``error`` (or a ``logging`` level number).
        fmt: ``console`` (one readable line per event) or ``json`` (one JSON object per line).
        stream: where lines go; default ``sys.stderr`` at the time of the call.
        redactor: the rules (default: :data:`ctxcore.redaction.DEFAULT_REDACTOR`; use
            ``DEFAULT_REDACTOR.extended(key_names=..., value_patterns=...)`` to add your own).
        stdlib: also route standard-library ``logging`` records through the same
            processors (replacing handlers an earlier call installed, not yours).

    Raises:
        ValueError: an unknown level or format (the message lists the accepted ones).
    """
    if isinstance(level, str):
        if level.lower() not in LEVELS:
            raise ValueError(f"unknown log level {level!r}; use one of {', '.join(LEVELS)}")
        number = LEVELS[level.lower()]
    else:
        number = int(level)
    if fmt not in FORMATS:
        raise ValueError(f"unknown log format {fmt!r}; use one of {', '.join(FORMATS)}")
    stream = stream if stream is not None else sys.stderr
    chain = _chain(redactor)
    renderer = _renderer(fmt)
    structlog.configure(
        processors=[*chain, renderer],
        wrapper_class=structlog.make_filtering_bound_logger(number),
        logger_factory=_LoggerFactory(stream),
        cache_logger_on_first_use=False,
    )
    root = logging.getLogger()
    for handler in [h for h in root.handlers if getattr(h, _HANDLER_MARK, False)]:
        root.removeHandler(handler)
    if stdlib:
        handler = logging.StreamHandler(stream)
        setattr(handler, _HANDLER_MARK, True)
        handler.setFormatter(
            structlog.stdlib.ProcessorFormatter(
                foreign_pre_chain=chain,
                processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, renderer],
            )
        )
        handler.setLevel(number)
        root.addHandler(handler)
        root.setLevel(number)


class _StderrAtWrite:
    """``sys.stderr`` looked up at every write, so the default set-up follows redirections
    (``contextlib.redirect_stderr``, pytest's capture) made after ctxcore was imported."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


def configure_default_logging() -> bool:
    """A quiet, redacted default for library users who have not configured structlog.

    structlog's own default prints every event, debug included and unredacted,
    to stdout: a program that only imports ctxcore would get ``pipeline_loaded``
    (with the step options, API keys included) mixed into its output. ctxcore
    therefore calls this on import: when structlog is not configured yet, its
    events go to stderr at ``warning`` and above, through the redaction chain;
    the standard library's ``logging`` is left alone. An application that
    configures structlog (before or after importing ctxcore) or calls
    :func:`configure_logging` keeps its own set-up. Returns whether it configured.
    """
    if structlog.is_configured():
        return False
    configure_logging("warning", "console", cast(TextIO, _StderrAtWrite()), stdlib=False)
    return True
