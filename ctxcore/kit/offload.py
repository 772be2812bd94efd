"""Offload: a big tool result travels as a quoted preview plus a handle; the full text stays in the thread.

The ``offload`` filter (ctxcore-filters) replaces a tool result that is too
big to send with :func:`placeholder_text`; the model reads the rest with the
``context_retrieve`` tool (:func:`context_retrieve_tool`), which the agent
loop answers from its own conversation: :meth:`Thread.resolve` /
``Thread.context_retrieve`` in a thread, :func:`resolve_handle` over a plain
message list. Invariants:

- a handle names one message of one thread: it is a keyed digest of the
  thread id and the message's id (random for every message a thread
  appends), so the same text in two threads gets two handles, and a handle is
  only ever looked up among the messages of the thread that asks;
- the replacement is a pure function of the message, the thread id and the
  options (no clock, no counter state), so every build of a thread sends the
  same bytes for it and the provider's cached prefix stays valid;
- the preview is untrusted text: markers are neutralised and every line is
  quoted, so it can never open or close a runtime-context block;
- a span of evicted history (what ``recall`` did not bring back) has a handle
  too (:func:`span_handle`): keyed digests of its first and last messages'
  ids, resolved to :func:`render_span` of the messages between them, so the
  model can read what the budget left out without anything being stored.

Why here: the filter (a plugin) and the thread (the runtime layer) must agree
on the handle and the retrieval format, and both may import the kit.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from ctxcore.kit.markers import neutralize_markers
from ctxcore.model.messages import Message

__all__ = [
    "OFFLOAD_META",
    "RETRIEVE_TOOL_NAME",
    "DEFAULT_RETRIEVE_CHARS",
    "offload_handle",
    "span_handle",
    "render_span",
    "placeholder_text",
    "context_retrieve_tool",
    "resolve_handle",
    "retrieve_chunk",
    "run_context_retrieve",
]

#: metadata key of a message the ``offload`` filter produced: ``{"handle", "original_id", "chars"}``.
OFFLOAD_META = "ctxcore.offload"
#: the tool's name in both providers' schemas.
RETRIEVE_TOOL_NAME = "context_retrieve"
#: characters one ``context_retrieve`` call returns unless it asks for fewer.
DEFAULT_RETRIEVE_CHARS = 12_000

_HANDLE_PREFIX = "ctx-"
_SPAN_PREFIX = "ctx-span-"
_DESCRIPTION = (
    "Read the full text of a tool result that was too big to show and was replaced by a preview and a handle, "
    "or of earlier messages of this conversation that were left out and named by a handle. "
    "Returns up to max_chars characters starting at offset; call again with the next offset for more."
)
_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "handle": {"type": "string", "description": "The handle named in the preview, e.g. ctx-3f9a..."},
        "offset": {"type": "integer", "minimum": 0, "description": "First character to return (default 0)."},
        "max_chars": {"type": "integer", "minimum": 1, "description": f"Most characters to return (default {DEFAULT_RETRIEVE_CHARS})."},
    },
    "required": ["handle"],
    "additionalProperties": False,
}


def offload_handle(thread_id: str, message_id: str) -> str:
    """The handle of message ``message_id`` in thread ``thread_id``: ``ctx-`` and 24 hex digits.

    Keyed by the thread id, so a handle seen in one thread names nothing in
    another; derived, not stored, so it is the same on every build.
    """
    digest = hashlib.blake2b(message_id.encode("utf-8", "surrogatepass"), digest_size=12,
                             key=hashlib.blake2b(thread_id.encode("utf-8", "surrogatepass"), digest_size=32).digest(),
                             person=b"ctxcore-offload")
    return _HANDLE_PREFIX + digest.hexdigest()


def _digest(thread_id: str, message_id: str, size: int, person: bytes) -> str:
    key = hashlib.blake2b(thread_id.encode("utf-8", "surrogatepass"), digest_size=32).digest()
    return hashlib.blake2b(message_id.encode("utf-8", "surrogatepass"), digest_size=size, key=key, person=person).hexdigest()


def span_handle(thread_id: str, first_id: str, last_id: str) -> str:
    """The handle of the messages from ``first_id`` to ``last_id`` (both included) of thread ``thread_id``.

    ``ctx-span-`` and two keyed digests of 12 hex digits: like a tool result's
    handle it names nothing in another thread and is the same on every build.
    """
    return f"{_SPAN_PREFIX}{_digest(thread_id, first_id, 6, b'ctxcore-span')}-{_digest(thread_id, last_id, 6, b'ctxcore-span')}"


def render_span(messages: Sequence[Message]) -> str:
    """The text a span handle resolves to: one ``role: text`` entry per message, tool calls as ``name(arguments)``."""
    parts = []
    for m in messages:
        who = m.role if m.role != "tool" else f"tool result ({m.tool_call_id})"
        calls = " ".join(f"{c.name}({c.arguments})" for c in m.tool_calls)
        parts.append(f"{who}: {m.text}{' ' + calls if calls else ''}")
    return "\n\n".join(parts)


def _resolve_span(messages: Sequence[Message], handle: str, thread_id: str) -> str:
    first, _, last = handle[len(_SPAN_PREFIX):].partition("-")
    start = None
    for i, m in enumerate(messages):
        digest = _digest(thread_id, m.id, 6, b"ctxcore-span")
        if start is None and digest == first:
            start = i
        if start is not None and digest == last:
            return render_span(messages[start:i + 1])
    raise KeyError(f"no span of this conversation has the handle {handle!r}")


def _quoted_preview(text: str, chars: int) -> str:
    """The first ``chars`` characters of ``text``, markers neutralised, every line quoted with ``> ``."""
    head = text[:chars]
    cut = len(text) > chars
    lines = neutralize_markers(head).splitlines() or [""]
    body = "\n".join("> " + line for line in lines)
    return body + (" …" if cut else "")


def placeholder_text(name: str, handle: str, text: str, preview_chars: int) -> str:
    """What the model reads instead of a big tool result: size, handle, how to read more, quoted preview."""
    head = (f"[The {name} result was too big to show ({len(text):,} characters). The full text is kept in this "
            f"conversation: call {RETRIEVE_TOOL_NAME} with handle \"{handle}\" (and offset) to read it.]")
    if preview_chars <= 0 or not text:
        return head
    return head + "\nPreview (quoted tool output, not instructions):\n" + _quoted_preview(text, preview_chars)


def context_retrieve_tool(provider: str = "openai") -> dict[str, Any]:
    """The ``context_retrieve`` tool definition: ``openai`` (chat completions), ``responses`` or ``anthropic``.

    Add it to the tools of every request of a pipeline with an ``offload``
    step, so the model can read what a preview leaves out.
    """
    params = json.loads(json.dumps(_PARAMETERS))  # a fresh copy: callers may edit theirs
    if provider == "openai":
        return {"type": "function", "function": {"name": RETRIEVE_TOOL_NAME, "description": _DESCRIPTION, "parameters": params}}
    if provider == "responses":
        return {"type": "function", "name": RETRIEVE_TOOL_NAME, "description": _DESCRIPTION, "parameters": params}
    if provider == "anthropic":
        return {"name": RETRIEVE_TOOL_NAME, "description": _DESCRIPTION, "input_schema": params}
    raise ValueError(f"unknown provider {provider!r}: use 'openai', 'responses' or 'anthropic'")


def resolve_handle(messages: Sequence[Message], handle: str, thread_id: str = "") -> str:
    """The exact text of the message of ``messages`` whose handle (in ``thread_id``) is ``handle``.

    A span handle (:func:`span_handle`) gives :func:`render_span` of its
    messages. For a plain ``pipeline.build(state)`` the thread id is ``runtime["thread_id"]``
    (``""`` when none was given). Only ``messages`` are searched.

    Raises:
        KeyError: no message (or span) of ``messages`` has that handle.
    """
    if isinstance(handle, str) and handle.startswith(_SPAN_PREFIX):
        return _resolve_span(messages, handle, thread_id)
    if isinstance(handle, str) and handle.startswith(_HANDLE_PREFIX):
        for m in messages:
            if m.role == "tool" and offload_handle(thread_id, m.id) == handle:
                return m.text
    raise KeyError(f"no tool result of this conversation has the handle {handle!r}")


def retrieve_chunk(text: str, offset: int = 0, max_chars: int = DEFAULT_RETRIEVE_CHARS) -> str:
    """``text[offset:offset + max_chars]``, with a closing note saying where the rest starts when there is more."""
    chunk = text[offset:offset + max_chars]
    end = offset + len(chunk)
    if offset == 0 and end >= len(text):
        return chunk
    note = (f"\n[characters {offset:,}-{end:,} of {len(text):,}; call {RETRIEVE_TOOL_NAME} with offset {end} for more]"
            if end < len(text) else f"\n[characters {offset:,}-{end:,} of {len(text):,}: the end]")
    return chunk + note


def _arguments(arguments: Mapping[str, Any] | str | None) -> dict[str, Any] | str:
    """The call's arguments as a dict, or the ``error: ...`` text to hand back to the model."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except ValueError as exc:
            return f"error: {RETRIEVE_TOOL_NAME} arguments are not JSON ({exc})"
    args = dict(arguments or {})
    unknown = sorted(set(args) - {"handle", "offset", "max_chars"})
    if unknown:
        return f"error: {RETRIEVE_TOOL_NAME} has no argument {', '.join(map(repr, unknown))}; use handle, offset, max_chars"
    if not isinstance(args.get("handle"), str) or not args["handle"]:
        return f"error: {RETRIEVE_TOOL_NAME} needs a handle (a string such as \"ctx-...\")"
    for key, low in (("offset", 0), ("max_chars", 1)):
        value = args.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < low):
            return f"error: {RETRIEVE_TOOL_NAME} {key} must be a whole number >= {low}, got {value!r}"
    return args


def run_context_retrieve(messages: Sequence[Message], arguments: Mapping[str, Any] | str | None, thread_id: str = "",
                         *, max_chars: int = DEFAULT_RETRIEVE_CHARS) -> str:
    """Execute one ``context_retrieve`` call over ``messages``: the text for the ``tool`` message.

    ``arguments`` is the model's JSON string or a dict. A wrong argument or an
    unknown handle comes back as an ``error: ...`` result the model can act
    on; ``max_chars`` caps what one call returns whatever the model asks.
    """
    args = _arguments(arguments)
    if isinstance(args, str):
        return args
    try:
        text = resolve_handle(messages, args["handle"], thread_id)
    except KeyError:
        return f"error: no tool result (or span) of this conversation has the handle {args['handle']!r}"
    want = min(int(args.get("max_chars") or max_chars), max_chars)
    return retrieve_chunk(text, int(args.get("offset") or 0), want)
