"""The input forms a stored history item may take, and the copies and cleaning applied to them.

A dict is an OpenAI chat message, an Anthropic message or an OpenAI Responses
input item (:func:`item_format` tells which); everything here is pure in the
item, so the reference path and the fast path read every item the same way.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from ctxcore import TextBlock
from ctxcore.kit import ANTHROPIC_RESULT_KINDS
from ctxcore_providers._markers import OPEN_MARKER, has_marker, neutralize_markers, strip_runtime_blocks

# Block types only Anthropic messages have (OpenAI chat parts are text, image_url, file).
_ANTHROPIC_BLOCKS = frozenset({
    "tool_use", "tool_result", "thinking", "redacted_thinking", "image", "document", "server_tool_use",
    *ANTHROPIC_RESULT_KINDS, "mcp_tool_use", "mcp_tool_result", "container_upload", "search_result", "compaction",
})
# Responses output items that belong to the model turn of the function calls after them (one message together).
_TURN_ITEMS = frozenset({
    "function_call", "reasoning", "web_search_call", "file_search_call", "code_interpreter_call",
    "image_generation_call", "mcp_call", "mcp_list_tools", "mcp_approval_request", "compaction",
})
# Content part types only Responses input messages have.
_RESPONSES_PARTS = frozenset({"input_text", "output_text", "input_image", "input_file", "refusal"})


def item_format(item: Mapping[str, Any]) -> str:
    """Which API's message a dict is: ``openai`` (chat completions), ``anthropic`` or ``responses``.

    A ``type`` key (``message``, ``function_call_output``, ``reasoning``...) or a
    Responses content part type makes a Responses item; an Anthropic-only block
    type (``tool_use``, ``tool_result``, ``image``, ``thinking``...) an Anthropic
    message; everything else, including string content (which reads the same in
    all three), is read as an OpenAI chat message.
    """
    if "type" in item:
        return "responses"
    content = item.get("content")
    if type(content) is list:
        for block in content:
            kind = block.get("type") if isinstance(block, Mapping) else None
            if kind in _ANTHROPIC_BLOCKS:
                return "anthropic"
            if kind in _RESPONSES_PARTS:
                return "responses"
    return "openai"


def is_call(item: Any) -> bool:
    """Whether a stored item is a Responses ``function_call`` or another output item of the model's turn.

    A run of them makes one message, so a ``reasoning`` item and the function
    call it led to are never split (the API refuses one without the other).
    """
    return type(item) is dict and item.get("type") in _TURN_ITEMS


# Values a private copy may share with the original: nothing can change them in place.
_IMMUTABLE = frozenset({str, int, float, bool, type(None), bytes})


def private_copy(value: Any) -> Any:
    """A copy of ``value`` that equals it and shares nothing mutable with it (the guard's copy of a stored dict).

    The same as :func:`copy.deepcopy` for what the guard compares (``==``), at a
    fraction of its cost for JSON-like dicts: nested dicts and lists are
    rebuilt, strings and numbers shared, anything else deep-copied.
    """
    kind = type(value)
    if kind is dict:
        return {k: v if type(v) in _IMMUTABLE else private_copy(v) for k, v in value.items()}
    if kind is list:
        return [v if type(v) in _IMMUTABLE else private_copy(v) for v in value]
    if kind in _IMMUTABLE:
        return value
    return copy.deepcopy(value)


# Values a JSON copy shares with the dict: nothing changes them in place, and their JSON is their own.
_JSON_SCALARS = frozenset({str, int, float, bool, type(None)})
UNCOPIED: Any = object()


def json_copy(value: Any) -> Any:
    """A copy of ``value`` whose JSON is its JSON now, whatever happens to it later; :data:`UNCOPIED` if unsure.

    Dicts with ``str`` keys and lists are rebuilt, JSON scalars shared; anything
    else (an object whose JSON is its ``str()``, which may change; a non-``str``
    key; nesting too deep) gives :data:`UNCOPIED`, and the caller makes the id now.
    """
    try:
        return _copied(value)
    except RecursionError:
        return UNCOPIED


def _copied(value: Any) -> Any:
    kind = type(value)
    if kind in _JSON_SCALARS:
        return value
    if kind is dict:
        out = {}
        for k, v in value.items():
            v = _copied(v) if type(k) is str else UNCOPIED
            if v is UNCOPIED:
                return UNCOPIED
            out[k] = v
        return out
    if kind is list:
        copied = [_copied(v) for v in value]
        return UNCOPIED if any(v is UNCOPIED for v in copied) else copied
    return UNCOPIED


def clean_text(text: str, strip: bool) -> str:
    """``text`` with live runtime-context blocks removed (``strip``: a user message) and marker look-alikes defused."""
    if strip and OPEN_MARKER in text:
        text = strip_runtime_blocks(text)
    return neutralize_markers(text) if has_marker(text) else text


def clean_content(content: Any, strip: bool) -> Any:
    """A message's content cleaned by :func:`clean_text`; the same object when nothing changed."""
    if isinstance(content, str):
        cleaned = clean_text(content, strip)
        return content if cleaned == content else cleaned
    blocks = []
    changed = False
    for b in content:
        if isinstance(b, TextBlock):
            cleaned = clean_text(b.text, strip)
            if cleaned != b.text:
                b = TextBlock(text=cleaned)
                changed = True
        blocks.append(b)
    return tuple(blocks) if changed else content
