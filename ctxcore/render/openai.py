"""OpenAI chat completions: ``to_openai`` and the rules OpenAI enforces on a request."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from ctxcore.errors import InvalidHistory
from ctxcore.model.blocks import foreign_block, foreign_block_error
from ctxcore.model.messages import Message
from ctxcore.render._input import content_kinds

__all__ = ["check_openai", "check_openai_message", "to_openai"]

# OpenAI's pattern for a message's participant ``name``.
_OPENAI_NAME = re.compile(r"^[a-zA-Z0-9_-]+$")


def to_openai(messages: Iterable[Message]) -> list[dict[str, Any]]:
    """The messages as OpenAI chat-completions dicts (one per message, in order)."""
    return [m.to_openai() for m in messages]


def check_openai(items: Sequence[Message]) -> None:
    """Raise :class:`InvalidHistory` for the first message OpenAI would reject (pairing is checked elsewhere)."""
    for index, m in enumerate(items):
        check_openai_message(m, index)


def check_openai_message(m: Message, index: int) -> None:
    """OpenAI's rules for one message, which depend on nothing else in the request (``index`` names it in the error)."""
    # "openai" validates for chat completions and the Responses API alike: Responses items pass here,
    # and the chat renderer (Message.to_openai) refuses them when asked to send them.
    foreign = foreign_block(m.content, "openai-responses")
    if foreign is not None:
        raise InvalidHistory(foreign_block_error(foreign, "OpenAI"), index=index)
    if m.name is not None and not _OPENAI_NAME.match(m.name):
        raise InvalidHistory(
            f"name {m.name!r} does not match OpenAI's [a-zA-Z0-9_-]+ (no spaces or dots)", index=index
        )
    if isinstance(m.content, tuple) and not m.content:
        raise InvalidHistory("OpenAI rejects an empty list of content parts; give at least one part", index=index)
    if m.role in ("user", "system", "tool") and m.content is None:
        raise InvalidHistory(f"OpenAI requires content in a {m.role} message", index=index)
    if m.role == "assistant" and m.content is None and not m.tool_calls:
        raise InvalidHistory("OpenAI requires an assistant message to have content or tool calls", index=index)
    if m.role != "user" and content_kinds(m) - {"text", "provider"}:
        raise InvalidHistory(f"OpenAI accepts images and files only in user messages, not in a {m.role} message", index=index)
