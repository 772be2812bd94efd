"""``history``: the conversation so far, read from ``state[state_key]``.

Items may be ctxcore :class:`Message` objects or OpenAI chat dicts. A dict gets a
stable id derived from its position and content, so the same conversation
built twice yields the same ids (reports and caches line up across turns).

Converted items are remembered (a dict as a private deep copy, so a dict
mutated in place is noticed): when the stored list only grew, the old items are
checked by one C-level list comparison and only the new ones are converted; when
it changed, conversions of equal items are reused by position.

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
import hashlib
from collections.abc import Mapping, Sequence
from itertools import repeat
from operator import attrgetter
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ctxcore import Message, TextBlock, system
from ctxcore.kit import LazyMessages, Snapshot, get_prompt
from ctxcore_providers._markers import (
    OPEN_MARKER,
    has_marker,
    neutralize_markers,
    strip_runtime_blocks,
)
from ctxcore_providers._render import stable_id

SELF_TOOL_PLAN = "self_tool_plan"
TOOL_OBSERVATION = "tool_observation"


class HistoryConfig(BaseModel):
    """Options of the ``history`` provider."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    state_key: str = Field(default="messages", description="Key of the message list in the state.")
    annotate: bool = Field(default=True, description="Mark tool plans and observations and explain them once.")
    neutralize_markers: bool = Field(default=True, description="Defuse runtime-context marker look-alikes in the text of every role.")
    # A YAML file can only leave it null: the JSON Schema says so (`ctx pipeline schema`).
    working_memory: Any = Field(default=None, description="An object with build_view(messages) (Python only).",
                                json_schema_extra={"type": "null"})

    @field_validator("working_memory")
    @classmethod
    def _adapter(cls, value: Any) -> Any:
        if value is not None and not callable(getattr(value, "build_view", None)):
            raise ValueError("working_memory must be an object with build_view(messages) (Python only)")
        return value


class History:
    """Returns the messages stored in the state, converted, id-stamped and annotated.

    The result is a :class:`~ctxcore.engine.lazy.LazyMessages`: conversion of new dict
    items happens eagerly (it is needed to know roles and tool calls), but the
    derived message (annotation, marker neutralising) is computed only when a
    consumer indexes it, and memoised per stored object. When the stored list
    only grew since the last call (its old items are the same objects, or equal
    dicts), only the new tail is looked at: a next-turn build costs one
    C-level pointer comparison over the old items, not a walk.
    """

    def __init__(self, state_key: str = "messages", *, annotate: bool = True, neutralize_markers: bool = True,
                 working_memory: Any = None) -> None:
        self.state_key = state_key
        self.annotate = annotate
        self.neutralize = neutralize_markers
        self.working_memory = working_memory
        # What the last call saw: per item the Message itself or a private deep copy
        # of the dict (so a dict mutated in place is noticed), and its conversion.
        self._seen: list[Any] = []
        self._raw: list[Message] = []
        self._last: tuple[list[Message], bool] | None = None  # the last structure returned, and whether it began with the semantics note
        self._ids: set[str] = set()
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
        extended = self._update(items)
        note = self._semantics if self._semantic else None
        semantic = note is not None
        structure = Snapshot([note] if note is not None else ())  # a snapshot: the next call appends to self._raw
        structure.extend(self._raw)
        ids: list[set[str] | frozenset[str]] = [self._ids]
        if note is not None:
            ids.append(frozenset((note.id,)))
        previous = self._last
        if extended and previous is not None and previous[1] == semantic:
            structure.extends = (previous[0], len(previous[0]))  # checked by _update: only appended since
        self._last = (structure, semantic)
        out: Sequence[Message] = LazyMessages(structure, [(self._derive, self._memo)], ids)
        wm = self.working_memory if self.working_memory is not None else runtime.get("working_memory")
        if wm is not None:
            out = list(wm.build_view(list(out)))
            for i, m in enumerate(out):
                if not isinstance(m, Message):
                    raise ValueError(f"working_memory.build_view returned a {type(m).__name__} at {i}, not a Message")
        return out

    def _update(self, items: Sequence[Any]) -> bool:
        """Bring the conversion up to date with ``items``: only the new tail when the old items are unchanged.

        Returns whether the old items were unchanged (the stored messages only grew).
        """
        seen = self._seen
        n = len(seen)
        prefix = items[:n]
        if n and len(items) >= n and (prefix if isinstance(prefix, list) else list(prefix)) == seen:
            start, extended = n, True
        else:
            self._rebuild(items)
            start, extended = len(items), False
        for index in range(start, len(items)):
            item = items[index]
            message = self._convert(index, item)
            self._raw.append(message)
            self._seen.append(item if isinstance(item, Message) else copy.deepcopy(item))
            self._ids.add(message.id)
            self._semantic = self._semantic or self._is_semantic(message)
        return extended

    def _rebuild(self, items: Sequence[Any]) -> None:
        """The list changed under the old items: start over, reusing conversions of equal items."""
        old_seen, old_raw = self._seen, self._raw
        self._seen, self._raw, self._ids, self._semantic = [], [], set(), False
        if all(map(isinstance, items, repeat(Message))):  # Message items: C-level passes, no per-item Python
            self._seen, self._raw = list(items), list(items)
            self._ids = set(map(_ID, items))
            self._semantic = any(map(self._is_semantic, self._raw))  # stops at the first tool message
            items = ()
        for index, item in enumerate(items):
            if index < len(old_seen) and not isinstance(item, Message) and old_seen[index] == item:
                message = old_raw[index]
            else:
                message = self._convert(index, item)
            self._raw.append(message)
            self._seen.append(item if isinstance(item, Message) else copy.deepcopy(item))
            self._ids.add(message.id)
            self._semantic = self._semantic or self._is_semantic(message)
        if len(self._memo) > 2 * len(self._raw) + 64:  # forget derived forms of messages no longer stored
            alive = set(map(id, self._raw))
            self._memo = {k: v for k, v in self._memo.items() if k in alive}

    def _convert(self, index: int, item: Any) -> Message:
        if isinstance(item, Message):
            return item
        if not isinstance(item, Mapping):
            raise ValueError(f"state[{self.state_key!r}][{index}] is a {type(item).__name__}, not a message dict")
        try:
            message = Message.from_openai(item)
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"state[{self.state_key!r}][{index}]: {exc}") from exc
        return message.model_copy(update={"id": _stable_id(self.state_key, index, message.fingerprint)})

    def _is_semantic(self, m: Message) -> bool:
        """Whether the derived form of ``m`` carries a semantic_kind (decides the explanation message)."""
        if "semantic_kind" in m.metadata:
            return bool(m.metadata["semantic_kind"])
        return self.annotate and ((m.role == "assistant" and bool(m.tool_calls)) or m.role == "tool")

    def _derive(self, m: Message) -> Message:
        update: dict[str, Any] = {}
        if self.neutralize and m.content is not None:  # every role: assistant text can quote a forged marker too
            content = _clean_content(m.content, strip=m.role == "user")
            if content is not m.content:
                update["content"] = content
        if self.annotate and "semantic_kind" not in m.metadata:
            kind = SELF_TOOL_PLAN if (m.role == "assistant" and m.tool_calls) else TOOL_OBSERVATION if m.role == "tool" else None
            if kind is not None:
                update["metadata"] = {**m.metadata, "semantic_kind": kind}
        return m.model_copy(update=update) if update else m


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


def _stable_id(key: str, index: int, fingerprint: str) -> str:
    return hashlib.blake2b(f"{key}\x00{index}\x00{fingerprint}".encode(), digest_size=16).hexdigest()
