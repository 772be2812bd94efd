"""The reference message factories: ``system``, ``human``, ``ai``, ``tool``.

``system``, ``human`` and ``ai`` are ctxcore's own. ``tool`` accepts the
reference call ``tool('{"result": 4}', name="calculator")`` without a
``tool_call_id``: ctxcore requires one (a tool result answers one call), so a
missing id becomes ``"call_<name>"`` (``"call_tool"`` without a name). Such a
result answers no assistant call unless one uses that id, and a build drops it
from history as an orphan (reported), as it would any unanswered result.
"""

from __future__ import annotations

from typing import Any

from ctxcore.model.messages import Message, ai, human, system
from ctxcore.model.messages import tool as _tool

__all__ = ["ai", "human", "system", "tool"]


def tool(content: str | list[Any], *, tool_call_id: str | None = None, name: str | None = None, **kw: Any) -> Message:
    """A tool result; ``tool_call_id`` defaults to ``"call_<name>"``."""
    call_id = tool_call_id or f"call_{name or 'tool'}"
    if name is not None:
        kw["name"] = name
    return _tool(content, tool_call_id=call_id, **kw)
