"""``merge_same_role``: merge consecutive messages of the same role into one.

For providers (and models) that reject two user or two assistant messages in a
row. Text is joined with a blank line; when either side has content blocks
(images, files) the blocks are concatenated. An assistant text followed by an
assistant tool call becomes one message carrying both. Never merged: tool
results (each answers its own call), a message after one with tool calls (its
results must follow it), messages with different ``name``s, and roles not
listed in ``roles`` (system messages are left alone by default so the pinned
prefix keeps its ids).

The merged message gets a deterministic id (a digest of the merged ids), so
repeated builds produce the same request; it is protected when any part is,
untrusted when any part is, and as important as its most important part. The
report shows it as ``added`` and the originals as ``dropped`` by this filter.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ctxcore import FilterContext, Message, TextBlock
from ctxcore.kit import Role


class MergeSameRoleConfig(BaseModel):
    """Options of the ``merge_same_role`` filter."""

    model_config = ConfigDict(extra="forbid")

    roles: tuple[Role, ...] = Field(default=("user", "assistant"), description="Roles whose runs are merged.")
    separator: str = Field(default="\n\n", description="Text between merged string contents.")


class MergeSameRole:
    """Merges runs of consecutive same-role messages."""

    def __init__(self, roles: Sequence[str] = ("user", "assistant"), separator: str = "\n\n") -> None:
        if "tool" in roles:
            raise ValueError("tool results cannot be merged: each answers its own call")
        self.roles = frozenset(roles)
        self.separator = separator

    def apply(self, messages: Sequence[Message], ctx: FilterContext | None = None) -> list[Message]:
        """Return ``messages`` with every mergeable run replaced by one message."""
        out: list[Message] = []
        run: list[Message] = []
        for m in messages:
            if run and self._joins(run[-1], m):
                run.append(m)
                continue
            out.extend(self._flush(run))
            run = [m]
        out.extend(self._flush(run))
        return out

    def _joins(self, prev: Message, m: Message) -> bool:
        return (
            m.role == prev.role and m.role in self.roles and not prev.tool_calls and m.name == prev.name
        )

    def _flush(self, run: list[Message]) -> list[Message]:
        if len(run) < 2:
            return run
        return [merge_messages(run, self.separator)]


def merge_messages(run: Sequence[Message], separator: str = "\n\n") -> Message:
    """One message holding the content and tool calls of ``run`` (same role)."""
    first = run[0]
    content: Any
    if all(m.content is None or isinstance(m.content, str) for m in run):
        texts = [m.content for m in run if isinstance(m.content, str) and m.content]
        content = separator.join(texts) if texts else first.content
    else:
        blocks: list[Any] = []
        for m in run:
            if isinstance(m.content, str):
                if m.content:
                    blocks.append(TextBlock(text=m.content))
            elif m.content:
                blocks.extend(m.content)
        content = tuple(blocks)
    sources = {m.source for m in run}
    digest = hashlib.blake2b("\0".join(["merge", *(m.id for m in run)]).encode(), digest_size=16).hexdigest()
    return Message(
        id=digest,
        role=first.role,
        content=content,
        name=first.name,
        tool_calls=tuple(c for m in run for c in m.tool_calls),
        metadata={"merged_from": [m.id for m in run]},
        source=first.source if len(sources) == 1 else "+".join(sorted(str(s) for s in sources)),
        trust="untrusted" if any(m.trust == "untrusted" for m in run) else "trusted",
        zone="protected" if any(m.zone == "protected" for m in run) else "dynamic",
        priority=max(m.priority for m in run),
    )
