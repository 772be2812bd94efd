"""Reasoning items counted as the provider counts them.

The Agents SDK sends a run's ``reasoning`` items back to the model with the
rest of its input. What the model reads of them depends on the provider:

- OpenAI Responses API: the reasoning items of earlier turns (before the last
  user message) are dropped from the model's context; those of the current
  turn, between the last user message and now, are kept (they must be, around
  function calls) and count as input. That is ``"current_turn"``, the default;
  Anthropic's rule for thinking blocks (through LiteLLM) is the same.
- A provider that reads every reasoning item sent: ``"all"`` (more counted, never
  a rejected request).
- The chat-completions model (``OpenAIChatCompletionsModel``): the SDK does not
  send reasoning items to the OpenAI chat API: ``"none"``.

A counted reasoning item is counted as :func:`reasoning_text`: its summary,
its raw ``reasoning_text`` parts and its ``encrypted_content``. The hidden
reasoning tokens the API decrypts are what it counts; no client sees them, and
the encrypted payload grows with them, so its text is the estimate
(docs/integrations.md, "Reasoning items").

To be counted, an assistant message gets the reasoning texts as text blocks in
their items' places (:func:`with_reasoning`); it keeps its id and recorded
items, so the filter still sends the runner's own items for it, never the
blocks, and takes them out again (:func:`without_reasoning`) of a message a
filter changed before rendering it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, get_args

from ctxcore import Message, TextBlock
from ctxcore_openai_agents.converters import ITEMS_KEY, assistant_texts

__all__ = ["CountReasoning", "ReasoningCount", "reasoning_text", "with_reasoning", "without_reasoning"]

CountReasoning = Literal["current_turn", "all", "none"]
_MODES: tuple[str, ...] = get_args(CountReasoning)


def reasoning_text(item: Mapping[str, Any]) -> str:
    """What a ``reasoning`` item stands for in the model's input, as text to count; ``""`` for any other item.

    The summary texts, the raw ``reasoning_text`` parts and the
    ``encrypted_content``, one per line, in that order.
    """
    if item.get("type") != "reasoning":
        return ""
    texts: list[str] = []
    for key in ("summary", "content"):
        parts = item.get(key)
        if isinstance(parts, list):
            texts.extend(p["text"] for p in parts
                         if isinstance(p, Mapping) and isinstance(p.get("text"), str) and p["text"])
    encrypted = item.get("encrypted_content")
    if isinstance(encrypted, str) and encrypted:
        texts.append(encrypted)
    return "\n".join(texts)


def _texts(m: Message) -> list[str]:
    """The non-empty reasoning texts of ``m``'s recorded items, in order."""
    items = m.metadata.get(ITEMS_KEY)
    if m.role != "assistant" or not isinstance(items, list):
        return []
    return [t for t in (reasoning_text(i) for i in items if isinstance(i, Mapping)) if t]


def with_reasoning(m: Message) -> Message:
    """``m`` with the text of its reasoning items as text blocks in their places; ``m`` itself when it has none.

    Same id, provenance and metadata (the recorded items); only the content
    differs, so a count of it is a count of what the model reads.
    """
    if not _texts(m):
        return m
    blocks: list[TextBlock] = []
    for item in m.metadata[ITEMS_KEY]:
        text = reasoning_text(item) if isinstance(item, Mapping) else ""
        if text:
            blocks.append(TextBlock(text=text))
        elif isinstance(item, Mapping) and item.get("type") in (None, "message"):
            blocks.extend(TextBlock(text=t) for t in assistant_texts(item.get("content"), 0))
    return m.model_copy(update={"content": tuple(blocks)})


def without_reasoning(m: Message, counted: Message) -> Message:
    """``m`` without the reasoning blocks :func:`with_reasoning` gave ``counted`` (the message ``m`` was made from).

    A filter that changed a counted message (a shortened text) keeps the
    reasoning blocks it did not touch: they are not the message's text and
    must not be sent as ``output_text``.
    """
    texts = set(_texts(counted))
    if not texts or m.content is None or isinstance(m.content, str):
        return m
    kept = tuple(b for b in m.content if not (isinstance(b, TextBlock) and b.text in texts))
    if len(kept) == len(m.content):
        return m
    content: str | tuple[Any, ...] | None = kept or None
    if len(kept) == 1 and isinstance(kept[0], TextBlock):
        content = kept[0].text
    return m.model_copy(update={"content": content})


class ReasoningCount:
    """Puts the counted reasoning into the messages of one call, by the ``mode`` rule; remembers the last call's.

    Not thread-safe on its own: the filter calls it under its lock.
    """

    def __init__(self, mode: CountReasoning = "current_turn") -> None:
        if mode not in _MODES:
            raise ValueError(f"count_reasoning={mode!r}: use one of {', '.join(map(repr, _MODES))}")
        self.mode = mode
        # the last call's counted messages: original id -> (original, counted, tokens or -1 before counted),
        # so a warm turn makes no new copies and counts no reasoning twice
        self._made: dict[str, tuple[Message, Message, int]] = {}

    def apply(self, messages: list[Message]) -> tuple[list[Message], int]:
        """``messages`` with the counted reasoning put in, and how many reasoning items that counts.

        Reads only the messages from the last user message on (``current_turn``),
        so a warm turn costs the current turn, not the history.

        Returns the list itself when nothing is counted (the conversion cache's
        list: never changed); else a new list.
        """
        start = self._start(messages)
        made: dict[str, tuple[Message, Message, int]] = {}
        out: list[Message] | None = None
        counted = 0
        for k in range(start, len(messages)):
            m = messages[k]
            if m.role != "assistant" or not _texts(m):
                continue
            earlier = self._made.get(m.id)
            made[m.id] = earlier if earlier is not None and earlier[0] is m else (m, with_reasoning(m), -1)
            counted_m = made[m.id][1]
            counted += len(_texts(m))
            if out is None:
                out = list(messages)
            out[k] = counted_m
        self._made = made
        return (messages if out is None else out), counted

    def counted_in(self, m: Message, count_text: Callable[[str], int]) -> tuple[int, int]:
        """The reasoning items the last :meth:`apply` counted in ``m`` and their tokens; ``(0, 0)`` for a message it did not make."""
        made = self._made.get(m.id)
        if made is None or made[1] is not m:
            return 0, 0
        if made[2] < 0:
            self._made[m.id] = made = (made[0], made[1], sum(count_text(t) for t in _texts(made[0])))
        return len(_texts(made[0])), made[2]

    def _start(self, messages: Sequence[Message]) -> int:
        """The index of the first message whose reasoning counts: after the last user message (``current_turn``)."""
        if self.mode == "all":
            return 0
        if self.mode == "none":
            return len(messages)
        for k in range(len(messages) - 1, -1, -1):
            m = messages[k]
            if m.role == "user" and _is_user_item(m):
                return k + 1
        return 0


def _is_user_item(m: Message) -> bool:
    """Whether ``m`` was a ``user`` item (a ``system``/``developer`` item in the history is a user message too, not a turn)."""
    items = m.metadata.get(ITEMS_KEY)
    return not isinstance(items, list) or not items or not isinstance(items[0], Mapping) or items[0].get("role") == "user"
