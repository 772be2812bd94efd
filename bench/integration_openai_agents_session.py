"""What one ``add_items`` costs as an Agents SDK session grows: ctxcore's ``CheckpointerSession`` beside the SDK's ``SQLiteSession``.

Usage: ``.venv-ctxcore-openai-agents/bin/python bench/integration_openai_agents_session.py [--items 2000] [--no-write]``
(``make bench-integrations`` runs it in the integration's venv).

Both sessions on a SQLite file, in one process run: a coding agent's turns as
the Responses items the runner stores (a user message, a ``function_call``, its
``function_call_output`` with a ~1.5 KB tool result, the assistant's answer),
one ``add_items`` per turn, until ``--items`` items. Measured: ``add_items`` —
the median of the last five calls before 40 and before ``--items`` items;
``get_items`` — the median of three reads of the whole session by a new
session object. Wall-clock medians on a shared machine: compare ratios from one
run. ctxcore's SQLite store syncs each write to disk (``synchronous=FULL``)
before ``add_items`` returns; the SDK's session does not.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shlex
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from agents import SQLiteSession  # noqa: E402
from ctxcore_openai_agents import CheckpointerSession  # noqa: E402
from report_table import markdown_table, write_section  # noqa: E402

from ctxcore import Pipeline  # noqa: E402

DOC = ROOT / "docs" / "integrations.md"
SECTION = "openai_agents_session"
TOOL_RESULT = ("def handler(event):\n    return process(event['payload'])  # line of a file the agent read\n" * 20)[:1500]


def turn(i: int) -> list[dict[str, Any]]:
    """Turn ``i`` as the runner stores it: user message, function call, its output, the answer."""
    call = f"call_{i:05d}"
    return [
        {"role": "user", "content": f"Step {i}: open src/module_{i}.py and tell me what the handler does."},
        {"type": "function_call", "call_id": call, "name": "read_file", "arguments": json.dumps({"path": f"src/module_{i}.py"})},
        {"type": "function_call_output", "call_id": call, "output": f"# src/module_{i}.py\n" + TOOL_RESULT},
        {"role": "assistant", "content": f"The handler in module {i} forwards the event payload to process()."},
    ]


def measure(make: Callable[[], Any], items: int) -> dict[str, float]:
    """add_items per turn until ``items``; the median of the last five adds before 40 and before ``items``; a cold full read."""
    loop = asyncio.new_event_loop()
    session, times, out = make(), [], {}
    try:
        i = 0
        while i * 4 < items:
            start = time.perf_counter()
            loop.run_until_complete(session.add_items(turn(i)))
            times.append(time.perf_counter() - start)
            i += 1
            if i * 4 == 40:
                out["add_40"] = statistics.median(times[-5:])
        out["add_n"] = statistics.median(times[-5:])
        reads = []
        for _ in range(3):
            fresh = make()
            start = time.perf_counter()
            got = loop.run_until_complete(fresh.get_items())
            reads.append(time.perf_counter() - start)
            if len(got) != i * 4:
                raise AssertionError(f"read {len(got)} items back, expected {i * 4}")
        out["get_n"] = statistics.median(reads)
    finally:
        loop.close()
    return out


def run(items: int) -> dict[str, Any]:
    """Both sessions in a temporary directory; the numbers of each."""
    with tempfile.TemporaryDirectory(prefix="agents-session-") as tmp:
        yaml = f"version: 1\nmodel: {{context_window: 128000}}\nproviders: [{{type: history}}]\ncheckpointer: {{type: sqlite, path: '{tmp}/ctx.db'}}\n"
        ctx = measure(lambda: CheckpointerSession.from_pipeline(Pipeline.from_string(yaml), "bench"), items)
        sdk = measure(lambda: SQLiteSession("bench", f"{tmp}/sdk.db"), items)
    return {"items": items, "ctxcore": ctx, "sdk": sdk}


def _ms(v: float) -> str:
    return f"{v * 1e3:.2f} ms" if v < 0.01 else f"{v * 1e3:.0f} ms"


def table(r: dict[str, Any], command: str) -> str:
    """The docs table: add_items at 40 and at ``items`` items, a full read, for both sessions, and the growth ratios."""
    n = r["items"]
    rows = [[name, _ms(v["add_40"]), _ms(v["add_n"]), f"{v['add_n'] / v['add_40']:.2f}×", _ms(v["get_n"])]
            for name, v in (("ctxcore CheckpointerSession (sqlite)", r["ctxcore"]), ("Agents SDK SQLiteSession", r["sdk"]))]
    return (markdown_table(["session", "add_items @40 items", f"add_items @{n:,} items", f"@{n:,} / @40",
                            f"get_items @{n:,} items"], rows, "lrrrr")
            + f"\n\nMeasured with `{command}` (one run; wall-clock medians on a shared machine).\n")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--no-write", action="store_true", help="print only (the suite's smoke test)")
    args = parser.parse_args(argv)
    result = run(max(args.items, 40))
    command = "make bench-integrations" if os.environ.get("CTXCORE_BENCH_VIA_MAKE") else shlex.join(
        ["python", "bench/integration_openai_agents_session.py", *(argv if argv is not None else sys.argv[1:])])
    body = table(result, command)
    print(body)
    if not args.no_write:
        write_section(DOC, SECTION, body)


if __name__ == "__main__":
    main()
