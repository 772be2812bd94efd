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
once per builder and resumed on an append-only history (a next turn reads
the structure of the new messages only, and makes a message only for a tool
result long enough to be offloaded); the original is reported as ``compressed`` at stage
``offload``. Put it before ``token_budget``: the budget then sees previews.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ctxcore import FilterContext, Message
from ctxcore.kit import OFFLOAD_META, RETRIEVE_TOOL_NAME, PrefixMemo, offload_handle, placeholder_text, structure_of

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


# (tool-message index, replacement, tokens before, tokens after)
_Made = tuple[int, Message, int, int]
# the walk's state after a prefix: (items walked, replacements made in them)
_State = tuple[int, tuple[_Made, ...]]


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
        self._memo: PrefixMemo[_State] = PrefixMemo()
        self._key: tuple[str, int | None] | None = None

    def apply(self, messages: Sequence[Message], ctx: FilterContext) -> Sequence[Message]:
        """``messages`` with every too-big tool result replaced; the same sequence when none is."""
        key = (str(ctx.runtime.get("thread_id") or ""), ctx.budget)
        if key != self._key:  # decisions depend on the thread (handles) and the budget: start over
            self._memo, self._key = PrefixMemo(), key
        structure = structure_of(messages)
        floor = self._floor_chars(ctx.budget)

        def step(state: _State, tail: Sequence[Message]) -> _State:
            walked, made = state
            more = [self._decide(messages, structure, walked + k, ctx, key[0]) for k, item in enumerate(tail)
                    if item.role == "tool" and item.zone == "dynamic" and OFFLOAD_META not in item.metadata
                    and (not isinstance(item.content, str) or len(item.content) > floor)]
            return walked + len(tail), made + tuple(m for m in more if m is not None)

        _, made = self._memo.walk(structure, (0, ()), step)
        if not made:
            return messages
        out = list(messages)
        for index, new, before, after in made:
            out[index] = new
            if ctx.report is not None:
                ctx.report.record_compression(ctx.step_id, [messages[index].id], new, before, after, _STAGE)
        return out

    def _floor_chars(self, budget: int | None) -> int:
        """Below this many characters no text can be offloaded (a token is at most 4 characters' UTF-8 bytes, at least 1)."""
        tokens = self.config.max_tokens if budget is None else min(self.config.max_tokens, int(budget * self.config.budget_share))
        return min(self.config.max_chars, tokens // 4)

    def _decide(self, messages: Sequence[Message], structure: Sequence[Message], index: int, ctx: FilterContext,
                thread_id: str) -> _Made | None:
        """The replacement of the tool result at ``index`` with its tokens before and after, or ``None`` to send it as it is."""
        m = messages[index]
        if not _text_only(m):
            return None
        calls = _calls_before(messages, structure, index)
        config, budget = self.config, ctx.budget
        text = m.text
        asked = calls.get(m.tool_call_id or "") == RETRIEVE_TOOL_NAME
        share = int(budget * config.budget_share) if budget is not None else None
        if len(text) > (config.max_chars if not asked else 4 * config.max_chars):
            before = (len(text) + 3) // 4  # an estimate (characters / 4): never tokenized, never copied
        else:
            before = ctx.counter.count_message(m)
            over_limit = not asked and before > config.max_tokens
            if not over_limit and (share is None or before <= share):
                return None
        name = calls.get(m.tool_call_id or "", "tool")
        made = self._replacement(m, text, name, thread_id, ctx, before)
        return None if made is None else (index, *made)

    def _replacement(self, m: Message, text: str, name: str, thread_id: str, ctx: FilterContext,
                     before: int) -> tuple[Message, int, int] | None:
        handle = offload_handle(thread_id, m.id)
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


def _calls_before(messages: Sequence[Message], structure: Sequence[Message], index: int) -> dict[str, str]:
    """Call id -> tool name of the assistant message the tool result at ``index`` answers (read back over its unit)."""
    j = index - 1
    while j >= 0 and structure[j].role == "tool":
        j -= 1
    if j < 0 or structure[j].role != "assistant":
        return {}
    return {c.id: c.name for c in messages[j].tool_calls}
