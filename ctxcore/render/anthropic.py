"""Anthropic Messages API: ``to_anthropic`` and the rules Anthropic enforces on a request.

``to_anthropic`` gives the ``system`` blocks and ``messages`` (``tool_use`` /
``tool_result`` blocks, strict user/assistant alternation, first message from
the user); :func:`check_anthropic` is the Anthropic half of
:func:`ctxcore.render.validate_request`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ctxcore.errors import InvalidHistory
from ctxcore.model.anthropic_io import ANTHROPIC_EXTRA_KEY, RESULT_BLOCK, anthropic_cache_marks, raw_anthropic_content
from ctxcore.model.blocks import ProviderBlock, foreign_block, foreign_block_error, unpaired_server_calls
from ctxcore.model.messages import FileBlock, ImageBlock, Message, TextBlock
from ctxcore.render._input import coerce, content_kinds
from ctxcore.render.caching import CachePlan, mark_anthropic

__all__ = ["ANTHROPIC_IMAGE_TYPES", "anthropic_tools", "check_anthropic", "to_anthropic"]

# Anthropic's pattern for tool_use ids.
_ANTHROPIC_ID = re.compile(r"^[a-zA-Z0-9_-]+$")
_DATA_URL = re.compile(r"^data:(?P<type>[\w.+-]+/[\w.+-]+);base64,(?P<data>.*)$", re.DOTALL)


def to_anthropic(
    messages: Iterable[Message | Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]] = (),
    cache: CachePlan | None = None,
    *,
    notes: list[str] | None = None,
) -> dict[str, Any]:
    """The messages (and tools) as an Anthropic Messages API request body (``system``, ``messages``, ``tools``).

    System messages, wherever they are, become the ``system`` text blocks in
    order (they are trusted by construction). Tool results become
    ``tool_result`` blocks of a user message; consecutive same-role messages are
    merged so roles alternate strictly. Blank text blocks are left out and an
    assistant message with nothing left is omitted. A tool call id reused by a
    later assistant message is sent as ``<id>_2`` (``_3`` ...) with its result
    renamed alike (Anthropic wants ids unique per request), and a final
    assistant turn is sent without trailing whitespace. Run :func:`validate_request`
    with ``provider="anthropic"`` to know the result is accepted.

    An assistant message read by :meth:`Message.from_anthropic` with thinking
    blocks is sent with its original blocks, unchanged (Anthropic checks their
    signatures). ``tools`` (OpenAI function tools or Anthropic tools) become
    Anthropic tools, see :func:`anthropic_tools`; the key is left out when there are none.
    ``cache`` (the plan of ``target.cache: auto``, see :mod:`ctxcore.render.caching`)
    marks its blocks with ``cache_control: {"type": "ephemeral"}`` (with
    ``"ttl": "1h"`` for 1-hour breakpoints), within the 4-breakpoint cap that
    counts the caller's own marks (:func:`ctxcore.render.caching.mark_anthropic`).
    The caller's own marks (on ``tools``, and on user blocks read by
    :meth:`Message.from_anthropic`) are sent back, with or without ``cache``,
    within the same rules: beyond 4 the oldest are left out, and one before a
    later ``1h`` mark is raised to ``1h``; ``notes``, when given, receives one
    sentence per such change.
    """
    items = coerce(messages)
    system, rendered, _, ends = _render_anthropic(items)
    body: dict[str, Any] = {"messages": rendered}
    if system:
        body["system"] = system
    if tools:
        body["tools"] = anthropic_tools(tools)
    changed = mark_anthropic(body, cache or _NO_PLAN, ends)  # the caller's own marks obey the cap and order too
    if notes is not None:
        notes.extend(changed)
    return body


_NO_PLAN = CachePlan()


def anthropic_tools(tools: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Tool definitions as Anthropic tools: ``name``, ``description``, ``input_schema``.

    Accepts OpenAI chat function tools (``{"type": "function", "function": {...}}``),
    OpenAI Responses function tools (``{"type": "function", "name": ..., "parameters": ...}``)
    and Anthropic tools (given ``input_schema``: passed through). A tool without
    parameters gets the empty object schema Anthropic requires.

    Raises:
        ValueError: a tool is none of these; the message names its index.
    """
    out: list[dict[str, Any]] = []
    for i, tool in enumerate(tools):
        if not isinstance(tool, Mapping):
            raise ValueError(f"tools[{i}]: a tool definition is an object, not {type(tool).__name__}")
        if "input_schema" in tool:
            out.append(dict(tool))
            continue
        function = tool.get("function")
        spec: Mapping[str, Any] = function if isinstance(function, Mapping) else tool
        name = spec.get("name")
        if not isinstance(name, str) or not name:
            raise ValueError(f"tools[{i}]: a tool needs a 'name' (OpenAI function tool or Anthropic tool with input_schema)")
        rendered: dict[str, Any] = {"name": name}
        if spec.get("description"):
            rendered["description"] = spec["description"]
        rendered["input_schema"] = dict(spec.get("parameters") or {"type": "object", "properties": {}})
        out.append(rendered)
    return out


