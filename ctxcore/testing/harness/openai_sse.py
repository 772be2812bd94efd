"""The OpenAI streaming wire format for a finished answer: the events a ``"stream": true`` request gets.

:class:`~ctxcore.testing.harness.openai_server.ChatServer` makes each answer whole
(a ``response`` or a ``chat.completion`` object); a streamed request must receive
the same answer as the server-sent events the real API sends, so that the
official ``openai`` client's stream helpers and the frameworks built on them
(the Agents SDK's ``Runner.run_streamed``) parse and accumulate it exactly as
they do against the hosted API. This module only cuts a finished object into
those events (no I/O, no state), so the streamed and the non-streamed paths
cannot disagree on the answer.

Responses API (``POST /v1/responses``), per the ``openai`` package's
``types/responses/response_*_event.py``: ``response.created`` and
``response.in_progress`` (the response with ``status: in_progress`` and no
output), then per output item ``response.output_item.added`` (the item in
progress: no text, empty arguments), for a message ``response.content_part.added``
/ ``response.output_text.delta`` (one per word) / ``response.output_text.done`` /
``response.content_part.done``, for a function call
``response.function_call_arguments.delta`` / ``.done``, then
``response.output_item.done`` (the whole item), and last ``response.completed``
with the whole response. Every event has its ``sequence_number``; there is no
``[DONE]`` sentinel on this route, as on the real one.

Chat completions (``POST /v1/chat/completions``): ``chat.completion.chunk``
objects (the role, then content deltas, then tool-call deltas by ``index``, then
an empty delta with ``finish_reason``; a usage chunk with no choices when the
request asked ``stream_options.include_usage``), ended by ``data: [DONE]``.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator
from typing import Any

__all__ = ["chat_chunks", "response_events", "sse"]

_ARGUMENT_PIECE = 8  # characters of a tool call's arguments per delta: several deltas for any real call


def _words(text: str) -> list[str]:
    """``text`` cut after each run of whitespace (the pieces join back to ``text``): one delta per word."""
    return [w for w in re.split(r"(?<=\s)(?=\S)", text) if w] or [text]


def _pieces(text: str) -> list[str]:
    """``text`` in fixed-size pieces (at least one, possibly empty)."""
    return [text[i:i + _ARGUMENT_PIECE] for i in range(0, len(text), _ARGUMENT_PIECE)] or [text]


def response_events(response: dict[str, Any]) -> list[dict[str, Any]]:
    """The Responses API stream events that deliver the finished ``response`` object."""
    events: list[dict[str, Any]] = []

    def emit(kind: str, **fields: Any) -> None:
        events.append({"type": kind, "sequence_number": len(events), **fields})

    pending = {**copy.deepcopy(response), "status": "in_progress", "output": [], "usage": None}
    emit("response.created", response=pending)
    emit("response.in_progress", response=pending)
    for index, item in enumerate(response["output"]):
        at = {"item_id": item["id"], "output_index": index}
        if item["type"] == "message":
            emit("response.output_item.added", output_index=index,
                 item={**item, "status": "in_progress", "content": []})
            for k, part in enumerate(item["content"]):
                emit("response.content_part.added", **at, content_index=k, part={**part, "text": ""})
                for word in _words(part["text"]):
                    emit("response.output_text.delta", **at, content_index=k, delta=word, logprobs=[])
                emit("response.output_text.done", **at, content_index=k, text=part["text"], logprobs=[])
                emit("response.content_part.done", **at, content_index=k, part=part)
        elif item["type"] == "function_call":
            emit("response.output_item.added", output_index=index,
                 item={**item, "status": "in_progress", "arguments": ""})
            for piece in _pieces(item["arguments"]):
                emit("response.function_call_arguments.delta", **at, delta=piece)
            emit("response.function_call_arguments.done", **at, arguments=item["arguments"])
        else:  # pragma: no cover - the server makes only the two kinds above
            raise ValueError(f"response_events: no stream form for output item type {item['type']!r}")
        emit("response.output_item.done", output_index=index, item=item)
    emit("response.completed", response=response)
    return events


def chat_chunks(completion: dict[str, Any], *, include_usage: bool = False) -> list[dict[str, Any]]:
    """The ``chat.completion.chunk`` objects that deliver the finished ``completion`` object."""
    choice = completion["choices"][0]
    message = choice["message"]
    head = {k: completion[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        return {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}]}

    chunks = [chunk({"role": "assistant", "content": ""})]
    if message.get("content"):
        chunks += [chunk({"content": word}) for word in _words(message["content"])]
    for index, call in enumerate(message.get("tool_calls") or []):
        chunks.append(chunk({"tool_calls": [{"index": index, "id": call["id"], "type": "function",
                                             "function": {"name": call["function"]["name"], "arguments": ""}}]}))
        chunks += [chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
                   for piece in _pieces(call["function"]["arguments"])]
    chunks.append(chunk({}, choice["finish_reason"]))
    if include_usage:
        chunks.append({**head, "choices": [], "usage": completion["usage"]})
    return chunks


def sse(events: list[dict[str, Any]], *, named: bool, done: bool) -> Iterator[bytes]:
    """Server-sent-event frames of ``events`` (``event:`` lines when ``named``; ``data: [DONE]`` last when ``done``)."""
    for event in events:
        head = f"event: {event['type']}\n" if named else ""
        yield f"{head}data: {json.dumps(event)}\n\n".encode()
    if done:
        yield b"data: [DONE]\n\n"
