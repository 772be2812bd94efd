"""The budget error of a pydantic-ai request names its largest contributor first, with the fix."""

from __future__ import annotations

import pytest
from ctxcore_pydantic_ai import ContextBudgetExceeded, ContextProcessor
from pydantic_ai.messages import ModelRequest, ModelResponse, ToolCallPart, ToolReturnPart, UserPromptPart

from ctxcore import Pipeline


def test_huge_newest_tool_result_is_named_first() -> None:
    """A 3,000-word tool return in the newest turn: the error starts with it (call id, tokens) and a truncating/offloading fix."""
    pipeline = Pipeline.from_string("version: 1\nmodel: {context_window: 2000, reserve_output_tokens: 100}\n"
                                    "providers: [{type: history}]\nfilters: [{type: token_budget}]\n")
    history = [ModelRequest(parts=[UserPromptPart("read the log")]),
               ModelResponse(parts=[ToolCallPart("read", {}, tool_call_id="c7")]),
               ModelRequest(parts=[ToolReturnPart("read", "line of the log " * 3000, tool_call_id="c7")])]
    with pytest.raises(ContextBudgetExceeded) as caught:
        ContextProcessor(pipeline).build(None, history)
    text = str(caught.value)
    assert text.startswith("the newest tool result (call 'c7', ") and "spill_dir" in text
