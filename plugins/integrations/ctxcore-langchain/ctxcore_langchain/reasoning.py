"""Reasoning and thinking a LangChain chat model sends back: the text it is counted by, and the way back.

An ``AIMessage`` carries the model's reasoning in one of these forms, each sent
back to the provider by the chat model that made it:

- Anthropic (``ChatAnthropic``): content blocks ``{"type": "thinking",
  "thinking": ..., "signature": ...}`` and ``{"type": "redacted_thinking",
  "data": ...}``, sent back as they are;
- OpenAI Responses API (``ChatOpenAI(use_responses_api=True)``): content blocks
  ``{"type": "reasoning", "summary": [{"type": "summary_text", "text": ...}],
  "encrypted_content": ...}``, or the same item in
  ``additional_kwargs["reasoning"]`` (the older ``output_version``), sent back as
  ``reasoning`` input items;
- LangChain v1 standard blocks (``output_version="v1"``): ``{"type":
  "reasoning", "reasoning": ..., "extras": {"signature": ...}}``, which each
  chat model turns back into its provider's form.

Each reasoning item is counted as the strings it puts on the wire (see
:func:`reasoning_parts`): its visible text and its opaque tokens (signature,
encrypted content, redacted data), each a text block of the ctxcore message in
the item's place, so the budget sees them and a filter that drops the text drops
the item. Opaque strings are counted as text: an encrypted, base64-encoded
payload is longer than the reasoning it hides and tokenizes worse, so this
over-counts, which is safe. ``additional_kwargs["reasoning_content"]``
(DeepSeek-style) is not counted: ``ChatOpenAI`` does not send it back.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeGuard

from ctxcore import TextBlock

__all__ = ["KWARGS", "REASONING_TYPES", "counted_blocks", "is_reasoning", "reasoning_parts", "restore_reasoning"]

#: content block types that hold a model's reasoning.
REASONING_TYPES = frozenset({"thinking", "redacted_thinking", "reasoning"})
_OPAQUE = ("signature", "encrypted_content", "data")

#: where a reasoning item sits: a content list index, or ``KWARGS`` for ``additional_kwargs["reasoning"]``.
KWARGS = -1


def is_reasoning(item: Any) -> TypeGuard[Mapping[str, Any]]:
    """Whether a content item is a reasoning or thinking block."""
    return isinstance(item, Mapping) and item.get("type") in REASONING_TYPES


def reasoning_parts(item: Mapping[str, Any]) -> tuple[str, ...]:
    """The non-empty strings a reasoning item puts on the wire, in wire order: text first, then opaque tokens.

    ``thinking`` -> the thinking text and its signature; ``redacted_thinking`` -> its
    data; a Responses ``reasoning`` item -> its summary texts and encrypted content; a
    v1 ``reasoning`` block -> its text and the opaque values in its ``extras``.
    """
    parts: list[Any] = [item.get("thinking"), item.get("reasoning")]
    summary = item.get("summary")
    if isinstance(summary, Sequence) and not isinstance(summary, str):
        parts += [s.get("text") for s in summary if isinstance(s, Mapping)]
    parts += [item.get(key) for key in _OPAQUE]
    extras = item.get("extras")
    if isinstance(extras, Mapping):
        parts += [extras.get(key) for key in _OPAQUE]
    return tuple(p for p in parts if isinstance(p, str) and p)


def counted_blocks(parts: tuple[str, ...]) -> list[TextBlock]:
    """The ctxcore text blocks a reasoning item is counted by (one per wire string: the sum is the wire's count)."""
    return [TextBlock(text=p) for p in parts]


def restore_reasoning(blocks: Sequence[Any], rendered: Sequence[Any], items: Sequence[tuple[int, Any, tuple[str, ...]]]
                      ) -> tuple[list[Any], bool]:
    """LangChain content for a changed message: ``rendered`` (the render of ``blocks``) with reasoning items back.

    ``blocks`` are the ctxcore content blocks, ``rendered`` their LangChain form one for
    one, ``items`` the message's reasoning items at conversion (place, original, parts).
    Where the blocks hold an item's parts in order, the original item takes their place;
    an item whose text a filter removed (in whole or in part) is dropped, and so are its
    remaining parts (reasoning is never sent as the answer's text); an item with no text (an id-only
    reference, or not counted) is kept, first, where providers put reasoning. Gives the
    content and whether ``additional_kwargs["reasoning"]`` is still there.
    """
    pending = [it for it in items if it[2]]
    out: list[Any] = [it[1] for it in items if not it[2] and it[0] != KWARGS]
    kwargs_kept = any(it[0] == KWARGS and not it[2] for it in items)
    i = 0
    while i < len(blocks):
        found = _match(blocks, i, pending)
        if found is None:
            if not _part_of(blocks[i], pending):  # a part of a reasoning item cut in two is not sent as text
                out.append(rendered[i])
            i += 1
            continue
        place, original, parts = pending.pop(found)
        if place == KWARGS:
            kwargs_kept = True
        else:
            out.append(original)
        i += len(parts)
    return out, kwargs_kept


def _part_of(block: Any, pending: list[tuple[int, Any, tuple[str, ...]]]) -> bool:
    return isinstance(block, TextBlock) and any(block.text in parts for _, _, parts in pending)


def _match(blocks: Sequence[Any], i: int, pending: list[tuple[int, Any, tuple[str, ...]]]) -> int | None:
    """The index in ``pending`` of the first item whose parts are the text blocks at ``blocks[i:]``."""
    for k, (_, _, parts) in enumerate(pending):
        window = blocks[i:i + len(parts)]
        if len(window) == len(parts) and all(isinstance(b, TextBlock) and b.text == p for b, p in zip(window, parts, strict=True)):
            return k
    return None