def _render_anthropic(
    messages: Sequence[Message],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[int], dict[int, tuple[int, int]]]:
    """(system blocks, alternating messages, index of the first input message of each,
    input index -> (rendered message, block) where that input message's blocks end)."""
    system: list[dict[str, Any]] = []
    rendered: list[dict[str, Any]] = []
    origins: list[int] = []
    ends: dict[int, tuple[int, int]] = {}
    # Anthropic wants tool_use ids unique across the request; OpenAI histories
    # (local models especially) reuse ids like "call_0" from turn to turn.
    taken = {c.id for m in messages for c in m.tool_calls}
    used: set[str] = set()
    renamed: dict[str, str] = {}  # ids of the current assistant's calls -> ids sent
    last = max((k for k, m in enumerate(messages) if m.role != "system"), default=-1)
    for index, m in enumerate(messages):
        if m.role == "system":
            system.extend(b for b in _blocks(m) if b["type"] == "text")
            continue
        if m.role == "tool":
            role = "user"
            blocks = [_tool_result(m, renamed.get(str(m.tool_call_id), m.tool_call_id))]
        else:
            role = m.role
            raw = raw_anthropic_content(m) if m.role == "assistant" else None
            blocks = (_marked_blocks(m) if m.role == "user" else _blocks(m)) if raw is None else raw
            if m.role == "assistant" and m.tool_calls:
                renamed = {}
                for c in m.tool_calls:
                    renamed[c.id] = _unique_id(c.id, used, taken)
                    if raw is None:
                        blocks.append(_tool_use(renamed[c.id], c.name, c.arguments))
                if raw is not None and any(renamed[k] != k for k in renamed):
                    blocks = [{**b, "id": renamed[b["id"]]} if b["type"] == "tool_use" else b for b in blocks]
        if not blocks:
            if role == "assistant" or index != last:
                continue  # a blank past turn carries nothing: leave it out
            blocks = [{"type": "text", "text": ""}]  # the current turn: kept so validation can name it
        if rendered and rendered[-1]["role"] == role:
            rendered[-1]["content"].extend(blocks)
        else:
            rendered.append({"role": role, "content": blocks})
            origins.append(index)
        ends[index] = (len(rendered) - 1, len(rendered[-1]["content"]) - 1)
    if _strip_final_assistant(rendered):
        origins.pop()
    return system, rendered, origins, ends


def _skipped_for_anthropic(m: Message) -> bool:
    """True for a message with nothing to send (no content blocks, no tool calls) that is not a tool result."""
    return m.role in ("user", "assistant") and not m.tool_calls and not _blocks(m)


def _unique_id(call_id: str, used: set[str], taken: set[str]) -> str:
    """``call_id``, or ``call_id_N`` when an earlier call of the request already used it."""
    out, n = call_id, 1
    while out in used or (out != call_id and out in taken):
        n += 1
        out = f"{call_id}_{n}"
    used.add(out)
    return out


def _strip_final_assistant(rendered: list[dict[str, Any]]) -> bool:
    """Anthropic rejects a final assistant turn ending with whitespace: strip it (True: turn removed)."""
    if not rendered or rendered[-1]["role"] != "assistant":
        return False
    content = rendered[-1]["content"]
    if content[-1]["type"] == "text":
        text = content[-1]["text"].rstrip()
        if text:
            content[-1] = {**content[-1], "text": text}
        else:
            content.pop()
    if not content:
        rendered.pop()
        return True
    return False


def _blocks(m: Message) -> list[dict[str, Any]]:
    """The Anthropic blocks of ``m``'s content, blank text left out."""
    return [block for _, block in _indexed_blocks(m)]


def _indexed_blocks(m: Message) -> list[tuple[int, dict[str, Any]]]:
    """``(content index, block)`` for each block ``m``'s content renders to (string content is index 0)."""
    content = m.content
    if content is None:
        return []
    if isinstance(content, str):
        return [(0, {"type": "text", "text": content})] if content.strip() else []
    out: list[tuple[int, dict[str, Any]]] = []
    for index, b in enumerate(content):
        block = _block(b)
        if block is not None:
            out.append((index, block))
    return out


def _marked_blocks(m: Message) -> list[dict[str, Any]]:
    """``m``'s blocks with the caller's own ``cache_control`` marks put back where they were read."""
    marks = anthropic_cache_marks(m)
    if not marks:
        return _blocks(m)
    return [{**block, "cache_control": marks[index]} if index in marks else block for index, block in _indexed_blocks(m)]


def _block(b: Any) -> dict[str, Any] | None:
    """One content part as an Anthropic block (``None``: a blank text, left out)."""
    if isinstance(b, TextBlock):
        return {"type": "text", "text": b.text} if b.text.strip() else None
    if isinstance(b, ImageBlock):
        return {"type": "image", "source": _source(b.url)}
    if isinstance(b, ProviderBlock):
        if b.api != "anthropic":
            raise InvalidHistory(foreign_block_error(b, "the Anthropic Messages API"))
        return dict(b.raw)  # sent as it came: signatures and encrypted results are checked
    if isinstance(b, FileBlock):
        if b.file_id:
            return {"type": "document", "source": {"type": "file", "file_id": b.file_id}}
        data = b.file_data or ""
        match = _DATA_URL.match(data)  # OpenAI's file_data is a data: URL
        media, data = (match["type"], match["data"]) if match else ("application/pdf", data)
        return {"type": "document", "source": {"type": "base64", "media_type": media, "data": data}}
    return None


