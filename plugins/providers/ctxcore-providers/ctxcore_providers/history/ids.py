"""The ids of stored history items: one formula, :func:`make_id`, that every id goes through.

``"<state key>:<position>:<crc32 of the item's reading>"``. Invariants: a pure
function of the state key, the position and what the model reads of the item
(so the same history built twice, or by a fresh builder, gets the same ids and
reports line up across turns); distinct within a history (the position is in
it). A long text enters the reading by its length and its first and last
:data:`ID_EDGE` characters, not whole, because hashing every byte of a long
history dominated a cold build; an edit inside a long text that keeps its
length and both ends keeps the id (its fingerprint, which count caches key on,
still changes). See docs/providers.md, "history".
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterable, Mapping
from typing import Any

# How many characters of each end of a text go into an item's reading (with the text's length).
ID_EDGE = 64
_SHORT = 2 * ID_EDGE


def make_id(key: str, index: int, reading: str) -> str:
    """The id of the item at ``index`` of ``state[key]`` whose reading is ``reading``: the one formula."""
    return f"{key}:{index}:{zlib.crc32(reading.encode('utf-8', 'surrogatepass')):08x}"


def edges(text: str) -> str:
    """A text's length and its first and last :data:`ID_EDGE` characters (the text itself when short)."""
    if len(text) <= _SHORT:
        return text
    return f"{len(text)}\x1f{text[:ID_EDGE]}\x1f{text[-ID_EDGE:]}"


def _content_reading(content: Any) -> str:
    if type(content) is str:
        return edges(content)
    if content is None:
        return "null"  # what json.dumps gives
    return edges(json.dumps(content, sort_keys=True, default=str))


def _triples_reading(triples: Iterable[tuple[Any, Any, Any, Any]]) -> str:
    """The reading of calls given as ``(id, type, name, arguments)``."""
    return "\x1d".join(f"{i}\x1e{t}\x1e{n}\x1e{edges(a)}" for i, t, n, a in triples)


def _calls_reading(calls: Any) -> str:
    """A dict's ``tool_calls`` as read: ids, types, names and argument edges; JSON for any other shape."""
    triples = []
    for c in calls if isinstance(calls, list) else ():
        fn = c.get("function") if isinstance(c, dict) else None
        if not isinstance(fn, dict):
            break
        args, call_id, name = fn.get("arguments"), c.get("id"), fn.get("name")
        if not isinstance(args, str) or not (call_id is None or isinstance(call_id, str)) or not isinstance(name, str):
            break
        triples.append((call_id, c.get("type"), name, args))
    else:
        return _triples_reading(triples)
    return json.dumps(calls, sort_keys=True, default=str)


def _chat_reading(role: Any, content: Any, name: Any, call_id: Any, calls: str) -> str:
    return f"{role}\x00{_content_reading(content)}\x00{name}\x00{call_id}\x00{calls}"


def stable_id(key: str, index: int, item: Mapping[str, Any]) -> str:
    """The id of a stored dict: a Responses item (``type`` key) read whole as JSON, a chat or Anthropic dict by its fields."""
    if "type" in item:
        return make_id(key, index, edges(json.dumps(item, sort_keys=True, default=str)))
    get = item.get
    calls = get("tool_calls")
    return make_id(key, index, _chat_reading(get("role"), get("content"), get("name"), get("tool_call_id"),
                                             _calls_reading(calls) if calls else ""))


def fields_id(key: str, index: int, role: str, content: str | None, name: str | None, call_id: str | None,
              calls: tuple[str, ...]) -> str:
    """:func:`stable_id` of a plain chat dict from the fields a stand-in read (``calls``: flat ``(id, name, arguments)``).

    The same reading as the dict's (a plain call's type is ``"function"``), so the same id.
    """
    at = iter(calls)
    reading = _triples_reading((i, "function", n, a) for i, n, a in zip(at, at, at, strict=True)) if calls else ""
    return make_id(key, index, _chat_reading(role, content, name, call_id, reading))


def run_id(key: str, start: int, run: Iterable[Mapping[str, Any]]) -> str:
    """The id of the one assistant message a run of Responses ``function_call`` items from ``start`` makes."""
    return make_id(key, start, "\x1d".join(stable_id("", 0, item) for item in run))


def sub_id(base: str, sub: int) -> str:
    """The id of an item's ``sub``-th message (an Anthropic turn with several tool results): ``<base>.<sub>``."""
    return f"{base}.{sub}" if sub else base
