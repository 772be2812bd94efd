"""ctxcore.kit.overflow_cause: the largest part of what a build must keep, named with its fix."""

from __future__ import annotations

from ctxcore import Message, Pipeline, ToolCall
from ctxcore.kit import overflow_cause

COUNTER = Pipeline.from_string("version: 1\nproviders: [history]\n").builder().counter


def test_the_newest_huge_tool_result_is_named_with_its_call() -> None:
    """A huge result of the newest turn outweighs the system prompt: named by call id and tokens, with the offloading fix."""
    messages = [Message(role="system", content="Be brief."), Message(role="user", content="old " * 5000),
                Message(role="assistant", content="ok"), Message(role="user", content="read it"),
                Message(role="assistant", tool_calls=(ToolCall(id="c7", name="read"),)),
                Message(role="tool", tool_call_id="c7", content="data " * 2000)]
    text = overflow_cause(messages, COUNTER)
    assert text is not None and text.startswith("the newest tool result (call 'c7', 2,0")
    assert "spill_dir" in text  # the old 5,000-word turn is droppable, so it is not the cause
    assert "an `offload` step" in text


def test_tool_schemas_and_system_prompt_are_candidates() -> None:
    """Tool schemas larger than every message are the cause; a long system prompt beats a short turn."""
    messages = [Message(role="system", content="rule " * 900), Message(role="user", content="hi")]
    assert overflow_cause(messages, COUNTER).startswith("a system message (")
    assert overflow_cause(messages, COUNTER, tool_tokens=50_000).startswith("the tool schemas (50,000 tokens)")
    assert overflow_cause([], COUNTER) is None
