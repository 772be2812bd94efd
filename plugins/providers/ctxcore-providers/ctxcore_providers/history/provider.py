"""The ``history`` provider: the conversation so far, read from ``state[state_key]``, converted and id-stamped.

Two paths, one output. The reference path converts every new item eagerly
(``Message.from_openai``, ``messages_from_anthropic``,
``messages_from_responses``) and stamps its id (:mod:`.ids`); it is what
``History(fast=False)`` and :meth:`History.reference` always take, and what a
small history or a next turn takes anyway. The fast path is taken only for a
run of more than :data:`~.standins.FAST_RUN` new items: plain chat dicts become
stand-ins and other forms keep their id to be made when read (:mod:`.standins`),
because a cold build of a long history reads only the few messages a budget
keeps. Invariant: both paths give the same messages, ids, annotations and
neutralising (tests/test_history_paths.py).

Growth is proven, not re-compared: converted items are kept by reference in
a list the provider only appends to (any other change makes a new list), and
each build's result is a :class:`~ctxcore.kit.Snapshot` of it. When the state
holds the same list object as last time and it is no shorter, only the last
:data:`GUARD` items seen are checked (same objects, each dict equal to a private
copy taken when it was seen) and only the new items are converted; another list
object costs one C-level comparison with the items seen. When the list changed,
conversions of unchanged items are reused by position. Not noticed: an item
older than the last :data:`GUARD` replaced in the same list, or a dict that old
edited in place (see docs/providers.md, "history").
"""

from __future__ import annotations

import gc
from collections.abc import Container, Mapping, Sequence
from itertools import repeat
from operator import attrgetter
from typing import Any, Literal

from ctxcore import Message, messages_from_anthropic, messages_from_responses, system
from ctxcore.kit import LazyMessages, Snapshot, get_prompt
from ctxcore_providers._render import stable_id as prompt_id
from ctxcore_providers.history.config import replay_start, resolve_replay_cap
from ctxcore_providers.history.formats import UNCOPIED, clean_content, is_call, item_format, json_copy, private_copy
from ctxcore_providers.history.ids import run_id, stable_id, sub_id
from ctxcore_providers.history.standins import FAST_RUN, IdsBefore, Pending, Stored, stand_in_run

SELF_TOOL_PLAN = "self_tool_plan"
TOOL_OBSERVATION = "tool_observation"
# How many of the last items seen are checked for replacement and in-place edits on every build.
GUARD = 8
# More new items than this are converted with the cyclic garbage collector paused (see History._update).
PAUSE_GC = 1000

_ID = attrgetter("id")
#: What a rebuild may reuse: the items seen, the messages made, their ends (see History._append), the guard copies.
_Old = tuple[list[Any], list[Any], "list[int] | None", dict[int, Any]]