#: base64 image types Anthropic accepts, and common aliases sent as their standard name.
ANTHROPIC_IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
_IMAGE_ALIASES = {"image/jpg": "image/jpeg", "image/pjpeg": "image/jpeg"}


def _source(url: str) -> dict[str, Any]:
    match = _DATA_URL.match(url)
    if match:
        media = match["type"].lower()
        return {"type": "base64", "media_type": _IMAGE_ALIASES.get(media, media), "data": match["data"]}
    return {"type": "url", "url": url}


def _tool_use(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    try:
        parsed = json.loads(arguments) if arguments else {}
    except json.JSONDecodeError:
        parsed = None
    return {"type": "tool_use", "id": call_id, "name": name, "input": parsed}


def _tool_result(m: Message, tool_use_id: str | None) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": tool_use_id}
    content = _blocks(m)
    if content:
        block["content"] = content
    extra = m.metadata.get(ANTHROPIC_EXTRA_KEY) or {}
    if "is_error" in extra:
        block["is_error"] = bool(extra["is_error"])
    mark = anthropic_cache_marks(m).get(RESULT_BLOCK)
    if mark is not None:
        block["cache_control"] = mark
    return block


def _check_provider_blocks(m: Message, index: int) -> None:
    """Provider blocks: Anthropic's own only, and each server tool call with its result in the same message."""
    foreign = foreign_block(m.content, "anthropic")
    if foreign is not None:
        raise InvalidHistory(foreign_block_error(foreign, "the Anthropic Messages API"), index=index)
    if m.role != "assistant" or not isinstance(m.content, tuple):
        return
    raw = raw_anthropic_content(m)
    blocks = raw if raw is not None else [b.raw for b in m.content if isinstance(b, ProviderBlock)]
    unpaired = unpaired_server_calls(blocks)
    if unpaired:
        raise InvalidHistory(
            f"server tool call {unpaired[0]!r} has no result block in the same assistant message, which Anthropic "
            "rejects; keep the assistant content blocks of a reply together (add the reply with thread.add_response)",
            index=index,
        )


def _check_anthropic_message(m: Message, index: int, is_last: bool) -> None:
    """Raise :class:`InvalidHistory` when the Messages API would reject ``m`` itself (``is_last``: the current turn)."""
    _check_provider_blocks(m, index)
    if m.role in ("system", "assistant") and content_kinds(m) - {"text", "provider"}:
        raise InvalidHistory(f"Anthropic accepts images and files only from the user, not in a {m.role} message", index=index)
    for block in m.content if isinstance(m.content, tuple) else ():
        if isinstance(block, ImageBlock):
            source = _source(block.url)
            if source["type"] == "base64" and source["media_type"] not in ANTHROPIC_IMAGE_TYPES:
                raise InvalidHistory(
                    f"Anthropic accepts base64 images as {', '.join(sorted(ANTHROPIC_IMAGE_TYPES))}, not "
                    f"{source['media_type']}; convert the image (e.g. to PNG) before adding it",
                    index=index,
                )
    if m.role == "user" and is_last and not _blocks(m):
        # A blank user message in the past is left out by the renderer; the
        # current one is the question itself, so sending nothing is refused.
        raise InvalidHistory("Anthropic rejects a user message with empty content", index=index)
    for call in m.tool_calls:
        if not _ANTHROPIC_ID.match(call.id):
            raise InvalidHistory(f"tool call id {call.id!r} does not match Anthropic's [a-zA-Z0-9_-]+", index=index)
        if not isinstance(_tool_use(call.id, call.name, call.arguments)["input"], dict):
            raise InvalidHistory(f"tool call {call.id!r}: Anthropic requires the arguments to be a JSON object", index=index)


def check_anthropic(items: Sequence[Message]) -> None:
    """Raise :class:`InvalidHistory` for the first message the Messages API would reject (pairing is checked elsewhere)."""
    last = max((k for k, m in enumerate(items) if m.role != "system"), default=-1)
    first = next(
        (k for k, m in enumerate(items) if m.role != "system" and (k == last or not _skipped_for_anthropic(m))), None
    )
    if first is None:
        raise InvalidHistory("Anthropic requires at least one user message; the request has only system messages")
    if items[first].role != "user":
        raise InvalidHistory(
            f"Anthropic requires the first message after the system prompt to come from the user, not {items[first].role!r}",
            index=first,
        )
    for index, m in enumerate(items):
        _check_anthropic_message(m, index, index == last)
    _, rendered, origins, _ = _render_anthropic(items)
    for k in range(1, len(rendered)):  # guaranteed by the merge; checked so a regression cannot ship
        if rendered[k]["role"] == rendered[k - 1]["role"]:  # pragma: no cover
            raise InvalidHistory("roles do not alternate", index=origins[k])
