"""The Agents SDK filter's budget error names its largest contributor first, with the fix."""

from __future__ import annotations

import pytest
from ctxcore_openai_agents import ContextBudgetExceeded, ContextFilter

from ctxcore import Pipeline


def test_huge_newest_tool_output_is_named_first() -> None:
    """A 200 KB function_call_output in the newest turn: the error leads with it (call id, tokens), not the instructions."""
    pipeline = Pipeline.from_string("version: 1\nmodel: {context_window: 8000, reserve_output_tokens: 500}\n"
                                    "providers: [{type: history}]\nfilters: [{type: token_budget}]\n")
    items = [{"role": "user", "content": "read the log"},
             {"type": "function_call", "call_id": "c7", "name": "read", "arguments": "{}"},
             {"type": "function_call_output", "call_id": "c7", "output": "line of the log " * 12_500}]
    with pytest.raises(ContextBudgetExceeded) as caught:
        ContextFilter(pipeline).apply(items, instructions="You read logs.")
    text = str(caught.value)
    assert text.startswith("the newest tool result (call 'c7', ") and "spill_dir" in text