class History:
    """Returns the messages stored in the state, converted, id-stamped, annotated and neutralised.

    The result is a :class:`~ctxcore.kit.LazyMessages` whose structure holds
    the stored items (:class:`~ctxcore.kit.StructureItem`); annotation and
    neutralising are its first layer, made once per stored item when read.
    ``fast=False`` never takes the fast path (see the module docstring).
    """

    def __init__(self, state_key: str = "messages", *, annotate: bool = True, neutralize_markers: bool = True,
                 working_memory: Any = None, replay_cap: int | Literal["auto"] | None = None,
                 context_window: int | None = None, fast: bool = True) -> None:
        self.state_key = state_key
        self.replay_cap = resolve_replay_cap(replay_cap, context_window)
        self.annotate = annotate
        self.neutralize = neutralize_markers
        self.working_memory = working_memory
        self.fast = fast
        self._source: Sequence[Any] | None = None  # the list object the last call saw
        self._seen: list[Any] = []  # its items, by reference
        self._guard: list[tuple[int, Any]] = []  # (index, private copy or None for a Message) of the last GUARD items
        self._raw: list[Any] = []  # the stored items' structure items (Message | Stored | Pending), append-only
        self._contents: dict[int, str] = {}  # the stand-ins' contents by item index (see Stored)
        self._ends: list[int] | None = None  # see _append: None while each item made one message
        self._open: int | None = None  # first item of a run of Responses calls at the end (it may grow)
        self._shown: list[Any] | None = None  # the semantics note followed by self._raw, while the note is shown
        self._shown_of: list[Any] | None = None  # the self._raw that self._shown follows
        self._ids: dict[str, int] = {}  # id -> its first position in self._raw (entries never change)
        self._firsts: dict[int, int] = {}  # item index -> position of its first message, for Pending items
        self._semantic = False  # whether any stored message's derived form carries a semantic_kind
        self._memo: dict[int, tuple[Message, Message]] = {}
        self._semantics: Message | None = None
        if annotate:
            text = get_prompt("history_semantics")
            self._semantics = system(text, id=prompt_id("history_semantics", text), priority=90) if text else None

    def reference(self) -> History:
        """A new, memo-free twin with the same settings that never takes the fast path (``fast=False``).

        Its output for any state equals this provider's (messages, ids,
        annotations, neutralising): the reference builder builds with it.
        """
        twin = History(self.state_key, annotate=self.annotate, neutralize_markers=self.neutralize,
                       working_memory=self.working_memory, replay_cap=self.replay_cap, fast=False)
        twin._semantics = self._semantics
        return twin

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
        ids: list[Container[str]] = [IdsBefore(self._ids, len(raw), raw, self.state_key, self._firsts)]
        if note is not None:
            ids.append(frozenset((note.id,)))
        # A snapshot of an append-only list: no copy; the next call's snapshot of the same list proves growth.
        # The engine reads a stand-in as a structure item only (ctxcore.engine.lazy); the first layer makes its Message.
        structure = Snapshot(raw if note is None else self._with_note(note))
        out: Sequence[Message] = LazyMessages(structure, [(self._derive, self._memo)], ids)
        if self.replay_cap is not None and len(raw) > self.replay_cap:
            start = replay_start(raw, self.replay_cap)  # looks at the newest messages only (unless none is a user)
            kept = [*([note] if note is not None else []), *raw[start:]]
            out = LazyMessages(Snapshot(kept), [(self._derive, self._memo)])
        wm = self.working_memory if self.working_memory is not None else runtime.get("working_memory")
        if wm is not None:
            out = list(wm.build_view(list(out)))
            for i, m in enumerate(out):
                if not isinstance(m, Message):
                    raise ValueError(f"working_memory.build_view returned a {type(m).__name__} at {i}, not a Message")
        return out

    def _with_note(self, note: Message) -> list[Any]:
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

    def _update(self, items: Sequence[Any]) -> None:
        """Bring the conversion up to date with ``items``: only the new tail when the old items are unchanged.

        Converting thousands of items makes several long-lived objects each, none
        of them garbage; the cyclic collector would walk the heap several times
        meanwhile, so it waits until they are made (a caller's own gc.disable() is kept).
        """
        n = len(self._seen)
        pause = (len(items) - n > PAUSE_GC or (items is not self._source and len(items) > PAUSE_GC)) and gc.isenabled()
        if pause:
            gc.disable()
        try:
            self._converted(items, n)
        finally:
            if pause:
                gc.enable()
        self._source = items
        self._guard_tail(items)

    def _converted(self, items: Sequence[Any], n: int) -> None:
        """:meth:`_update`'s conversion: extend when the old items are unchanged, else rebuild."""
        if n and len(items) >= n and self._grew(items, n):
            if n < len(items) and self._open is not None and is_call(items[n]):
                self._extend(items, self._reopen())  # a Responses call joins the parallel calls before it
            else:
                self._extend(items, n)
        else:
            self._rebuild(items)

    def _extend(self, items: Sequence[Any], start: int, old: _Old | None = None) -> None:
        """Convert ``items[start:]`` and append their messages (reusing ``old`` conversions of unchanged items).

        The fast path only for a run of more than :data:`FAST_RUN` new items
        while each item made one message: the plain dicts become stand-ins in
        one tight loop, every other item goes through :meth:`_step`.
        """
        self._open = None
        bulk = self.fast and len(items) - start > FAST_RUN
        i, n = start, len(items)
        while i < n:
            if bulk and old is None and self._ends is None:
                i = self._extend_plain(items, i)
                if i == n:
                    break
            i = self._step(items, i, old, bulk)

    def _step(self, items: Sequence[Any], i: int, old: _Old | None, bulk: bool) -> int:
        """Convert item ``i`` (a run of Responses calls from it, as one message) and append; returns the next index."""
        item = items[i]
        count = 1
        made = _reuse(old, i, item) if old is not None else None
        if made is None and is_call(item):  # parallel calls: the run of function_call items is one assistant message
            j = i + 1
            while j < len(items) and is_call(items[j]):
                j += 1
            made, count = self._run(items, i, j), j - i
            if j == len(items):
                self._open = i  # the next item may be one more call of the run
        elif made is None:
            made = self._convert(i, item, bulk)
        self._append(i, made if isinstance(made, list) else [made], items[i:i + count])
        return i + count

    def _append(self, index: int, made: list[Any], taken: Sequence[Any]) -> None:
        """Append the messages ``made`` of the items ``taken`` (from ``index``) and index their ids.

        While every item made exactly one message, item ``k``'s message is
        ``raw[k]`` and ``self._ends`` is ``None``; otherwise ``self._ends[k]`` is
        the length of ``raw`` after item ``k``.
        """
        raw, ids = self._raw, self._ids
        for m in made:
            raw.append(m)
            if type(m) is Pending:  # IdsBefore finds it by its item's first position
                self._firsts.setdefault(index, len(raw) - 1)
            elif type(m) is not Stored or m.index != len(raw) - 1:  # else IdsBefore finds it by position
                ids.setdefault(m.id, len(raw) - 1)
        self._semantic = self._semantic or any(map(self._is_semantic, made))
        if self._ends is None and (len(made) != 1 or len(taken) != 1):  # the first item that does not make one message
            self._ends = list(range(1, len(self._seen) + 1))
        self._seen.extend(taken)
        if self._ends is not None:
            self._ends.extend(repeat(len(raw), len(taken)))

    def _extend_plain(self, items: Sequence[Any], start: int) -> int:
        """The fast path's tight loop: a :class:`Stored` for each plain chat dict from ``start``; returns where it stopped."""
        raw = self._raw
        first = len(raw)
        i = stand_in_run(items, start, raw.append, self._contents, self.state_key)
        self._seen.extend(items[start:i])
        self._semantic = self._semantic or any(map(self._is_semantic, raw[first:]))  # stops at the first tool message
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
            # newest first, so that each id's first position is written last
            self._ids.update(zip(map(_ID, reversed(self._raw)), range(len(self._raw) - 1, -1, -1), strict=True))
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

        A rebuild reuses the stand-ins of unchanged items and makes none, so the
        old store would keep the contents of the items that went. Each kept one
        (the same object: the layers' memos are keyed by it) gets the new store
        as its own ``_store``; stand-ins only earlier snapshots hold keep the old one.
        """
        contents: dict[int, str] = {}
        for m in self._raw:
            if type(m) is Stored:
                content = m.content
                if content is not None:
                    contents[m.index] = content
                m._store = contents
        self._contents = contents

    def _convert(self, index: int, item: Any, bulk: bool) -> Any:
        """The message(s) of one stored item: a Message as it is, a dict by its format (see :func:`item_format`).

        On the fast path (``bulk``) a form whose id dumps the dict as JSON keeps
        its message as a :class:`Pending`, whose id is made when asked for.
        """
        if isinstance(item, Message):
            return item
        if type(item) is not dict and not isinstance(item, Mapping):
            raise ValueError(f"state[{self.state_key!r}][{index}] is a {type(item).__name__}, not a message dict")
        key = self.state_key
        try:
            kind = item_format(item)
            if kind == "openai" and (not bulk or type(item.get("content")) is not list):
                return Message.from_openai(item, id=stable_id(key, index, item))
            if kind == "openai":
                made = [Message.from_openai(item)]
            else:
                made = messages_from_anthropic(item) if kind == "anthropic" else messages_from_responses([item])
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"state[{key!r}][{index}]: {exc}") from exc
        material = json_copy(item) if bulk else UNCOPIED
        if material is not UNCOPIED:
            return [Pending(m, material, key, index, k) for k, m in enumerate(made)]
        base = stable_id(key, index, item)
        return [m.model_copy(update={"id": sub_id(base, k)}) for k, m in enumerate(made)]

    def _run(self, items: Sequence[Any], start: int, stop: int) -> Message:
        """The one assistant message of the Responses output items (function calls, reasoning...) ``items[start:stop]``."""
        run = items[start:stop]
        try:
            made = messages_from_responses(run)
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"state[{self.state_key!r}][{start}:{stop}]: {exc}") from exc
        return made[0].model_copy(update={"id": run_id(self.state_key, start, run)})

    def _is_semantic(self, m: Any) -> bool:
        """Whether the derived form of stored item ``m`` carries a semantic_kind (decides the explanation message)."""
        if "semantic_kind" in m.metadata:
            return bool(m.metadata["semantic_kind"])
        return self.annotate and ((m.role == "assistant" and m.has_tool_calls) or m.role == "tool")

    def _derive(self, stored: Any) -> Message:
        """The message as the history shows it: a stand-in's message made, annotated, markers neutralised.

        Invariant: the same message whichever path stored the item (a stand-in's
        message is made in one step with the update a stored ``Message`` gets).
        """
        m: Message = stored.message if type(stored) is Pending else stored
        update: dict[str, Any] = {} if type(stored) is not Pending else {"id": stored.id}
        content = stored.content
        if self.neutralize and content is not None:  # every role: assistant text can quote a forged marker too
            cleaned = clean_content(content, strip=stored.role == "user")
            if cleaned is not content:
                update["content"] = cleaned
        if self.annotate and "semantic_kind" not in stored.metadata:
            kind = SELF_TOOL_PLAN if (stored.role == "assistant" and stored.has_tool_calls) else (
                TOOL_OBSERVATION if stored.role == "tool" else None)
            if kind is not None:
                update["metadata"] = {**stored.metadata, "semantic_kind": kind}
        if type(stored) is Stored:
            return stored.message(update.get("content"), update.get("metadata"))
        return m.model_copy(update=update) if update else m


def _unchanged(item: Any, old: Any, copied: Any) -> bool:
    """Whether a dict may reuse the conversion of the item seen at its place (see :meth:`History._grew`)."""
    if item is old:
        return copied is None or item == copied  # only the last GUARD items are checked for edits in place
    return isinstance(item, Mapping) and item == old


def _reuse(old: _Old, index: int, item: Any) -> Any:
    """The old conversion (one item or a list) of an unchanged dict at ``index``; ``None``: convert it.

    Never of a Responses call: a call is converted with its run of neighbours, which may have changed.
    """
    seen, raw, ends, guarded = old
    if index >= len(seen) or isinstance(item, Message) or is_call(item) or not _unchanged(item, seen[index], guarded.get(index)):
        return None
    if ends is None:
        return raw[index]
    made = raw[ends[index - 1] if index else 0:ends[index]]
    return made[0] if len(made) == 1 and not is_call(seen[index]) else made
