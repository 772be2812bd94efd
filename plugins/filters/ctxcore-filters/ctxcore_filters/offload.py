"""``offload``: a tool result too big to send becomes a quoted preview plus a handle the model can resolve.

A tool result is offloaded when its text has more than ``max_chars``
characters (decided without tokenizing it, so a 60 MB result costs a length
check), more than ``max_tokens`` tokens, or more than ``budget_share`` of the
filter budget. Its replacement keeps the role, ``tool_call_id`` and trust of
the result (pairs stay whole), names the tool, the size and the handle
(:func:`ctxcore.kit.offload.offload_handle`), and quotes a preview of at most
``preview_chars`` characters, shortened until the whole placeholder is within
``preview_share`` of the budget. Results of ``context_retrieve`` calls are
exempt from ``max_chars`` and ``max_tokens`` (the model asked for that text)
but not from ``budget_share``.

Invariants: the replacement is a function of the message, the thread id
(``runtime["thread_id"]``) and the options, so every build sends the same
bytes for it (cached prefixes stay valid); the decision for a message is made
once per builder and resumed on an append-only history (only new messages are
read on a next turn); the original is reported as ``compressed`` at stage
``offload``. Put it before ``token_budget``: the budget then sees previews.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ctxcore import FilterContext, Message
from ctxcore.kit import OFFLOAD_META, RETRIEVE_TOOL_NAME, PrefixMemo, offload_handle, placeholder_text

__all__ = ["Offload", "OffloadConfig"]

_STAGE = "offload"


class OffloadConfig(BaseModel):
    """Options of the ``offload`` filter."""

    model_config = ConfigDict(extra="forbid")

    max_tokens: int = Field(default=4000, ge=1, description="Offload tool results of more tokens than this.")
    max_chars: int = Field(default=20_000, ge=1, description="Offload tool results of more characters than this, without tokenizing them.")
    budget_share: float = Field(default=0.5, gt=0, le=1, description="Offload tool results over this share of the filter budget.")
    preview_chars: int = Field(default=800, ge=0, description="Most characters of quoted preview; 0 for none.")
    preview_share: float = Field(default=0.05, gt=0, le=1, description="Shorten the preview until the placeholder is within this share of the budget.")


@dataclass
class _Walk:
    """What the walk over the history knows after a prefix: the replacements made and the open calls."""

    key: tuple[str, int | None]
    replacements: list[tuple[int, Message, int, int]] = field(default_factory=list)  # (index, new, before, after)
    calls: dict[str, str] = field(default_factory=dict)  # call id -> tool name, of the last assistant message
    retrieve_ids: frozenset[str] = frozenset()


def _text_only(m: Message) -> bool:
    """True when the result is plain text (a string, or text blocks only): images and files are never offloaded."""
    return isinstance(m.content, str) or (isinstance(m.content, tuple) and all(getattr(b, "type", "") == "text" for b in m.content))


def _new_id(original: str) -> str:
    return hashlib.blake2b(f"offload\x00{original}".encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


class Offload:
    """Replaces too-big tool results with a quoted preview plus a handle (see the module docstring)."""

    accepts_lazy = True  # reads only the messages a next turn added

    def __init__(self, config: OffloadConfig | None = None, **options: Any) -> None:
        self.config = config if config is not None else OffloadConfig(**options)
        self._memo: PrefixMemo[_Walk] = PrefixMemo()

    def apply(self, messages: Sequence[Message], ctx: FilterContext) -> Sequence[Message]:
        """``messages`` with every too-big tool result replaced; the same sequence when none is."""
        key = (str(ctx.runtime.get("thread_id") or ""), ctx.budget)
        walk, start = self._memo.resume(messages)
        if walk is None or walk.key != key:
            walk, start = _Walk(key), 0
        else:
            walk = _Walk(key, list(walk.replacements), dict(walk.calls), walk.retrieve_ids)
        for i in range(start, len(messages)):
            self._visit(walk, i, messages[i], ctx)
        self._memo.save(messages, walk)
        if not walk.replacements:
            return messages
        out = list(messages)
        for index, new, before, after in walk.replacements:
            out[index] = new
            if ctx.report is not None:
                ctx.report.record_compression(ctx.step_id, [messages[index].id], new, before, after, _STAGE)
        return out

    def _visit(self, walk: _Walk, index: int, m: Message, ctx: FilterContext) -> None:
        if m.role == "assistant":
            walk.calls = {c.id: c.name for c in m.tool_calls}
            named = {c.id for c in m.tool_calls if c.name == RETRIEVE_TOOL_NAME}
            if named:
                walk.retrieve_ids = walk.retrieve_ids | named
            return
        if m.role != "tool" or m.zone != "dynamic" or OFFLOAD_META in m.metadata or not _text_only(m):
            return
        made = self._decide(m, walk, ctx)
        if made is not None:
            walk.replacements.append((index, *made))

    def _decide(self, m: Message, walk: _Walk, ctx: FilterContext) -> tuple[Message, int, int] | None:
        """The replacement of ``m`` with its tokens before and after, or ``None`` to send it as it is."""
        config, budget = self.config, ctx.budget
        text = m.text
        asked = m.tool_call_id in walk.retrieve_ids
        share = int(budget * config.budget_share) if budget is not None else None
        if len(text) > (config.max_chars if not asked else 4 * config.max_chars):
            before = (len(text) + 3) // 4  # an estimate (characters / 4): never tokenized, never copied
        else:
            before = ctx.counter.count_message(m)
            over_limit = not asked and before > config.max_tokens
            if not over_limit and (share is None or before <= share):
                return None
        return self._replacement(m, text, walk, ctx, before)

    def _replacement(self, m: Message, text: str, walk: _Walk, ctx: FilterContext, before: int) -> tuple[Message, int, int] | None:
        handle = offload_handle(walk.key[0], m.id)
        name = walk.calls.get(m.tool_call_id or "", "tool")
        info = {"handle": handle, "original_id": m.id, "chars": len(text)}
        limit = None if ctx.budget is None else int(ctx.budget * self.config.preview_share)
        chars = self.config.preview_chars
        while True:
            new = m.model_copy(update={"id": _new_id(m.id), "content": placeholder_text(name, handle, text, chars),
                                       "metadata": {**m.metadata, OFFLOAD_META: info}})
            after = ctx.counter.count_message(new)
            if limit is None or after <= limit or chars == 0:
                break
            chars = chars // 2 if chars > 16 else 0
        if after >= before:
            return None  # a placeholder is never longer than what it replaces
        return new, before, after
