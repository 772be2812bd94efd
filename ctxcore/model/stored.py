"""Stored messages: the compact JSON form a thread log keeps, and the one check that lets it skip validation.

A :class:`~ctxcore.runtime.threads.Thread` stores each message as
:func:`stored_dump`: its ``model_dump(mode="json")`` without the fields that
hold their role's default (``name``/``tool_call_id``/``source``/``content``
null, no calls, empty metadata, priority 0, the role's trust and zone) and
without each call's ``"type": "function"``. A turn's user message is stored as
``{"id", "role", "content"}`` instead of eleven fields, so a reopen parses a
third of the keys. Both forms are ``Message.model_validate`` input and give the
same message.

:func:`stored_message` reads the shapes nearly every stored message has (a
user message, a tool call, a tool result, an answer: a few string fields)
without validation, after a check complete for those shapes: validation
could neither fail nor change a value. Anything else (metadata, content
blocks, a system message, the full form older stores hold, a foreign or
damaged row) returns ``None`` and is validated. Whether a row is ours is never
assumed (a checksum proves a row intact, not who wrote it): the check itself
decides, so a foreign row is treated exactly as validation treats it. The
built message equals ``Message.model_validate(data)``, fields-set included (a
hypothesis property in tests/test_stored_messages.py). Why: validation was
half the CPU time of reopening a long thread.
"""

from __future__ import annotations

from typing import Any

from ctxcore.model._unchecked import ROLE_DEFAULTS, unchecked_model
from ctxcore.model.messages import Message, ToolCall

__all__ = ["stored_dump", "stored_message"]

_TEXT = frozenset({"id", "role", "content"})
_RESULT = frozenset({"id", "role", "content", "tool_call_id"})
_CALLS = frozenset({"id", "role", "tool_calls"})
_TEXT_CALLS = frozenset({"id", "role", "content", "tool_calls"})
_CALL_KEYS = frozenset({"id", "name", "arguments"})
#: Per role: the JSON value of each field that :func:`stored_dump` leaves out when it holds it.
_DEFAULTS: dict[str, dict[str, Any]] = {
    role: {"content": None, "name": None, "tool_call_id": None, "tool_calls": [], "metadata": {}, "source": None,
           "trust": trust, "zone": zone, "priority": 0}
    for role, (trust, zone, _, _) in ROLE_DEFAULTS.items()
}


#: The fields-set validation gives a stored tool result: its keys and the trust its role's default adds.
_RESULT_SET = _RESULT | {"trust"}


def stored_dump(message: Message) -> dict[str, Any]:
    """The JSON a thread log stores for ``message``: its dump without the fields at their role's defaults.

    Invariant: ``Message.model_validate(stored_dump(m)) == m``.
    """
    full = message.model_dump(mode="json")
    defaults = _DEFAULTS[full["role"]]
    out = {k: v for k, v in full.items() if k not in defaults or v != defaults[k] or type(v) is not type(defaults[k])}
    calls = out.get("tool_calls")
    if calls:
        out["tool_calls"] = [{k: v for k, v in c.items() if k != "type" or v != "function"} for c in calls]
    return out


def _calls(raw: Any) -> tuple[ToolCall, ...] | None:
    """The calls of a stored list of ``{"id", "name", "arguments"}`` strings (arguments without NaN/Infinity), else ``None``."""
    if type(raw) is not list or not raw:
        return None
    out = []
    for call in raw:
        if type(call) is not dict or call.keys() != _CALL_KEYS:
            return None
        call_id, name, arguments = call["id"], call["name"], call["arguments"]
        if type(call_id) is not str or type(name) is not str or type(arguments) is not str or "NaN" in arguments \
                or "Infinity" in arguments:
            return None
        out.append(unchecked_model(ToolCall, {"id": call_id, "name": name, "arguments": arguments, "type": "function"},
                                   set(_CALL_KEYS)))
    return tuple(out)


def stored_message(data: Any) -> Message | None:
    """``Message.model_validate(data)`` for the usual stored shapes, built without validation; ``None`` for any other.

    The shapes (exactly these keys; id, content and call id strings, content
    also null): a user message or an answer ``{id, role, content}``; a tool
    result ``{id, role, content, tool_call_id}`` with a non-empty call id; an
    assistant's calls ``{id, role, tool_calls}`` or ``{id, role, content,
    tool_calls}`` with a non-empty list of plain calls (:func:`_calls`).
    Anything else (metadata, names, provenance, content blocks, a system
    message, the full form older stores hold, a foreign or damaged row) is
    left to validation.
    """
    if type(data) is not dict:
        return None
    keys, role, message_id, content = data.keys(), data.get("role"), data.get("id"), data.get("content")
    if type(message_id) is not str or (content is not None and type(content) is not str):
        return None
    calls: tuple[ToolCall, ...] | None = ()
    if keys == _TEXT and (role == "user" or role == "assistant"):
        fields = _TEXT
    elif keys == _RESULT and role == "tool" and type(data["tool_call_id"]) is str and data["tool_call_id"]:
        fields = _RESULT_SET
    elif (keys == _CALLS or keys == _TEXT_CALLS) and role == "assistant":
        calls, fields = _calls(data["tool_calls"]), _CALLS if len(data) == 3 else _TEXT_CALLS
        if calls is None:
            return None
    else:
        return None
    trust, zone, _, interned = ROLE_DEFAULTS[role]
    return unchecked_model(Message, {"id": message_id, "role": interned, "content": content, "name": None,
                                     "tool_call_id": data.get("tool_call_id"), "tool_calls": calls, "metadata": {},
                                     "source": None, "trust": trust, "zone": zone, "priority": 0}, set(fields))
