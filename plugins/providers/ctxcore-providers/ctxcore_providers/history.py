"""``history``: the conversation so far, read from ``state[state_key]``.

Items may be ctxcore :class:`Message` objects, OpenAI chat dicts, Anthropic
message dicts or OpenAI Responses input items (see :func:`_format` for how a
dict's API is told; :func:`ctxcore.messages_from_anthropic` and
:func:`ctxcore.messages_from_responses` do the converting). A dict gets a
stable id derived from its position and content (:func:`_stable_id`), so the
same conversation built twice yields the same ids (reports line up across turns).

A plain chat dict (string or null content, only the keys a message has,
plain tool calls: what nearly every stored message is) is not converted when
it is first seen: it is checked (so its message can be built later without
fail) and stored as a :class:`_Stored` stand-in holding what it was read as —
role, content, name, tool-call id and the ``(id, name, arguments)`` of its
calls, read once. The engine's whole-history walks (legality, unit grouping,
the budget's shape) read those fields from the lazy result's ``structure``;
its :class:`Message` and id are made the first time it is read through the
result (:meth:`History._derive`, the first layer), so a cold build of a long
history makes messages for the window it keeps, not for every dict. A lookup
of an id (``has_id``, the report's counts) parses the position out of the id
and compares with that one stand-in's id. Every other item is converted (and
checked) when first seen, as before; the plain chat dicts after such an item
take the stand-in loop again (while each item still makes one message). An
Anthropic message, a Responses item or a chat dict with content parts keeps
its message as a :class:`_Pending`: its id (which dumps the dict as JSON) is
made from a copy of the dict the first time it is asked for, and a lookup
finds it by the item index in its id.

Converted items are remembered by reference, in a list the provider only
appends to (any other change makes a new list), and each build's result is a
:class:`~ctxcore.engine.lazy.Snapshot` of it: its first ``length`` messages,
taken without a copy, which no later call changes (so an earlier build's
output and report stay as they were, whatever happens to the state's list).
Growth is proven, not re-compared:
when the state holds the same list object as last time and it is no shorter,
only the last :data:`GUARD` (8) items seen are checked (the same objects at the
same places, each dict equal to a private copy taken when it was seen, so a dict
edited in place there is noticed) and only the new items are converted. Another
list object costs one C-level comparison with the items seen (identical objects
compare by pointer) plus the same guard. When the list changed, conversions of
unchanged items are reused by position. The one thing not noticed: an item
*older than the last eight* replaced in the same list, or a dict that old edited
in place (its message stays what the dict was when it was stored, even when it
is first read after the edit); hand over a new list with a new dict for such an
edit (see docs/providers.md, "history").

Derived work is done lazily, only for the messages a consumer reads (a budget
filter reads the newest few), once per message, and cached by object:

- annotations: an assistant message with tool calls gets
  ``metadata.semantic_kind = "self_tool_plan"``, a tool result
  ``"tool_observation"``; when any is present one "History semantics" system
  message explaining them is put before the history;
- marker neutralising: live runtime-context blocks are removed from stored
  user messages (they are never part of history) and marker look-alikes in
  the text of every role are neutralised (:func:`ctxcore.kit.neutralize_markers`),
  so only the current turn's block is live.

An optional working-memory adapter (``build_view(messages) -> messages``; the
constructor argument, else ``runtime["working_memory"]``) reshapes the result.
"""

from __future__ import annotations

import copy
import gc
import json
import zlib
from collections import namedtuple
from collections.abc import Container, Mapping, Sequence
from functools import partial
from itertools import compress, repeat
from operator import attrgetter, is_not
from typing import Any, Literal, cast

from pydantic import BaseModel, ConfigDict, Field, StrictInt, field_validator

from ctxcore import Message, TextBlock, messages_from_anthropic, messages_from_responses, system
from ctxcore.kit import LazyMessages, Snapshot, current_pipeline_context, get_prompt
from ctxcore_providers._markers import (
    OPEN_MARKER,
    has_marker,
    neutralize_markers,
    strip_runtime_blocks,
)
from ctxcore_providers._render import stable_id

SELF_TOOL_PLAN = "self_tool_plan"
TOOL_OBSERVATION = "tool_observation"
# How many of the last items seen are checked for replacement and in-place edits on every build.
GUARD = 8
# More new items than this are converted with the cyclic garbage collector paused (see History._update).
PAUSE_GC = 1000


