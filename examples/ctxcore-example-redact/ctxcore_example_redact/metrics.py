"""Build metrics: one JSON line per build, appended to the file ``CTXCORE_METRICS_FILE`` names.

An ``on_build_complete`` observer (see ctxcore's docs/plugins.md). Hooks take
no pipeline options, so the environment configures it: without
``CTXCORE_METRICS_FILE`` it does nothing. Each line holds::

    {"time": "...", "pid": 123, "build": 1, "total_tokens": 812, "budget": 800,
     "utilization": 1.015, "tool_tokens": 0, "messages": 9, "dropped": 4,
     "compressed": 0, "dropped_tokens": 950,
     "by_source": {"chat": {"kept": 7, "kept_tokens": 640, "dropped": 4, "dropped_tokens": 950, ...}}}

``build`` counts this process's builds. Reading the drops counts the dropped
messages (from the count cache when a filter already counted them): this is an
observer that wants them. Each line is written with one ``write`` on a file
opened for appending, so builds in several processes do not interleave lines.
"""

from __future__ import annotations

import itertools
import json
import os
import threading
from datetime import datetime, timezone
from typing import Any

__all__ = ["METRICS_ENV", "BuildMetrics", "metrics_line"]

#: the environment variable naming the JSON-lines file.
METRICS_ENV = "CTXCORE_METRICS_FILE"


def metrics_line(context: Any, build: int) -> dict[str, Any]:
    """The metrics of one finished build (a ``BuiltContext``) as a JSON-ready dict."""
    report = context.report
    by_source = report.totals_by("source")
    return {
        "time": datetime.now(timezone.utc).isoformat(timespec="milliseconds"),
        "pid": os.getpid(),
        "build": build,
        "total_tokens": report.total_tokens,
        "budget": report.budget,
        "utilization": report.utilization,
        "tool_tokens": report.tool_tokens,
        "messages": len(context.messages),
        "dropped": sum(s["dropped"] for s in by_source.values()),
        "compressed": sum(s["compressed"] for s in by_source.values()),
        "dropped_tokens": sum(s["dropped_tokens"] for s in by_source.values()),
        "by_source": by_source,
    }


class BuildMetrics:
    """The observer: appends :func:`metrics_line` of each build to ``$CTXCORE_METRICS_FILE``."""

    def __init__(self) -> None:
        self._builds = itertools.count(1)
        self._lock = threading.Lock()

    def observe(self, context: Any) -> None:
        """Record one build (nothing when the variable is unset or empty)."""
        path = os.environ.get(METRICS_ENV)
        if not path:
            return
        with self._lock:
            line = json.dumps(metrics_line(context, next(self._builds)), sort_keys=True) + "\n"
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode("utf-8"))
        finally:
            os.close(fd)
