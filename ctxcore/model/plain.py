"""Plain OpenAI chat dicts: the one check that lets a dict skip validation, and its message built unchecked.

Nearly every stored message is a plain chat dict (string or null content,
only the keys a message has, plain tool calls). For such a dict validation can
neither fail nor change a value, so :func:`plain_message` of the fields
:func:`plain_fields` read equals :meth:`Message.from_openai` of the dict (a
hypothesis property in tests/test_messages_fast.py). :meth:`Message.from_openai`
takes this path itself; the ``history`` provider's stand-ins read the fields
once and build the message when it is read.
"""

from __future__ import annotations

from typing import Any

from ctxcore.model._unchecked import ROLE_DEFAULTS, unchecked_model
from ctxcore.model.messages import Message, ToolCall, new_id

__all__ = ["PlainFields", "plain_calls", "plain_fields", "plain_message", "plain_openai"]

_KNOWN_KEYS = frozenset({"role", "content", "name", "tool_call_id", "tool_calls"})


#: What :func:`plain_fields` reads of a plain dict: the role's defaults, name, tool_call_id, calls (flat triples).
PlainFields = tuple[tuple[str, str, frozenset[str], str], "str | None", "str | None", "tuple[str, ...]"]
_ABSENT: Any = object()
#: The fields of a plain two-key dict (role and content) of each role but ``tool``, made once.
_BARE: dict[Any, PlainFields] = {role: (defaults, None, None, ()) for role, defaults in ROLE_DEFAULTS.items()
                                 if role != "tool"}


def plain_fields(data: Any) -> PlainFields | None:
    """What a plain OpenAI chat dict holds, read once; ``None`` for any other value. The one plain check.

    Plain: a ``dict`` with only the keys ctxcore models, ``content`` present
    and a string or null, ``name`` and ``tool_call_id`` strings or null, a
    tool result with its call id, ``tool_calls`` (if present) a non-empty list
    of plain calls (:func:`plain_calls`) on an assistant. Invariant: for such a
    dict, validation can neither fail nor change a value, so a message built
    from these fields equals :meth:`Message.from_openai`'s. An empty
    ``tool_calls`` list is not plain: the validating path keeps it for the
    round trip (``metadata["openai_extra"]``).
    """
    if type(data) is not dict:
        return None
    role, content = data.get("role"), data.get("content", _ABSENT)
    defaults = ROLE_DEFAULTS.get(role) if type(role) is str else None
    if defaults is None or (content is not None and type(content) is not str):  # an absent content is not a str
        return None
    if len(data) == 2:  # role and content, nothing else (most of a history): no key-set test, no other read
        return _BARE.get(role)  # a tool result needs its call id: not plain
    if not _KNOWN_KEYS.issuperset(data):
        return None
    name, call_id = data.get("name"), data.get("tool_call_id")
    if (name is not None and type(name) is not str) or (call_id is not None and type(call_id) is not str):
        return None
    if role == "tool" and not call_id:
        return None
    if "tool_calls" not in data:
        return defaults, name, call_id, ()
    raw = data["tool_calls"]
    calls = plain_calls(raw) if role == "assistant" and type(raw) is list and raw else None
    return None if calls is None else (defaults, name, call_id, calls)


def plain_calls(calls: list[Any]) -> tuple[str, ...] | None:
    """``(id, name, arguments)`` of each call, one flat tuple, when every one is fully plain, else ``None``.

    Fully plain: ``{"id": non-empty str, "type": "function", "function":
    {"name": str, "arguments": str without NaN/Infinity}}`` (other keys of a
    call are ignored, as the validating path ignores them), so the
    :class:`ToolCall` rebuilt from the triple is the one validation makes.
    Flat: one object per message however many calls it makes.
    """
    out: list[str] = []
    add = out.extend
    for call in calls:
        if type(call) is not dict:
            return None
        fn, call_id = call.get("function"), call.get("id")
        if type(fn) is not dict or type(call_id) is not str or not call_id or call.get("type") != "function":
            return None
        name, arguments = fn.get("name"), fn.get("arguments")
        if type(name) is not str or type(arguments) is not str or "NaN" in arguments or "Infinity" in arguments:
            return None
        add((call_id, name, arguments))
    return tuple(out)


_CALL_FIELDS = frozenset({"id", "name", "arguments", "type"})


def _calls_of(calls: tuple[str, ...]) -> tuple[ToolCall, ...]:
    """The :class:`ToolCall` objects of flat ``(id, name, arguments, ...)`` triples :func:`plain_calls` accepted."""
    at = iter(calls)
    return tuple([unchecked_model(ToolCall, {"id": c, "name": f, "arguments": a, "type": "function"}, set(_CALL_FIELDS))
                  for c, f, a in zip(at, at, at, strict=True)])


def plain_message(message_id: str, role: str, content: str | None, name: str | None, tool_call_id: str | None,
                  calls: tuple[str, ...], metadata: dict[str, Any] | None = None) -> Message:
    """The message of a dict that passed :func:`plain_fields`, built from the fields it read, without checks.

    Invariant: equal to ``Message.from_openai(dict, id=message_id)`` (same
    fields, same fields-set); ``metadata`` (and a ``content`` other than the
    dict's) gives what ``model_copy(update={"content": ..., "metadata": ...})``
    of that message gives, both fields being in its fields-set already.

    Raises:
        KeyError: ``role`` is not one of the four chat roles (the only check).
    """
    defaults = ROLE_DEFAULTS[role]
    fields_set = set(defaults[2])
    if name is not None:
        fields_set.add("name")
    if tool_call_id is not None:
        fields_set.add("tool_call_id")
    tool_calls: tuple[ToolCall, ...] = ()
    if calls:
        fields_set.add("tool_calls")
        tool_calls = _calls_of(calls)
    return unchecked_model(Message, {"id": message_id, "role": defaults[3], "content": content, "name": name,
                                     "tool_call_id": tool_call_id, "tool_calls": tool_calls,
                                     "metadata": {} if metadata is None else metadata, "source": None,
                                     "trust": defaults[0], "zone": defaults[1], "priority": 0}, fields_set)


def plain_openai(data: Any, message_id: Any) -> Message | None:
    """:meth:`Message.from_openai` of a plain dict (:func:`plain_fields`) without validation; else ``None``."""
    fields = plain_fields(data)
    if fields is None or (message_id is not None and type(message_id) is not str):
        return None
    defaults, name, call_id, calls = fields
    return plain_message(new_id() if message_id is None else message_id, defaults[3], data["content"], name, call_id, calls)
