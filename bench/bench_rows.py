"""Rows a bench script judged against its bound, reported to ``make bench`` (bench/run_all.py).

A script calls :func:`report_row` once per judged row. When ``make bench`` runs
it, ``CTXCORE_BENCH_ROWS`` names a file the runner reads afterwards, one JSON
object a line, so the runner can list every missed row at the end of the whole
run instead of stopping at the first script that failed. Run by hand, nothing
is written.
"""

from __future__ import annotations

import json
import os

__all__ = ["ROWS_ENV", "report_row"]

ROWS_ENV = "CTXCORE_BENCH_ROWS"


def report_row(script: str, row: str, met: bool, detail: str = "") -> None:
    """Record that ``script``'s row ``row`` met its bound or not (``detail``: the measured value and the bound)."""
    path = os.environ.get(ROWS_ENV)
    if not path:
        return
    with open(path, "a", encoding="utf-8") as out:
        out.write(json.dumps({"script": script, "row": row, "met": met, "detail": detail}) + "\n")
