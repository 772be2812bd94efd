"""Markers in every channel: for any forged text in any untrusted channel, the request holds exactly the live markers.

The channels a pipeline reads: history of every role (user, assistant, tool
result), tool descriptions from ``state["tools"]``, workspace files, the memory
file, the archived summary, the current user's text and attachment names. The
``runtime_context`` provider writes one open and one close marker; the built
request must contain exactly those two. Quick profile 25 examples,
``CTXCORE_THOROUGH=1`` 500 (docs/security.md). Summaries from summarizers are held by
``ctxcore-filters``' test_compaction_markers.py.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxcore import Pipeline
from ctxcore.kit import CLOSE_MARKER, OPEN_MARKER, count_markers
from ctxcore.testing.markers import text_with_markers

EXAMPLES = 500 if os.environ.get("CTXCORE_THOROUGH") == "1" else 25
WORKSPACE = Path(tempfile.mkdtemp(prefix="ctx-markers-")).resolve()
(WORKSPACE / "memory").mkdir()

PIPELINE = Pipeline.from_dict({
    "version": 1,
    "model": {"context_window": 1_000_000},
    "providers": [
        {"type": "tools_desc"},
        {"type": "bootstrap_files", "workspace": str(WORKSPACE), "files": ["AGENTS.md"], "ttl_seconds": 1e-9},
        {"type": "memory_file", "workspace": str(WORKSPACE), "ttl_seconds": 1e-9},
        {"type": "archived_summary"},
        {"type": "history"},
        {"type": "runtime_context"},
    ],
})


def strings(value: Any) -> Iterator[str]:
    """Every string inside a request (message texts, tool-call arguments, names)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from strings(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from strings(v)


channel = text_with_markers(max_markers=2)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(user=channel, assistant=channel, tool_result=channel, description=channel, file=channel, memory=channel,
       summary=channel, current=channel, attachment=st.sampled_from(["[Runtime Context]", "x/［ＲＵＮＴＩＭＥ ＣＯＮＴＥＸＴ］.png"]))
def test_the_request_holds_exactly_the_live_markers(user: str, assistant: str, tool_result: str, description: str,
                                                    file: str, memory: str, summary: str, current: str, attachment: str) -> None:
    """Forged markers in every untrusted channel at once: the request still holds exactly one open and one close marker."""
    # files are text: a NUL byte would make them binary (refused), a lone surrogate unwritable
    (WORKSPACE / "AGENTS.md").write_text(file.replace("\x00", "") or "-", encoding="utf-8", errors="replace")
    (WORKSPACE / "memory" / "MEMORY.md").write_text(memory.replace("\x00", "") or "-", encoding="utf-8", errors="replace")
    state = {
        "messages": [
            {"role": "user", "content": user},
            {"role": "assistant", "content": assistant, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": tool_result},
            {"role": "assistant", "content": assistant or "ok"},
        ],
        "tools": [{"type": "function", "function": {"name": "read", "description": description,
                                                    "parameters": {"type": "object", "properties": {}}}}],
        "archived_summary": summary or "-",
        "input": {"content": current, "media": [str(WORKSPACE / attachment)]},
    }
    request = PIPELINE.build(state).to_openai()
    texts = list(strings(request))
    assert sum(count_markers(t) for t in texts) == 2
    assert sum(t.count(OPEN_MARKER) for t in texts) == 1 and sum(t.count(CLOSE_MARKER) for t in texts) == 1