class HistoryConfig(BaseModel):
    """Options of the ``history`` provider."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    state_key: str = Field(default="messages", description="Key of the message list in the state.")
    annotate: bool = Field(default=True, description="Mark tool plans and observations and explain them once.")
    neutralize_markers: bool = Field(default=True, description="Defuse runtime-context marker look-alikes in the text of every role.")
    # A YAML file can only leave it null: the JSON Schema says so (`ctx pipeline schema`).
    working_memory: Any = Field(default=None, description="An object with build_view(messages) (Python only).",
                                json_schema_extra={"type": "null"})

    replay_cap: StrictInt | Literal["auto"] | None = Field(
        default=None,
        description="Replay at most this many newest stored messages, starting on a user message; auto: "
        "min(2000, max(120, context_window // 100)) (nanobot's rule). Default: the whole history.",
        # the schema states the validator's floor, so `ctx pipeline schema` and the loader agree
        json_schema_extra={"anyOf": [{"type": "integer", "minimum": 1}, {"const": "auto"}, {"type": "null"}]},
    )

    @field_validator("replay_cap")
    @classmethod
    def _cap(cls, value: Any) -> Any:
        if isinstance(value, int) and value < 1:
            raise ValueError("replay_cap must be a whole number >= 1 or 'auto'")
        return value

    @field_validator("working_memory")
    @classmethod
    def _adapter(cls, value: Any) -> Any:
        if value is not None and not callable(getattr(value, "build_view", None)):
            raise ValueError("working_memory must be an object with build_view(messages) (Python only)")
        return value


def auto_replay_cap(context_window: int) -> int:
    """nanobot's replay cap for a model window: ``min(2000, max(120, context_window // 100))``."""
    return min(2000, max(120, context_window // 100))


def resolve_replay_cap(cap: int | str | None, context_window: int | None = None) -> int | None:
    """``cap`` as a number: ``"auto"`` from ``context_window`` (default: the compiling pipeline's window).

    Raises:
        ValueError: ``"auto"`` without a context window to derive it from.
    """
    if cap != "auto":
        return None if cap is None else int(cap)
    window = context_window if context_window is not None else current_pipeline_context().context_window
    if window is None:
        raise ValueError("replay_cap: auto needs the model's context window: use it in a pipeline (model.context_window) "
                         "or pass context_window=, or give a number")
    return auto_replay_cap(window)


def replay_start(messages: Sequence[Message], cap: int) -> int:
    """Where a replay of at most ``cap`` newest messages starts: on a user message, never inside a tool unit.

    The first user message at or after the cut; without one, the last user
    message before it (the current turn is never cut); without any user message, 0.
    """
    cut = max(len(messages) - cap, 0)
    for i in range(cut, len(messages)):
        if messages[i].role == "user":
            return i
    for i in range(cut - 1, -1, -1):
        if messages[i].role == "user":
            return i
    return 0


class History:
    """Returns the messages stored in the state, converted, id-stamped and annotated.

    The result is a :class:`~ctxcore.engine.lazy.LazyMessages`: new items are
    checked eagerly (an invalid one fails the build), a plain chat dict is kept as a
    stand-in whose structural fields the walks read, and the message (converted,
    annotated, markers neutralised) is made only when a consumer indexes it, and
    memoised per stored object. When the stored list
    only grew since the last call (see the module docstring for the proof), only
    the new tail is looked at: a next-turn build costs what was appended plus a
    check of the last :data:`GUARD` items, not a walk or a comparison of the history.
    """

    def __init__(self, state_key: str = "messages", *, annotate: bool = True, neutralize_markers: bool = True,
                 working_memory: Any = None, replay_cap: int | Literal["auto"] | None = None,
                 context_window: int | None = None) -> None:
        self.state_key = state_key
        self.replay_cap = resolve_replay_cap(replay_cap, context_window)
        self.annotate = annotate
        self.neutralize = neutralize_markers
        self.working_memory = working_memory
        # What the last call saw: the list object, its items (by reference) and their conversions,
        # and (index, private deep copy or None for a Message) of the last GUARD items.
        self._source: Sequence[Any] | None = None
        self._seen: list[Any] = []
        self._guard: list[tuple[int, Any]] = []
        self._raw: list[Message | _Stored | _Pending] = []  # a plain dict is stored as a stand-in (see _Stored)
        self._contents: dict[int, str] = {}  # the stand-ins' contents by item index (see _Stored)
        self._ends: list[int] | None = None  # see _extend: None while each item made one message
        self._open: int | None = None  # first item of a run of Responses calls at the end (it may grow)
        # The semantics note followed by the messages of self._raw (append-only too), while the note is shown.
        self._shown: list[Message | _Stored | _Pending] | None = None
        self._shown_of: list[Message | _Stored | _Pending] | None = None  # the self._raw that self._shown follows
        self._ids: dict[str, int] = {}  # id -> its first position in self._raw (entries never change)
        self._firsts: dict[int, int] = {}  # item index -> position of its first message, for _Pending items (the same)
        self._semantic = False  # whether any stored message's derived form carries a semantic_kind
        self._memo: dict[int, tuple[Message, Message]] = {}
        self._semantics: Message | None = None
        if annotate:
            text = get_prompt("history_semantics")
            self._semantics = system(text, id=stable_id("history_semantics", text), priority=90) if text else None

    def get_messages(self, state: Mapping[str, Any], runtime: Mapping[str, Any]) -> Sequence[Message]:
        """Convert ``state[state_key]`` to messages (empty when the key is absent).

        Raises:
            ValueError: the value is not a list, or an item is not a valid message;
                the message names the state key and the item index.
        """
        items = state.get(self.state_key)
        if items is None:
            items = ()
        if not isinstance(items, (list, tuple)):
            raise ValueError(f"state[{self.state_key!r}] must be a list of messages, not {type(items).__name__}")
        self._update(items)
        note = self._semantics if self._semantic else None
        raw = self._raw
        ids: list[Container[str]] = [_IdsBefore(self._ids, len(raw), raw, self.state_key, self._firsts)]
        if note is not None:
            ids.append(frozenset((note.id,)))
        # A snapshot of an append-only list: no copy; the next call's snapshot of the same list proves growth.
        # The engine reads a stand-in as a structure item only (ctxcore.engine.lazy); the first layer makes its Message.
        structure = Snapshot(cast("list[Message]", raw if note is None else self._with_note(note)))
        out: Sequence[Message] = LazyMessages(structure, [(self._derive, self._memo)], ids)
        if self.replay_cap is not None and len(raw) > self.replay_cap:
            start = replay_start(cast("list[Message]", raw), self.replay_cap)  # looks at the newest messages only (unless none is a user)
            kept = cast("list[Message]", [*([note] if note is not None else []), *raw[start:]])
            out = LazyMessages(Snapshot(kept), [(self._derive, self._memo)])
        wm = self.working_memory if self.working_memory is not None else runtime.get("working_memory")
        if wm is not None:
            out = list(wm.build_view(list(out)))
            for i, m in enumerate(out):
                if not isinstance(m, Message):
                    raise ValueError(f"working_memory.build_view returned a {type(m).__name__} at {i}, not a Message")
        return out

    def _with_note(self, note: Message) -> list[Message | _Stored | _Pending]:
        """The semantics note followed by the stored messages: a list kept in step with ``self._raw`` by appends.

        A new list when ``self._raw`` is a new list (it was rebuilt) or the note
        changed; otherwise only the messages appended since are added.
        """
        shown, raw = self._shown, self._raw
        if shown is None or self._shown_of is not raw or shown[0] is not note:
            shown = self._shown = [note, *raw]
            self._shown_of = raw
        elif len(shown) <= len(raw):
            shown.extend(raw[len(shown) - 1:])
        return shown

    def _update(self, items: Sequence[Any]) -> bool:
        """Bring the conversion up to date with ``items``: only the new tail when the old items are unchanged.

        Returns whether the stored messages only grew (the messages made before
        are all still there, unchanged, at the same places).
        """
        n = len(self._seen)
        # Converting thousands of items creates several long-lived objects each; the cyclic
        # collector would walk the whole heap several times meanwhile (a third of a cold
        # 20,000-message build) to find no garbage: none of them is garbage, none forms a
        # cycle. So it waits until they are made (a caller's own gc.disable() is kept).
        pause = (len(items) - n > PAUSE_GC or (items is not self._source and len(items) > PAUSE_GC)) and gc.isenabled()
        if pause:
            gc.disable()
        try:
            extended = self._converted(items, n)
        finally:
            if pause:
                gc.enable()
        self._source = items
        self._guard_tail(items)
        return extended

    def _converted(self, items: Sequence[Any], n: int) -> bool:
        """:meth:`_update`'s conversion; returns whether the stored messages only grew."""
        if n and len(items) >= n and self._grew(items, n):
            if n < len(items) and self._open is not None and _is_call(items[n]):
                self._extend(items, self._reopen())  # a Responses call joins the parallel calls before it
                extended = False
            else:
                self._extend(items, n)
                extended = True
        else:
            self._rebuild(items)
            extended = False
        return extended

    def _extend(self, items: Sequence[Any], start: int, old: _Old | None = None) -> None:
        """Convert ``items[start:]`` and append the messages made (reusing ``old`` conversions of unchanged items).

        One item makes one message, except an Anthropic user turn with tool
        results (one message per result), a Responses ``reasoning`` item (none)
        and a run of Responses ``function_call`` items (one assistant message
        for the run). While every item made exactly one message, item ``k``'s
        message is ``raw[k]`` and ``self._ends`` is ``None``; otherwise
        ``self._ends[k]`` is the length of ``raw`` after item ``k``.
        """
        raw, seen, ids, firsts = self._raw, self._seen, self._ids, self._firsts
        self._open = None
        n = len(items)
        i = start if old is not None or self._ends is not None else self._extend_plain(items, start)
        semantic = self._semantic
        while i < n:
            item = items[i]
            count = 1
            made: Message | _Stored | _Pending | Sequence[Message | _Stored | _Pending] | None
            made = _reuse(old, i, item) if old is not None else None
            if made is None:
                if _is_call(item):  # parallel calls: the run of function_call items is one assistant message
                    j = i + 1
                    while j < n and _is_call(items[j]):
                        j += 1
                    made, count = self._run(items, i, j), j - i
                    if j == n:
                        self._open = i  # the next item may be one more call of the run
                else:
                    made = self._convert(i, item)
            if isinstance(made, (Message, _Stored, _Pending)):  # the common case: one item, one message
                raw.append(made)
                if type(made) is _Pending:  # _IdsBefore finds it by its item's first position
                    firsts[i] = len(raw) - 1
                elif type(made) is not _Stored or made.index != len(raw) - 1:  # else _IdsBefore finds it by position
                    ids.setdefault(made.id, len(raw) - 1)
                semantic = semantic or self._is_semantic(made)
                if count == 1:
                    seen.append(item)
                    if self._ends is not None:
                        self._ends.append(len(raw))
                    i += 1
                    if old is None and self._ends is None and i < n:  # the plain dicts after it: the tight loop again
                        self._semantic = semantic
                        i = self._extend_plain(items, i)
                        semantic = self._semantic
                    continue
            else:
                assert made is not None
                raw.extend(made)
                for k, m in enumerate(made, len(raw) - len(made)):
                    if type(m) is _Pending:
                        firsts.setdefault(i, k)
                    else:
                        ids.setdefault(m.id, k)
                semantic = semantic or any(map(self._is_semantic, made))
            if self._ends is None:  # the first item that does not make exactly one message
                self._ends = list(range(1, len(seen) + 1))
            seen.extend(items[i:i + count])
            self._ends.extend(repeat(len(raw), count))
            i += count
        self._semantic = semantic

    def _extend_plain(self, items: Sequence[Any], start: int) -> int:
        """Take the run of plain chat dicts from ``start`` (the usual history) in one tight loop; returns where it stopped.

        Plain: a dict without a ``type`` key whose content is a string or null,
        so it is a chat message in every API's reading (see :func:`_format`).
        The first other item (a Message, content parts, a Responses item) ends
        the run; the general loop of :meth:`_extend` takes over there. A dict
        that passes the plain check becomes a :class:`_Stored` stand-in (its
        :class:`Message` and id are made when it is read); any other dict of
        the run is converted (and checked) here.
        """
        key, raw = self.state_key, self._raw
        first = len(raw)
        try:
            i = Message.from_openai_run(items, start, raw, partial(_chat_id, key), _Stored, self._contents, key)
        except (ValueError, KeyError, TypeError) as exc:
            index = start + len(raw) - first
            del raw[first:]
            raise ValueError(f"state[{key!r}][{index}]: {exc}") from exc
        self._seen.extend(items[start:i])
        made = raw[first:]
        ids = self._ids
        # a stand-in's id names its position (_IdsBefore finds it without computing it): index the others only,
        # found by a C-level pass
        for k in compress(range(first, len(raw)), map(is_not, map(type, made), repeat(_Stored))):
            ids.setdefault(raw[k].id, k)
        self._semantic = self._semantic or any(map(self._is_semantic, made))  # stops at the first tool message
        return i

    def _reopen(self) -> int:
        """Take back the messages of the open run of Responses calls; returns the index of its first item.

        The stored messages and their ids are published (snapshots), so they are
        replaced by shortened copies, never shortened in place.
        """
        start = self._open
        assert start is not None
        ends = self._ends
        cut = start if ends is None else (ends[start - 1] if start else 0)
        self._ids = {k: v for k, v in self._ids.items() if v < cut}
        self._firsts = {k: v for k, v in self._firsts.items() if v < cut}
        self._raw = self._raw[:cut]
        del self._seen[start:]
        if ends is not None:
            del ends[start:]
        self._open = None
        return start

    def _grew(self, items: Sequence[Any], n: int) -> bool:
        """Whether the first ``n`` of ``items`` are the items seen last time (so the list only grew).

        The same list object is trusted for everything older than the last
        :data:`GUARD` items it held (a pointer check and a length); another list
        (or tuple) gets one C-level comparison with the items seen (identical
        objects compare by pointer). In both cases the last ``GUARD`` items are
        checked: the same objects, and each dict equal to the private copy taken
        when it was seen, which catches a dict edited in place (a streamed answer,
        a retried request) where that happens.
        """
        if items is not self._source:
            prefix = items[:n]
            if (prefix if isinstance(prefix, list) else list(prefix)) != self._seen:
                return False
        return self._guard_holds(items)

    def _guard_holds(self, items: Sequence[Any]) -> bool:
        """The last items seen are still the same objects at the same places, and the dicts unedited."""
        seen = self._seen
        for index, copied in self._guard:
            item = items[index]
            if item is not seen[index] or (copied is not None and item != copied):
                return False
        return True

    def _guard_tail(self, items: Sequence[Any]) -> None:
        """Remember the last :data:`GUARD` items (private deep copies of dicts) for the next check."""
        start = max(0, len(items) - GUARD)
        kept = {index: copied for index, copied in self._guard if index >= start}
        guard = []
        for index in range(start, len(items)):
            item = items[index]
            guard.append((index, kept[index] if index in kept else None if isinstance(item, Message) else private_copy(item)))
        self._guard = guard

    def _rebuild(self, items: Sequence[Any]) -> None:
        """The list changed under the old items: start over, reusing conversions of unchanged items."""
        old: _Old = (self._seen, self._raw, self._ends, dict(self._guard))
        self._seen, self._raw, self._ids, self._semantic, self._guard, self._ends = [], [], {}, False, [], None
        self._firsts = {}
        if all(map(isinstance, items, repeat(Message))):  # Message items: C-level passes, no per-item Python
            self._seen, self._raw = list(items), list(items)
            _index_ids(self._ids, self._raw, 0)
            self._semantic = any(map(self._is_semantic, self._raw))  # stops at the first tool message
            self._open = None
        else:
            self._extend(items, 0, old if old[0] else None)
        if old[0]:  # stand-ins may have been reused
            self._rehome()
        if len(self._memo) > 2 * len(self._raw) + 64:  # forget derived forms of messages no longer stored
            alive = set(map(id, self._raw))
            self._memo = {k: v for k, v in self._memo.items() if k in alive}

    def _rehome(self) -> None:
        """Give the stand-ins a rebuild kept a new contents store holding theirs only.

        A rebuild reuses the stand-ins of unchanged items (at their own item
        index: a stand-in's key in the store stays unique) and makes none, so
        the old store would keep the contents of the items that went. Each kept
        one (the same object: the layers' memos are keyed by it) gets the new
        store as its own ``_store`` attribute, which overrides its ``store``
        field; the stand-ins only earlier snapshots hold keep the old store,
        unchanged.
        """
        contents: dict[int, str] = {}
        for m in self._raw:
            if type(m) is _Stored:
                content = m.content
                if content is not None:
                    contents[m.index] = content
                m._store = contents  # its own, over the field: other snapshots' stand-ins keep the old store
        self._contents = contents

    def _convert(self, index: int, item: Any) -> Message | _Pending | list[Message] | list[_Pending]:
        """The message(s) of one stored item: a Message as it is, a dict by its format (see :func:`_format`)."""
        if isinstance(item, Message):
            return item
        if type(item) is not dict and not isinstance(item, Mapping):
            raise ValueError(f"state[{self.state_key!r}][{index}] is a {type(item).__name__}, not a message dict")
        key = self.state_key
        try:
            kind = _format(item)
            if kind == "openai" and type(item.get("content")) is not list:  # its id is cheap: made now
                return Message.from_openai(item, id=_stable_id(key, index, item))
            if kind == "openai":  # content parts: the id dumps them, so it is made when asked for
                made = [Message.from_openai(item)]
            else:
                made = messages_from_anthropic(item) if kind == "anthropic" else messages_from_responses([item])
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"state[{key!r}][{index}]: {exc}") from exc
        material = _json_copy(item)
        if material is not _UNCOPIED:  # its id when it is asked for, from what the dict is now
            if len(made) == 1:
                return _Pending(made[0], material, key, index, 0)
            return [_Pending(m, material, key, index, k) for k, m in enumerate(made)]
        base = _stable_id(key, index, item)
        if len(made) == 1:
            return made[0].model_copy(update={"id": base})
        return [m.model_copy(update={"id": f"{base}.{k}" if k else base}) for k, m in enumerate(made)]

    def _run(self, items: Sequence[Any], start: int, stop: int) -> Message:
        """The one assistant message of the Responses ``function_call`` items ``items[start:stop]``."""
        run = items[start:stop]
        try:
            made = messages_from_responses(run)
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"state[{self.state_key!r}][{start}:{stop}]: {exc}") from exc
        reading = "\x1d".join(_stable_id("", 0, item) for item in run)
        return made[0].model_copy(update={"id": f"{self.state_key}:{start}:{zlib.crc32(reading.encode()):08x}"})

    def _is_semantic(self, m: Message | _Stored | _Pending) -> bool:
        """Whether the derived form of ``m`` carries a semantic_kind (decides the explanation message)."""
        if type(m) is _Stored:  # a plain dict's metadata is empty
            return self.annotate and (m.role == "tool" or bool(m.tool_calls))
        if "semantic_kind" in m.metadata:
            return bool(m.metadata["semantic_kind"])
        return self.annotate and ((m.role == "assistant" and bool(m.tool_calls)) or m.role == "tool")

    def _derive(self, stored: Message | _Stored | _Pending) -> Message:
        """The message as the history shows it: a stand-in's message made, annotated, markers neutralised.

        A stand-in's message is made in one step, with its neutralised content
        and its annotation (:meth:`Message.from_deferred`): exactly the
        ``model_copy`` of its plain message that a stored ``Message`` gets below.
        """
        if type(stored) is _Stored:
            role, content = stored.role, stored.content
            if self.neutralize and content is not None:
                content = _clean_content(content, strip=role == "user")
            metadata = None
            if self.annotate:
                if role == "tool":
                    metadata = {"semantic_kind": TOOL_OBSERVATION}
                elif stored.tool_calls and role == "assistant":
                    metadata = {"semantic_kind": SELF_TOOL_PLAN}
            return Message.from_deferred(stored.id, role, content, stored.name, stored.tool_call_id, stored.tool_calls,
                                         metadata)
        update: dict[str, Any] = {}
        if type(stored) is _Pending:
            m = stored.message
            update["id"] = stored.id
        else:
            m = cast(Message, stored)
        if self.neutralize and m.content is not None:  # every role: assistant text can quote a forged marker too
            content = _clean_content(m.content, strip=m.role == "user")
            if content is not m.content:
                update["content"] = content
        if self.annotate and "semantic_kind" not in m.metadata:
            kind = SELF_TOOL_PLAN if (m.role == "assistant" and m.tool_calls) else TOOL_OBSERVATION if m.role == "tool" else None
            if kind is not None:
                update["metadata"] = {**m.metadata, "semantic_kind": kind}
        return m.model_copy(update=update) if update else m


