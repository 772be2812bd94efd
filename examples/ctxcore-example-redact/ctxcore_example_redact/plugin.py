"""Entry point of ctxcore-example-redact: the ``redact`` filter and the build-metrics observer."""

from __future__ import annotations

from typing import Any

from ctxcore import hookimpl
from ctxcore_example_redact.metrics import BuildMetrics
from ctxcore_example_redact.redact import Redact, RedactConfig

#: one observer per process: its build counter numbers the lines it writes.
METRICS = BuildMetrics()


def _redact(config: RedactConfig) -> Redact:
    return Redact(config)


@hookimpl
def register_filters(register: Any) -> None:
    """Offer the ``redact`` filter."""
    register("redact", _redact, config=RedactConfig,
             description="Replace secrets (API keys, bearer tokens, passwords...) in message text and tool calls.")


@hookimpl
def on_build_complete(context: Any) -> None:
    """Append this build's metrics to $CTXCORE_METRICS_FILE (when set)."""
    METRICS.observe(context)
