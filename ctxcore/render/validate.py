"""``validate_request``: refuse locally a request the target provider would reject.

Raises :class:`InvalidHistory` naming the offending input index. Tool-call
pairing is the one walk of :func:`ctxcore.model.transactions.check_tool_pairing`;
each provider's own rules live beside its renderer.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal

from ctxcore.model.messages import Message
from ctxcore.model.transactions import check_tool_pairing
from ctxcore.render._input import coerce
from ctxcore.render.anthropic import check_anthropic
from ctxcore.render.openai import check_openai
from ctxcore.render.openai_responses import check_responses

__all__ = ["PROVIDERS", "TargetProvider", "validate_request"]

TargetProvider = Literal["openai", "anthropic", "openai-responses"]
PROVIDERS: tuple[str, ...] = ("openai", "anthropic", "openai-responses")


def validate_request(messages: Iterable[Message | Mapping[str, Any]], provider: str = "openai") -> None:
    """Raise :class:`InvalidHistory` (with ``.index``) unless ``provider`` accepts ``messages``.

    Both providers: every tool result answers a call of the assistant message
    right before it (parallel results in any order), every call is answered
    before the next other message, call ids are present and unique per message.
    OpenAI: user/system/tool content present (a list of parts non-empty),
    names matching ``[a-zA-Z0-9_-]+``, images and files only in user
    messages, an assistant message has content or tool calls. Anthropic: at
    least one user message, the first non-system message is from the user
    (never a tool result), the current user message not blank (blank earlier
    turns are left out by the renderer), tool arguments a JSON object,
    ids matching ``[a-zA-Z0-9_-]+``, images only from the user or in tool results,
    base64 images of a type Anthropic takes (``ANTHROPIC_IMAGE_TYPES``),
    each server tool call with its result in the same assistant message.
    OpenAI Responses: OpenAI's rules for messages without provider blocks.
    Every provider: provider blocks of that provider's API only (an Anthropic
    ``server_tool_use`` cannot go to OpenAI; the error names the block and the fix).
    """
    if provider not in PROVIDERS:
        raise ValueError(f"unknown provider {provider!r}; expected one of {', '.join(PROVIDERS)}")
    items = coerce(messages)
    check_tool_pairing(items)
    if provider == "openai":
        check_openai(items)
    elif provider == "openai-responses":
        check_responses(items)
    else:
        check_anthropic(items)
