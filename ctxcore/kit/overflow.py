"""What to say when a framework's protected context does not fit: the largest contributor first, and its fix.

A ``BudgetExceeded`` from the build names totals ("the pinned prefix and the
protected messages need 55217 tokens"); a framework user needs the one thing
that made it so (a 200 KB tool result in the newest turn, a long system
prompt) and the step that fixes it. :func:`overflow_cause` finds the largest
part of what a build must keep (system messages, the newest turn from its user
message on, the tool schemas) and words it; the framework adapters put it in
front of their error. Read-only: it counts with the pipeline's own counter and
changes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

from ctxcore.engine.budget import CachedCounter
from ctxcore.model.messages import Message

__all__ = ["overflow_cause"]

_TOOL_FIX = ("make the tool return less, or add a step that shortens large results before the budget: "
             "an `offload` step (a quoted preview plus a handle the model reads with the context_retrieve tool), "
             "compaction's `tool_results` stage with `keep_last_results: 0` (and `spill_dir` to offload the full "
             "text to a file), or a truncating filter such as `truncate_tool_results`")


def _newest_turn(messages: Sequence[Message]) -> int:
    """Index of the newest user message (where the turn every build keeps starts); 0 when there is none."""
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].role == "user":
            return index
    return 0


def _describe(message: Message, tokens: int) -> tuple[str, str]:
    if message.role == "tool":
        call = f"call '{message.tool_call_id}', " if message.tool_call_id else ""
        return f"the newest tool result ({call}{tokens:,} tokens)", _TOOL_FIX
    if message.role == "system":
        return f"a system message ({tokens:,} tokens)", "shorten the system prompt or instructions"
    if message.role == "user":
        return f"the newest user message ({tokens:,} tokens)", "shorten the user's message or attachments"
    return f"an assistant message of the newest turn ({tokens:,} tokens)", "shorten the reply or its tool-call arguments"


def overflow_cause(messages: Sequence[Message], counter: CachedCounter, tool_tokens: int = 0) -> str | None:
    """``"<the largest contributor> does not fit ...: <its fix>"``, or ``None`` when ``messages`` is empty.

    Candidates are what a build cannot drop: every system message and the
    newest turn (from the newest user message on); the tool schemas count as
    one candidate of ``tool_tokens``.
    """
    start = _newest_turn(messages)
    candidates = [m for m in messages[:start] if m.role == "system"] + list(messages[start:])
    if not candidates and not tool_tokens:
        return None
    best: tuple[int, Message | None] = (tool_tokens, None)
    for message in candidates:
        tokens = counter.count_message(message)
        if tokens > best[0]:
            best = (tokens, message)
    tokens, culprit = best
    if culprit is None:
        what, fix = f"the tool schemas ({tokens:,} tokens)", "send fewer tools or shorter descriptions"
    else:
        what, fix = _describe(culprit, tokens)
    return f"{what} does not fit the budget with the rest of the protected context: {fix}"
