"""Entry point of ctxcore-example-truncate: registers the ``truncate_tool_results`` filter."""

from __future__ import annotations

from typing import Any

from ctxcore import hookimpl
from ctxcore_example_truncate.truncate import TruncateConfig, TruncateToolResults


def _truncate(config: TruncateConfig) -> TruncateToolResults:
    return TruncateToolResults(config.max_chars, config.marker)


@hookimpl
def register_filters(register: Any) -> None:
    """Offer the ``truncate_tool_results`` filter."""
    register("truncate_tool_results", _truncate, config=TruncateConfig,
             description="Shorten tool results longer than max_chars.")