# Values a private copy may share with the original: nothing can change them in place.
_IMMUTABLE = frozenset({str, int, float, bool, type(None), bytes})


def private_copy(value: Any) -> Any:
    """A copy of ``value`` that equals it and shares nothing mutable with it (the guard's copy of a stored dict).

    The same as :func:`copy.deepcopy` for what the guard compares (``==``), at a
    fraction of its cost for JSON-like dicts: nested dicts and lists are
    rebuilt, strings and numbers shared, anything else deep-copied.
    """
    kind = type(value)
    if kind is dict:
        return {k: v if type(v) in _IMMUTABLE else private_copy(v) for k, v in value.items()}
    if kind is list:
        return [v if type(v) in _IMMUTABLE else private_copy(v) for v in value]
    if kind in _IMMUTABLE:
        return value
    return copy.deepcopy(value)


def _clean_text(text: str, strip: bool) -> str:
    if strip and OPEN_MARKER in text:
        text = strip_runtime_blocks(text)
    return neutralize_markers(text) if has_marker(text) else text


def _clean_content(content: Any, strip: bool) -> Any:
    if isinstance(content, str):
        cleaned = _clean_text(content, strip)
        return content if cleaned == content else cleaned
    blocks = []
    changed = False
    for b in content:
        if isinstance(b, TextBlock):
            cleaned = _clean_text(b.text, strip)
            if cleaned != b.text:
                b = TextBlock(text=cleaned)
                changed = True
        blocks.append(b)
    return tuple(blocks) if changed else content


