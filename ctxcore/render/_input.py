"""What the renderers and the validator accept: ``Message`` objects or OpenAI chat dicts."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ctxcore.errors import InvalidHistory
from ctxcore.model.messages import Message

__all__ = ["coerce"]


def coerce(messages: Iterable[Message | Mapping[str, Any]]) -> list[Message]:
    """The items as messages; a dict that is not a chat message raises :class:`InvalidHistory` naming its index."""
    out = []
    for i, m in enumerate(messages):
        if isinstance(m, Message):
            out.append(m)
            continue
        try:
            out.append(Message.from_openai(m))
        except (ValueError, TypeError, KeyError) as exc:
            raise InvalidHistory(f"not a chat message: {exc}", index=i) from exc
    return out


def content_kinds(m: Message) -> set[str]:
    """The block types of ``m``'s content (``text`` for plain or no content)."""
    if m.content is None or isinstance(m.content, str):
        return {"text"}
    return {b.type for b in m.content}
