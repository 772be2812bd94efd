"""Character limits of the model budget: ``max_input_chars`` and ``max_schema_chars``.

Some providers and gateways cap a request by characters as well as tokens
(the ContextPlan design's ``maxInputChars`` / ``maxSchemaChars``). The builder
checks the request it is about to return against them: within the limit, or
:class:`~ctxcore.errors.BudgetExceeded` with ``unit="chars"`` naming what is
over and by how much. Nothing is trimmed here: a character limit is a hard
bound checked at the end, and the filters (a ``token_budget`` sized for it,
``compaction``) are what make a request fit.

What counts: every message's text (string content and text blocks; image
bytes have their own limits), its name, tool-call names and JSON arguments;
for schemas, the tool definitions as compact JSON (the form they are sent in).
The cost is one pass over the kept messages, only when a limit is set.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ctxcore.errors import BudgetExceeded
from ctxcore.model.messages import Message

__all__ = ["check_input_chars", "check_schema_chars", "input_chars", "schema_chars"]


def input_chars(messages: Sequence[Message]) -> int:
    """Characters of the messages' text, names, tool-call names and arguments."""
    total = 0
    for m in messages:
        total += len(m.text) + len(m.name or "")
        for call in m.tool_calls:
            total += len(call.name) + len(call.arguments)
    return total


def schema_chars(tools: Sequence[Mapping[str, Any]]) -> int:
    """Characters of the tool definitions as compact JSON."""
    if not tools:
        return 0
    return len(json.dumps(list(tools), separators=(",", ":"), ensure_ascii=False, default=str))


def check_input_chars(messages: Sequence[Message], limit: int, report: Any = None) -> None:
    """Raise :class:`BudgetExceeded` (``unit="chars"``) when the messages hold more than ``limit`` characters."""
    used = input_chars(messages)
    if used > limit:
        raise BudgetExceeded(
            f"the request's messages hold {used} characters but model.max_input_chars is {limit}; "
            "add a filter that trims to fit (a token_budget sized for the limit, or compaction) or raise the limit",
            budget=limit, required=used, report=report, unit="chars",
        )


def check_schema_chars(tools: Sequence[Mapping[str, Any]], limit: int, report: Any = None) -> None:
    """Raise :class:`BudgetExceeded` (``unit="chars"``) when the tool schemas exceed ``limit`` characters."""
    used = schema_chars(tools)
    if used > limit:
        raise BudgetExceeded(
            f"the tool schemas take {used} characters (compact JSON) but model.max_schema_chars is {limit}; "
            "send fewer or shorter tool definitions or raise the limit",
            budget=limit, required=used, report=report, unit="chars",
        )