_ID = attrgetter("id")


def _index_ids(ids: dict[str, int], raw: Sequence[Message | _Stored | _Pending], first: int) -> None:
    """Record the ids of ``raw[first:]`` with their positions; an id seen before keeps its first position."""
    if not ids:  # a cold build: one C-level pass, newest first so that each id's first position is written last
        ids.update(zip(map(_ID, reversed(raw[first:])), range(len(raw) - 1, first - 1, -1), strict=True))
        return
    for k in range(first, len(raw)):
        ids.setdefault(raw[k].id, k)


class _IdsBefore:
    """The ids of the first ``length`` stored messages, without computing a stand-in's id.

    An eagerly converted message's id is in the id -> first position map
    (``positions``; it grows as messages are appended, and a snapshot's ids
    stay those of its own messages). A :class:`_Stored` stand-in's id,
    ``"<key>:<position>:<crc>"``, names its position in ``raw``, so a lookup
    parses the position and compares with that stand-in's id (computed once,
    cached): one id per lookup, not one per stored message.
    """

    __slots__ = ("positions", "length", "raw", "prefix", "firsts")

    def __init__(self, positions: dict[str, int], length: int, raw: list[Message | _Stored | _Pending], key: str,
                 firsts: dict[int, int] | None = None) -> None:
        self.positions = positions
        self.length = length
        self.raw = raw
        self.prefix = f"{key}:"
        self.firsts = {} if firsts is None else firsts

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, str):
            return False
        at = self.positions.get(key)
        if at is not None:
            return at < self.length
        prefix = self.prefix
        if not key.startswith(prefix):
            return False
        end = key.find(":", len(prefix))
        digits = key[len(prefix):end]
        if end < 0 or not digits.isdigit() or not digits.isascii():
            return False
        index = int(digits)
        if index < self.length:
            m = self.raw[index]
            if type(m) is _Stored and m.index == index:
                return m.id == key
        return self._pending(key, index, end)

    def _pending(self, key: str, index: int, end: int) -> bool:
        """Whether ``key`` is the id of a :class:`_Pending` message of item ``index`` (``"...:<crc>[.<k>]"``)."""
        first = self.firsts.get(index)
        if first is None:
            return False
        dot = key.find(".", end)
        sub = key[dot + 1:] if dot >= 0 else "0"
        if not sub.isdigit() or not sub.isascii():
            return False
        at = first + int(sub)
        if at >= self.length:
            return False
        m = self.raw[at]
        return type(m) is _Pending and m.index == index and m.id == key


