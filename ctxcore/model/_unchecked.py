"""Models built without validation, for inputs whose every field was checked first.

One builder, :func:`unchecked_model`, makes a pydantic model from its final
field values; everything here goes through it. Each caller has checked
first exactly what validation would check (the plain chat dict's check is
:mod:`ctxcore.model.plain`), so the result equals the validating path's (same
fields, same fields-set; hypothesis properties in tests/test_messages_fast.py
hold them equal). Why: a history converts thousands of messages, and
pydantic's validation was most of that cost.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel

from ctxcore.model.messages import Message, TextBlock, ToolCall, new_id

_Model = TypeVar("_Model", bound=BaseModel)

#: Per role of a plain dict: (trust, zone, fields-set of a dict without name, call id or calls, the interned role name).
ROLE_DEFAULTS: dict[Any, tuple[str, str, frozenset[str], str]] = {
    "user": ("trusted", "dynamic", frozenset({"id", "role", "content", "metadata"}), "user"),
    "assistant": ("trusted", "dynamic", frozenset({"id", "role", "content", "metadata"}), "assistant"),
    "system": ("trusted", "protected", frozenset({"id", "role", "content", "metadata", "zone"}), "system"),
    "tool": ("untrusted", "dynamic", frozenset({"id", "role", "content", "metadata", "trust"}), "tool"),
}
_new_object = object.__new__
_set = object.__setattr__
# Setters of BaseModel's three slots (a member descriptor's set skips the attribute lookup by name).
_set_fields_set = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_set_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
_set_private = BaseModel.__dict__["__pydantic_private__"].__set__


def unchecked_model(cls: type[_Model], values: dict[str, Any], fields_set: set[str]) -> _Model:
    """The model ``cls(**given)`` would make, built from its final field ``values`` without validation.

    ``values`` holds every field of ``cls`` (defaults included) as validation
    would leave them, ``fields_set`` the keywords ``given`` held. Invariant: no
    extra fields, no private attributes (none of ctxcore's models has either).
    """
    m = _new_object(cls)
    _set(m, "__dict__", values)
    _set_fields_set(m, fields_set)
    _set_extra(m, None)
    _set_private(m, None)
    return m


# Fields the model reads: changing one invalidates the derived values cached in the instance.
_READ_FIELDS = frozenset({"role", "content", "name", "tool_call_id", "tool_calls"})


def copied_message(m: Message, update: Mapping[str, Any] | None) -> Message:
    """``m.model_copy(update=update)`` made directly: the same copy, without pydantic's copy machinery.

    A shallow copy of the field values with ``update`` applied, no validation,
    the fields-set grown by the updated keys, and the derived values (``text``,
    ``fingerprint``) kept only when the update touches none of the fields they
    are made of. Why: the builder's ``source`` stamp and the history's
    annotation copy each new message. ``m`` must be a ``Message`` itself.
    """
    values = m.__dict__.copy()
    fields_set = m.__pydantic_fields_set__.copy()
    if update:
        values.update(update)
        fields_set.update(update.keys())
        if not _READ_FIELDS.isdisjoint(update):
            values.pop("text", None)
            values.pop("fingerprint", None)
    return unchecked_model(Message, values, fields_set)


def unchecked_text(text: str) -> TextBlock:
    """``TextBlock(text=text)`` for a ``str`` (exactly), without validation."""
    return unchecked_model(TextBlock, {"type": "text", "text": text}, {"text"})


def unchecked_call(call_id: str, name: str, arguments: str) -> ToolCall | None:
    """``ToolCall(id=call_id, name=name, arguments=arguments)`` without validation; ``None`` when it would check more.

    The three must be ``str`` exactly; arguments holding ``NaN`` or
    ``Infinity`` return ``None`` (the validator may repair them: take the
    validating path).
    """
    if "NaN" in arguments or "Infinity" in arguments:
        return None
    return unchecked_model(ToolCall, {"id": call_id, "name": name, "arguments": arguments, "type": "function"},
                           {"id", "name", "arguments"})


# The keyword fields a converter gives Message(...) for a message of each role, plus what _role_defaults adds.
_CHECKED_FIELDS = {"tool": frozenset({"trust"}), "system": frozenset({"zone"})}


def unchecked_message(role: str, given: frozenset[str], content: Any, tool_calls: tuple[ToolCall, ...] = (),
                      tool_call_id: str | None = None, metadata: dict[str, Any] | None = None) -> Message:
    """``Message(**given fields)`` for fields known to validate, built without validation (a fresh random id).

    ``given`` names the keywords the validating call would pass (its
    fields-set; the role's defaults add ``trust`` for a tool result, ``zone``
    for a system message). The caller has checked what validation would:
    ``role`` one of the four roles, ``content`` a ``str``, ``None`` or a tuple
    of blocks, a tool result's ``tool_call_id`` a non-empty ``str``, calls on
    an assistant only.
    """
    defaults = ROLE_DEFAULTS[role]
    values = {"id": new_id(), "role": defaults[3], "content": content, "name": None, "tool_call_id": tool_call_id,
              "tool_calls": tool_calls, "metadata": {} if metadata is None else metadata, "source": None,
              "trust": defaults[0], "zone": defaults[1], "priority": 0}
    extra = _CHECKED_FIELDS.get(role)
    return unchecked_model(Message, values, set(given if extra is None else given | extra))
