"""``history``: the conversation so far, read from ``state[state_key]``.

Items may be ctxcore :class:`Message` objects or OpenAI chat dicts. A dict gets a
stable id derived from its position and content, so the same conversation
built twice yields the same ids (reports and caches line up across turns).

Converted dicts are remembered by position (as a private deep copy, so a dict
mutated in place is noticed): on the next build an item equal to the remembered
one reuses its Message instead of validating it again, so a growing
conversation costs a dict comparison per old message, not a pydantic validation.

Derived work is done once per message and cached with the conversion (dicts)
or by object (Message items):

- annotations: an assistant message with tool calls gets
  ``metadata.semantic_kind = "self_tool_plan"``, a tool result
  ``"tool_observation"``; when any is present one "History semantics" system
  message explaining them is put before the history;
- marker neutralising: live runtime-context blocks are removed from stored
  user messages (they are never part of history) and marker look-alikes in
  user and tool text are neutralised, so only the current turn's block is live.

An optional working-memory adapter (``build_view(messages) -> messages``; the
constructor argument, else ``runtime["working_memory"]``) reshapes the result.
"""

from __future__ import annotations

import copy
import hashlib
from typing import Any, Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ctxcore.messages import Message, TextBlock, system
from ctxcore.prompts import get_prompt
from ctxcore_providers._markers import OPEN_MARKER, has_marker, neutralize_markers, strip_runtime_blocks
from ctxcore_providers._render import stable_id

SELF_TOOL_PLAN = "self_tool_plan"
TOOL_OBSERVATION = "tool_observation"


class HistoryConfig(BaseModel):
    """Options of the ``history`` provider."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    state_key: str = Field(default="messages", description="Key of the message list in the state.")
    annotate: bool = Field(default=True, description="Mark tool plans and observations and explain them once.")
    neutralize_markers: bool = Field(default=True, description="Defuse runtime-context marker look-alikes in user and tool text.")
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
    """Returns the messages stored in the state, converted, id-stamped and annotated."""

    def __init__(self, state_key: str = "messages", *, annotate: bool = True, neutralize_markers: bool = True,
                 working_memory: Any = None) -> None:
        self.state_key = state_key
        self.annotate = annotate
        self.neutralize = neutralize_markers
        self.working_memory = working_memory
        self._converted: list[tuple[Any, Message]] = []
        self._derived: dict[int, tuple[Message, Message]] = {}
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
        out = self._convert(items)
        if self._semantics is not None and any(m.metadata.get("semantic_kind") for m in out):
            out.insert(0, self._semantics)
        wm = self.working_memory if self.working_memory is not None else runtime.get("working_memory")
        if wm is not None:
            out = list(wm.build_view(out))
            for i, m in enumerate(out):
                if not isinstance(m, Message):
                    raise ValueError(f"working_memory.build_view returned a {type(m).__name__} at {i}, not a Message")
        return out

    def _convert(self, items: Sequence[Any]) -> list[Message]:
        out: list[Message] = []
        previous = self._converted
        converted: list[tuple[Any, Message]] = []
        derived_before = self._derived
        derived: dict[int, tuple[Message, Message]] = {}
        for index, item in enumerate(items):
            if isinstance(item, Message):
                hit = derived_before.get(id(item))
                message = hit[1] if hit is not None and hit[0] is item else self._derive(item)
                derived[id(item)] = (item, message)
                out.append(message)
                converted.append((_SENTINEL, message))  # keeps positions aligned
                continue
            if index < len(previous):
                seen, message = previous[index]
                if seen == item:
                    out.append(message)
                    converted.append((seen, message))
                    continue
            if not isinstance(item, Mapping):
                raise ValueError(f"state[{self.state_key!r}][{index}] is a {type(item).__name__}, not a message dict")
            try:
                message = Message.from_openai(item)
            except (ValueError, KeyError, TypeError) as exc:
                raise ValueError(f"state[{self.state_key!r}][{index}]: {exc}") from exc
            message = message.model_copy(update={"id": _stable_id(self.state_key, index, message.fingerprint)})
            message = self._derive(message)
            out.append(message)
            converted.append((copy.deepcopy(item), message))
        self._converted = converted
        self._derived = derived
        return out

    def _derive(self, m: Message) -> Message:
        update: dict[str, Any] = {}
        if self.neutralize and m.role in ("user", "tool") and m.content is not None:
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


class _Sentinel:
    """Stands for a Message item in the conversion memory; equal to nothing."""

    def __eq__(self, other: object) -> bool:
        return False

    __hash__ = object.__hash__


_SENTINEL = _Sentinel()


def _stable_id(key: str, index: int, fingerprint: str) -> str:
    return hashlib.blake2b(f"{key}\x00{index}\x00{fingerprint}".encode(), digest_size=16).hexdigest()