class _Pending:
    """A converted Anthropic or Responses item's message whose id is computed when it is first asked for.

    The id of such an item is :func:`_stable_id` of the whole dict, which dumps
    it as JSON: most of a cold build's cost for those forms, and a build reads
    the ids of the few messages it keeps. So :meth:`History._convert` keeps
    the message it converted (checked, with the converter's random id) with
    ``material``, a copy of the dict as it was stored (:func:`_json_copy`:
    only plain JSON values, so its JSON is the dict's; a later in-place edit
    of the dict does not reach it), and the id is made from it on first use.
    The walks read the message's structural fields through it (see
    :mod:`ctxcore.engine.lazy`); the first layer (:meth:`History._derive`)
    gives the message with its id: exactly the message the item was stored
    as before (``message.model_copy(update={"id": ...})``), and
    :class:`_IdsBefore` finds it by its item index (``firsts``) without
    computing any other id.
    """

    __slots__ = ("message", "material", "key", "index", "sub", "_id")

    # the structural fields the walks read, and the message's content and provenance (set below the class)
    role: str
    zone: str
    trust: str
    priority: int
    source: str | None
    tool_call_id: str | None
    tool_calls: tuple[Any, ...]
    tool_call_ids: tuple[str, ...]
    metadata: dict[str, Any]
    content: Any

    def __init__(self, message: Message, material: Any, key: str, index: int, sub: int) -> None:
        self.message, self.material, self.key, self.index, self.sub = message, material, key, index, sub
        self._id: str | None = None

    @property
    def id(self) -> str:
        """:func:`_stable_id` of the stored dict (``.<k>`` for the item's ``k``-th message after the first), kept once made."""
        made = self._id
        if made is None:
            base = _stable_id(self.key, self.index, self.material)
            made = self._id = f"{base}.{self.sub}" if self.sub else base
        return made

    def __repr__(self) -> str:
        return f"_Pending({self.key}[{self.index}].{self.sub}, {self.message.role})"


