"""No poison messages: repair or drop a *past* message the target provider cannot take.

One bad old message (an empty user turn, ``content: []`` or ``null``, a tool
call id given twice, arguments that are not a JSON object) would otherwise make
every later build fail until a filter happens to evict it. :func:`repair_past`
runs after the filters, before the legal start and the target's validation;
each past message is repaired where that keeps its meaning, else dropped, and
every change is returned with its reason for the build report. The *current*
turn (the last message) is never touched: a broken current message is the
caller's to fix, and validation reports it.

The decision for one message depends only on that message and the provider,
so :class:`RepairCache` remembers it by object across builds (messages are
immutable): a long conversation pays it once per message, not once per build.
Only duplicate tool *results* depend on their neighbours; that check is a set
lookup on tool messages.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field

from ctxcore.model.messages import Message, TextBlock, strict_json_loads

__all__ = ["RepairCache", "RepairResult", "repair_message", "repair_past", "repeated_results"]


@dataclass
class RepairResult:
    """The messages to send, the past messages dropped, and one note per change."""

    messages: list[Message]
    dropped: list[Message] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _blank(m: Message) -> bool:
    content = m.content
    if content is None:
        return True
    if isinstance(content, str):
        return not content.strip()
    return all(isinstance(b, TextBlock) and not b.text.strip() for b in content)


def _object_arguments(arguments: str) -> str | None:
    """``arguments`` made a JSON object when it is not one (``None`` when it already is)."""
    try:
        parsed = strict_json_loads(arguments) if arguments else {}
    except ValueError:
        return json.dumps({"_unparsed_arguments": arguments}, ensure_ascii=False)
    if isinstance(parsed, dict):
        return None
    return json.dumps({"_arguments": parsed}, ensure_ascii=False)


def _empty(m: Message, provider: str) -> bool:
    """No content the provider takes: for OpenAI ``null`` or ``[]`` (an empty string is fine); for Anthropic also blank text."""
    if provider == "anthropic":
        return _blank(m)
    return m.content is None or (isinstance(m.content, tuple) and not m.content)


def repair_message(m: Message, provider: str) -> tuple[Message | None, str | None]:
    """``(message, None)`` when ``m`` is sendable as it is; else the repaired message (or ``None``: drop) and why."""
    if m.role == "user" and _empty(m, provider):
        return None, f"a user message without content cannot be sent to {provider}"
    if m.role == "assistant":
        if m.tool_calls:
            return _repair_calls(m, provider)
        if _empty(m, provider):
            return None, f"an assistant message without content or tool calls cannot be sent to {provider}"
        return m, None
    if m.role in ("system", "tool") and (m.content is None or (isinstance(m.content, tuple) and not m.content)):
        return m.model_copy(update={"content": ""}), f"a {m.role} message without content given empty text"
    return m, None


def _repair_calls(m: Message, provider: str) -> tuple[Message, str | None]:
    """An assistant message with tool calls: empty content removed, repeated call ids dropped, arguments wrapped."""
    update: dict[str, object] = {}
    reasons = []
    if m.content is not None and _empty(m, provider):
        update["content"] = None
        reasons.append("empty content beside tool calls removed")
    seen: set[str] = set()
    calls = []
    for call in m.tool_calls:
        if call.id in seen:
            reasons.append(f"tool call id {call.id!r} repeated: the repeat dropped")
            continue
        seen.add(call.id)
        fixed = _object_arguments(call.arguments) if provider == "anthropic" else None
        if fixed is not None:
            reasons.append(f"tool call {call.id!r}: arguments not a JSON object, wrapped in one")
            call = call.model_copy(update={"arguments": fixed})
        calls.append(call)
    if len(calls) != len(m.tool_calls) or any(a is not b for a, b in zip(calls, m.tool_calls, strict=True)):
        update["tool_calls"] = tuple(calls)
    if update:
        return m.model_copy(update=update), "; ".join(reasons)
    return m, None


def repeated_results(messages: Sequence[Message]) -> set[int]:
    """Indices of tool results that repeat a result for the same call since the last assistant message.

    A provider takes one result per call; :func:`repair_past` drops such a
    repeat, and the engine's output reuse (:mod:`ctxcore.engine.reuse`) asks
    the same question of the messages a legal start drops.
    """
    repeats: set[int] = set()
    answered: set[str] = set()
    for index, m in enumerate(messages):
        if m.role == "assistant":
            answered = set()
        elif m.role == "tool" and m.tool_call_id is not None:
            if m.tool_call_id in answered:
                repeats.add(index)
            answered.add(m.tool_call_id)
    return repeats


class RepairCache:
    """Repair decisions remembered by message object (messages are immutable), per provider."""

    def __init__(self) -> None:
        self._memo: dict[int, tuple[Message, str, Message | None, str | None]] = {}

    def get(self, m: Message, provider: str) -> tuple[Message | None, str | None]:
        hit = self._memo.get(id(m))
        if hit is not None and hit[0] is m and hit[1] == provider:
            return hit[2], hit[3]
        result, reason = repair_message(m, provider)
        self._memo[id(m)] = (m, provider, result, reason)
        return result, reason

    def forget_all_but(self, alive: Sequence[Message]) -> None:
        """Drop decisions of messages no longer sent (called when the memo outgrows the window)."""
        if len(self._memo) > 2 * len(alive) + 64:
            keep = set(map(id, alive))
            self._memo = {k: v for k, v in self._memo.items() if k in keep}


def repair_past(messages: Sequence[Message], provider: str, cache: RepairCache | None = None) -> RepairResult:
    """Repair or drop every unsendable message before the last one (see the module docstring)."""
    cache = cache or RepairCache()
    out: list[Message] = []
    result = RepairResult(out)
    last = len(messages) - 1
    repeats = repeated_results(messages[:last])
    for index, m in enumerate(messages):
        if index == last:
            out.append(m)
            break
        fixed, reason = cache.get(m, provider)
        if index in repeats:
            fixed, reason = None, f"a second result for tool call {m.tool_call_id!r} cannot be sent"
        if fixed is None:
            result.dropped.append(m)
            result.notes.append(f"sanitize dropped past message {m.id}: {reason}")
            continue
        if reason is not None:
            result.notes.append(f"sanitize repaired past message {m.id}: {reason}")
        out.append(fixed)
    cache.forget_all_but(messages)
    return result
