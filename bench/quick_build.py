"""Quick look at build cost: cold vs next-turn builds at 2,000 and 20,000 messages.

Not the benchmark suite (that is issue 7's ``make bench``); a ratio check run
in one process: ``.venv/bin/python bench/quick_build.py``.
"""

from __future__ import annotations

import time

import ctxcore_counters.plugin
import ctxcore_filters.plugin
import ctxcore_providers.plugin

from ctxcore import Pipeline
from ctxcore.testing import fresh_host

PIPELINE = """\
version: 1
model: {context_window: 8000}
counter: {type: tiktoken, encoding: cl100k_base}
providers: [{type: static_prompt, text: You are a coding agent.}, history]
filters: [token_budget]
"""


def transcript(n: int) -> list[dict]:
    """n alternating user/assistant messages of a few hundred characters."""
    return [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i} " + "lorem ipsum dolor " * 20}
        for i in range(n)
    ]


def measure(n: int) -> tuple[float, float]:
    host = fresh_host(
        ("ctxcore-providers", ctxcore_providers.plugin),
        ("ctxcore-filters", ctxcore_filters.plugin),
        ("ctxcore-counters", ctxcore_counters.plugin),
    )
    pipeline = Pipeline.from_string(PIPELINE, host=host)
    pipeline.builder()  # load the encoding outside the timing
    messages = transcript(n)
    started = time.perf_counter()
    pipeline.build({"messages": messages})
    cold = time.perf_counter() - started
    messages.append({"role": "user", "content": "one more turn"})
    started = time.perf_counter()
    pipeline.build({"messages": messages})
    return cold, time.perf_counter() - started


def main() -> None:
    small, large = measure(2_000), measure(20_000)
    print("| messages | cold build ms | next-turn build ms |")
    print("|---:|---:|---:|")
    for n, (cold, warm) in ((2_000, small), (20_000, large)):
        print(f"| {n} | {cold * 1000:.1f} | {warm * 1000:.1f} |")
    print(f"\nnext-turn 20k / 2k: {large[1] / small[1]:.1f}x; cold / next-turn at 20k: {large[0] / large[1]:.1f}x")


if __name__ == "__main__":
    main()
