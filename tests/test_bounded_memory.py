"""Bounded memory: reading a 50 MB state and building from it each peak at most 3x the input size.

Measured with ``tracemalloc`` (Python allocations, so the number does not
depend on the allocator or on what else the process holds): the peak while the
CLI reads and parses the state file, then the peak a build and its rendering
add on top of the parsed state. Slow-ish by nature (about 35 s under
tracemalloc: each of the ~47,000 messages is converted once), so there is one
size; ``CTXCORE_THOROUGH=1`` raises it to 200 MB (docs/security.md). At 50 MB
the reader peaks at 116 MB (2.3x) and a build adds 144 MB (2.9x): most of it is
one ``model_copy`` per message (the history's stable id, the builder's source stamp).
"""

from __future__ import annotations

import json
import os
import tracemalloc
from pathlib import Path

import pytest

from ctxcore import Pipeline

MB = 1_000_000
SIZE = (200 if os.environ.get("CTXCORE_THOROUGH") == "1" else 50) * MB
FACTOR = 3


def write_state(path: Path, size: int) -> int:
    """A conversation of about ``size`` bytes of JSON (1 KB messages, alternating roles)."""
    body = "lorem ipsum dolor sit amet " * 36
    one = [json.dumps({"role": role, "content": body}) for role in ("user", "assistant")]
    count = size // (len(one[0]) + 2)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write('{"messages": [')
        fh.write(", ".join(one[i % 2] for i in range(count)))
        fh.write("]}")
    return path.stat().st_size


@pytest.fixture(scope="module")
def state_file(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    path = tmp_path_factory.mktemp("big") / "state.json"
    return path, write_state(path, SIZE)


def test_reading_and_building_stay_within_three_times_the_input(state_file: tuple[Path, int], host) -> None:
    """The CLI's state reader and then a build plus rendering each peak at most 3x the state file's size."""
    from ctxcore.cli._common import read_state

    path, size = state_file
    pipeline = Pipeline.from_dict({
        "version": 1,
        "model": {"context_window": 8000},
        "providers": [{"type": "static_prompt", "text": "You are terse."}, {"type": "history"}],
        "filters": [{"type": "max_messages", "max_messages": 200}, "token_budget"],
    }, host=host)
    pipeline.build({"messages": [{"role": "user", "content": "warm up"}]})
    tracemalloc.start()
    try:
        state = read_state(str(path))
        _, read_peak = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        before, _ = tracemalloc.get_traced_memory()
        body = json.dumps(pipeline.build(state).to_openai())
        _, build_peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert body.count('"role"') > 10
    assert read_peak <= FACTOR * size, f"reading a {size / MB:.0f} MB state peaked at {read_peak / MB:.0f} MB"
    assert build_peak - before <= FACTOR * size, f"building from a {size / MB:.0f} MB state added {(build_peak - before) / MB:.0f} MB"