for _field in ("role", "zone", "trust", "priority", "source", "tool_call_id", "tool_calls", "tool_call_ids", "metadata", "content"):
    setattr(_Pending, _field, property(attrgetter(f"message.{_field}")))

# Values a JSON copy shares with the dict: nothing changes them in place, and their JSON is their own.
_JSON_SCALARS = frozenset({str, int, float, bool, type(None)})
_UNCOPIED: Any = object()


def _json_copy(value: Any) -> Any:
    """A copy of ``value`` whose JSON is its JSON now, whatever happens to it later; :data:`_UNCOPIED` if unsure.

    Dicts with ``str`` keys and lists are rebuilt, ``str``, ``int``, ``float``,
    ``bool`` and ``None`` shared; anything else (an object whose JSON is its
    ``str()``, which may change; a non-``str`` key; nesting too deep) gives
    :data:`_UNCOPIED`, and the item's id is made now instead.
    """
    try:
        return _copied(value)
    except RecursionError:
        return _UNCOPIED


def _copied(value: Any) -> Any:
    kind = type(value)
    if kind in _JSON_SCALARS:
        return value
    if kind is dict:
        out = {}
        for k, v in value.items():
            if type(k) is not str:
                return _UNCOPIED
            v = v if type(v) in _JSON_SCALARS else _copied(v)
            if v is _UNCOPIED:
                return _UNCOPIED
            out[k] = v
        return out
    if kind is list:
        copied = [v if type(v) in _JSON_SCALARS else _copied(v) for v in value]
        return _UNCOPIED if _UNCOPIED in copied else copied
    return _UNCOPIED


#: A stand-in's fields, in the order :meth:`Message.from_openai_run` gives them: the history's state key
#: (the id's prefix); the provider's {item index: content} store when it was made (the id is cached there
#: too, at -1 - index; a rebuild may give the stand-in another, see History._rehome); the item's index in
#: the stored list; the role (the interned name); the dict's name or None; the call a tool result answers
#: or None; (id, name, arguments) of each call, flat; the role's default trust and zone.
_StoredFields = namedtuple("_StoredFields", "key store index role name tool_call_id tool_calls trust zone")


