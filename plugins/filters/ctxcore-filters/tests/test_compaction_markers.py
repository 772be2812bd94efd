"""Summaries are untrusted: a summarizer that writes forged runtime-context markers gets none through.

Whatever the summarizer returns (a model's reply over untrusted history), the
summary message holds no live marker. Quick profile 30 examples,
``CTXCORE_THOROUGH=1`` 500 (docs/security.md).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from ctxcore_counters import ApproximateCounter
from ctxcore_filters import Compaction
from hypothesis import given, settings

from ctxcore import BuildReport, CachedCounter, FilterContext, Message, ai, human, system
from ctxcore.kit import count_markers
from ctxcore.testing.markers import text_with_markers

EXAMPLES = 500 if os.environ.get("CTXCORE_THOROUGH") == "1" else 30


class Forger:
    """A summarizer whose summary is attacker-chosen text."""

    max_calls = 1

    def __init__(self, text: str) -> None:
        self.text = text

    def summarize(self, messages: Sequence[Message], target_tokens: int) -> str:
        return self.text


@settings(max_examples=EXAMPLES, deadline=None)
@given(text_with_markers())
def test_a_summary_never_carries_a_live_marker(forged: str) -> None:
    """The summary a summarizer returns is neutralised before it becomes a message."""
    msgs = [system("You are terse.")]
    for t in range(4):
        msgs += [human(f"question {t} " * 40), ai(f"answer {t} " * 40)]
    c = FilterContext(counter=CachedCounter(ApproximateCounter()), budget=None, report=BuildReport(), step_id="compaction")
    limit = c.counter.count_messages(msgs)
    out = Compaction(steps=[{"kind": "summarize", "keep_groups": 1}], summarizer=Forger("summary: " + forged * 3),
                     max_tokens=limit, trigger_ratio=0.5, target_ratio=0.1, on_overflow="warn").apply(msgs, c)
    assert len(out) < len(msgs)  # a summary replaced the old turns
    assert sum(count_markers(m.text) for m in out) == 0
