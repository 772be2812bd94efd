"""The request-level keys a pipeline's ``target:`` adds to a rendered body, per provider.

The renderers (``to_anthropic``, ``to_openai_responses``) turn messages into a
body; this module adds what the pipeline settles for every request: Anthropic's
``context_management`` (with the beta flags it needs), OpenAI's
``prompt_cache_key``, ``prompt_cache_options``, ``context_management`` and the
``prompt_cache_breakpoint`` marks on content blocks. Field names are the
official SDKs' (``openai.types.responses.response_create_params``): a key the
SDK does not know would be a ``TypeError`` in ``client.responses.create(**body)``.
Why apart from the renderers: the renderers take messages only and stay usable
without a pipeline.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict

from ctxcore.render.context_management import anthropic_context_management, openai_context_management

if TYPE_CHECKING:
    from ctxcore.render.target import TargetSpec

__all__ = ["PromptCacheOptions", "accepts_cache_breakpoints", "anthropic_request", "openai_responses_request"]

#: the first OpenAI model generation that takes ``prompt_cache_breakpoint`` on content blocks (SDK docs: "gpt-5.6 and later").
BREAKPOINT_SINCE = (5, 6)
_GPT_VERSION = re.compile(r"^gpt-(\d+)(?:\.(\d+))?")
#: the content-block types that may carry ``prompt_cache_breakpoint`` (the SDK's input_text / input_image / input_file).
_BREAKABLE = frozenset({"input_text", "input_image", "input_file"})


class PromptCacheOptions(BaseModel):
    """OpenAI ``prompt_cache_options``: ``mode`` (``implicit`` adds OpenAI's own breakpoint) and the minimum ``ttl``."""

    model_config = ConfigDict(extra="forbid")
    mode: Literal["implicit", "explicit"] | None = None
    ttl: Literal["30m", "12h"] | None = None


def accepts_cache_breakpoints(model: str | None) -> bool:
    """Whether the OpenAI ``model`` takes ``prompt_cache_breakpoint`` (gpt-5.6 and later; unknown names do not)."""
    match = _GPT_VERSION.match(model or "")
    if match is None:
        return False
    return (int(match.group(1)), int(match.group(2) or 0)) >= BREAKPOINT_SINCE


def anthropic_request(body: dict[str, Any], target: TargetSpec) -> dict[str, Any]:
    """Add ``context_management`` and the ``betas`` it needs (send with ``client.beta.messages.create``)."""
    if target.context_management is not None:
        rendered = anthropic_context_management(target.context_management)
        if rendered is not None:
            body["context_management"], body["betas"] = rendered
    return body


def openai_responses_request(body: dict[str, Any], target: TargetSpec, thread: Any = None) -> dict[str, Any]:
    """Add the prompt-cache keys, server compaction and (for models that take them) cache breakpoints.

    ``prompt_cache_key`` is the target's, else the build's thread id, so the
    requests of one thread land on the same cache shard.
    """
    key = target.prompt_cache_key or (str(thread) if thread is not None else None)
    if key:
        body["prompt_cache_key"] = key
    if target.prompt_cache_options is not None:
        options = target.prompt_cache_options.model_dump(exclude_none=True)
        if options:
            body["prompt_cache_options"] = options
    if target.context_management is not None:
        rendered = openai_context_management(target.context_management)
        if rendered is not None:
            body["context_management"] = rendered
    if target.prompt_cache_breakpoints == "auto" and accepts_cache_breakpoints(target.model):
        mark_openai_breakpoints(body["input"])
    return body


def mark_openai_breakpoints(items: list[dict[str, Any]]) -> None:
    """``prompt_cache_breakpoint: {"mode": "explicit"}`` at the end of the instructions and at the end of the request.

    The marks go on the last content block of the last system/developer message
    item and of the last input message item; a string content becomes one
    ``input_text`` block to carry it. Two marks: OpenAI writes up to four a
    request (three beside its implicit one), and both places are stable — the
    instructions survive trimming, and this request's end is the next one's prefix.
    """
    head = max((k for k, it in enumerate(items) if it.get("role") in ("system", "developer")), default=None)
    last = max((k for k, it in enumerate(items) if it.get("role") in ("system", "developer", "user")), default=None)
    for k in sorted({k for k in (head, last) if k is not None}):
        _mark_item(items[k])


def _mark_item(item: dict[str, Any]) -> None:
    content = item.get("content")
    if isinstance(content, str):
        content = item["content"] = [{"type": "input_text", "text": content}]
    if not isinstance(content, list):
        return
    for block in reversed(content):
        if isinstance(block, Mapping) and block.get("type") in _BREAKABLE:
            block["prompt_cache_breakpoint"] = {"mode": "explicit"}  # type: ignore[index]
            return