class _Stored(tuple):  # type: ignore[type-arg]
    """A plain stored chat dict, read once: its structural fields now, its :class:`Message` when it is read.

    Made by :meth:`History._extend_plain` for a dict that passed the plain
    check (:meth:`Message.from_openai_run`'s ``defer``), so building the message
    later cannot fail. It holds what the message is made of (role, content,
    name, tool_call_id, and ``(id, name, arguments)`` of each tool call (one flat tuple), read
    when the dict was stored: a later in-place edit of the dict does not reach
    it) and gives the engine's whole-history walks what they read from a lazy
    sequence's ``structure`` (see :mod:`ctxcore.engine.lazy`): ``role``,
    ``zone``, ``trust``, ``priority``, ``tool_call_id``, ``tool_calls`` (truthy
    when the dict requests calls), ``tool_call_ids`` and ``id`` (computed on
    first use, then kept). Nothing outside this module sees one: the history's
    first layer (:meth:`History._derive`) turns it into its message, which is
    exactly ``Message.from_openai(dict, id=_stable_id(key, position, dict))``.

    A tuple subclass with namedtuple's C-level field getters (those of
    ``_StoredFields``) and tuple's own constructor, which
    :meth:`Message.from_openai_run` calls on one tuple of the fields: no
    Python code runs per stored dict (a class with a Python ``__init__``
    setting ten slots cost about twice as much per dict, half of the
    provider's time in a cold 20,000-dict build; namedtuple's own
    ``__new__`` is Python code, and ``tuple.__new__`` through a ``partial``
    made the run over 20,000 dicts about 14% dearer than calling the class).
    The content (a string, read by no walk) is not one of its fields: it is
    kept in the provider's store, a plain ``{item index: text}`` dict
    (``store``; the id, once computed, is kept there too), which the cyclic
    garbage collector does not track (a dict of strings never is). As a field it would make the collector's pass over 20,000 new
    stand-ins (one pass, once the conversion is done) read 20,000 texts'
    headers scattered over the history's memory: measured, that pass cost two
    to three times as much with the texts in the stand-ins.
    """

    # No __slots__: an instance's __dict__ (made only by _rehome) holds the store a rebuild gave it.
    _store: dict[int, str]
    # The fields by position (set below the class: the getters of _StoredFields, C descriptors).
    key: str
    store: dict[int, str]
    index: int  # type: ignore[assignment]  # shadows tuple.index, as the namedtuple's field did
    role: str
    name: str | None
    tool_call_id: str | None
    tool_calls: tuple[str, ...]
    trust: str
    zone: str

    priority = 0
    source = None
    # A stand-in is one stored item: equal only to itself (a tuple compares by value, and its store is big).
    __eq__ = object.__eq__
    __ne__ = object.__ne__
    __hash__ = object.__hash__

    @property
    def content(self) -> str | None:
        """The dict's content as it was stored."""
        return getattr(self, "_store", self[1]).get(self[2])

    @property
    def tool_call_ids(self) -> tuple[str, ...]:
        """The ids of the calls the dict requests."""
        return self.tool_calls[0::3]  # flat (id, name, arguments, ...): a C-level slice

    @property
    def metadata(self) -> dict[str, Any]:
        """A plain dict's message has no metadata."""
        return {}

    @property
    def id(self) -> str:
        """:func:`_stable_id` of the dict (computed once, from the fields read, and kept in the store)."""
        store, index = getattr(self, "_store", self[1]), self[2]
        made: str | None = store.get(-1 - index)
        if made is None:
            made = store[-1 - index] = _fields_id(self[0], index, self[3], store.get(index), self[4], self[5], self[6])
        return made

    def message(self) -> Message:
        """The dict's plain :class:`Message` (what :meth:`History._convert` makes of it, before annotation)."""
        return Message.from_deferred(self.id, self.role, self.content, self.name, self.tool_call_id, self.tool_calls)

    def __repr__(self) -> str:
        return f"_Stored({self[0]}[{self[2]}], {self[3]})"


for _field in _StoredFields._fields:  # namedtuple's C-level field getters, without its Python __new__
    setattr(_Stored, _field, getattr(_StoredFields, _field))
del _field


def _unchanged(item: Any, old: Any, copied: Any) -> bool:
    """Whether a dict may reuse the conversion of the item seen at its place (see :meth:`History._grew`)."""
    if item is old:
        return copied is None or item == copied  # only the last GUARD items are checked for edits in place
    return isinstance(item, Mapping) and item == old


# What a rebuild may reuse: the items seen, the messages made, their ends (see History._extend), the guard copies.
_Old = tuple[list[Any], "list[Message | _Stored | _Pending]", "list[int] | None", dict[int, Any]]


def _reuse(old: _Old, index: int, item: Any) -> Message | _Stored | _Pending | list[Message | _Stored | _Pending] | None:
    """The old conversion of an unchanged dict at ``index`` (``None``: convert it), never of a Responses call.

    A call is converted with its run of neighbours, which may have changed.
    """
    seen, raw, ends, guarded = old
    if index >= len(seen) or isinstance(item, Message) or _is_call(item) or not _unchanged(item, seen[index], guarded.get(index)):
        return None
    if ends is None:
        return raw[index]
    made = raw[ends[index - 1] if index else 0:ends[index]]
    return made[0] if len(made) == 1 and not _is_call(seen[index]) else made


def _is_call(item: Any) -> bool:
    """Whether a stored item is a Responses ``function_call`` input item."""
    return type(item) is dict and item.get("type") == "function_call"


# Block types only Anthropic messages have (OpenAI chat parts are text, image_url, file).
_ANTHROPIC_BLOCKS = frozenset({"tool_use", "tool_result", "thinking", "redacted_thinking", "image", "document"})
# Content part types only Responses input messages have.
_RESPONSES_PARTS = frozenset({"input_text", "output_text", "input_image", "input_file", "refusal"})


def _format(item: Mapping[str, Any]) -> str:
    """Which API's message a dict is: ``openai`` (chat completions), ``anthropic`` or ``responses``.

    A ``type`` key (``message``, ``function_call_output``, ``reasoning``...) or a
    Responses content part type makes a Responses item; an Anthropic-only block
    type (``tool_use``, ``tool_result``, ``image``, ``thinking``...) an Anthropic
    message; everything else, including string content (which reads the same in
    all three), is read as an OpenAI chat message.
    """
    if "type" in item:
        return "responses"
    content = item.get("content")
    if type(content) is list:
        for block in content:
            kind = block.get("type") if isinstance(block, Mapping) else None
            if kind in _ANTHROPIC_BLOCKS:
                return "anthropic"
            if kind in _RESPONSES_PARTS:
                return "responses"
    return "openai"


_crc32 = zlib.crc32
# How many characters of each end of a text go into a dict's id (with the text's length).
ID_EDGE = 64


_SHORT = 2 * ID_EDGE


def _edges(text: str) -> str:
    """A text's length and its first and last :data:`ID_EDGE` characters: cheap, and pure in the text."""
    if len(text) <= 2 * ID_EDGE:
        return text
    return f"{len(text)}\x1f{text[:ID_EDGE]}\x1f{text[-ID_EDGE:]}"


def _calls_key(calls: Any) -> str:
    """The tool calls of a dict as id material: their ids, names and argument edges (JSON for other shapes)."""
    parts = []
    for c in calls if isinstance(calls, list) else ():
        fn = c.get("function") if isinstance(c, dict) else None
        if not isinstance(fn, dict):
            break
        args, call_id, name = fn.get("arguments"), c.get("id"), fn.get("name")
        if not isinstance(args, str) or not (call_id is None or isinstance(call_id, str)) or not isinstance(name, str):
            break
        if len(args) > _SHORT:
            args = f"{len(args)}\x1f{args[:ID_EDGE]}\x1f{args[-ID_EDGE:]}"
        parts.append(f"{call_id}\x1e{c.get('type')}\x1e{name}\x1e{args}")
    else:
        return "\x1d".join(parts)
    return json.dumps(calls, sort_keys=True, default=str)


def _stable_id(key: str, index: int, item: Mapping[str, Any]) -> str:
    """An id from the position and what the model reads of the dict, computed before any conversion.

    ``"<state key>:<position>:<crc32 of the dict's reading>"``. Stable: a pure
    function of the state key, the position and the dict's value (equal dicts
    get equal ids), so the same history built twice, or by a fresh builder, gets
    the same ids. Distinct within a history: the position is part of it. Cheap:
    a long text enters the checksum by its length and its first and last
    :data:`ID_EDGE` characters, not whole (hashing every byte of a
    20,000-message history was a quarter of a cold build). So an edit inside a
    long message that keeps its length and both ends keeps the id; its
    fingerprint (what count caches key on) still changes. See
    docs/providers.md, "history".
    """
    if "type" in item:  # a Responses item: all of it
        reading = _edges(json.dumps(item, sort_keys=True, default=str))
        return f"{key}:{index}:{zlib.crc32(reading.encode('utf-8', 'surrogatepass')):08x}"
    return _chat_id(key, index, item, item.get("content"))


def _fields_id(key: str, index: int, role: str, content: str | None, name: str | None, call_id: str | None,
               calls: tuple[str, ...]) -> str:
    """:func:`_chat_id` of a plain dict from the fields a :class:`_Stored` read (no dict rebuilt).

    The same reading as :func:`_chat_id` (a plain call's type is ``"function"``),
    so the same id; tests/test_history_stand_ins.py holds the two equal.
    """
    if content is None:
        text = "null"
    elif len(content) > _SHORT:
        text = f"{len(content)}\x1f{content[:ID_EDGE]}\x1f{content[-ID_EDGE:]}"
    else:
        text = content
    if calls:
        at = iter(calls)
        keys = "\x1d".join([f"{i}\x1efunction\x1e{n}\x1e{a if len(a) <= _SHORT else _edges(a)}" for i, n, a in zip(at, at, at, strict=True)])
    else:
        keys = ""
    reading = f"{role}\x00{text}\x00{name}\x00{call_id}\x00{keys}"
    return f"{key}:{index}:{_crc32(reading.encode('utf-8', 'surrogatepass')):08x}"


def _chat_id(key: str, index: int, item: Mapping[str, Any], content: Any) -> str:
    """:func:`_stable_id` of a chat (or Anthropic) dict whose ``content`` was read already."""
    get = item.get
    calls = get("tool_calls")
    if type(content) is str:
        if len(content) > _SHORT:
            content = f"{len(content)}\x1f{content[:ID_EDGE]}\x1f{content[-ID_EDGE:]}"
    elif content is None:
        content = "null"  # what json.dumps gives, without the call
    else:
        content = _edges(json.dumps(content, sort_keys=True, default=str))
    reading = f"{get('role')}\x00{content}\x00{get('name')}\x00{get('tool_call_id')}\x00{_calls_key(calls) if calls else ''}"
    return f"{key}:{index}:{_crc32(reading.encode('utf-8', 'surrogatepass')):08x}"
