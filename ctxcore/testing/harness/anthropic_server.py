"""A local HTTP server speaking the Anthropic Messages API, for tests of code that calls Claude.

The Anthropic counterpart of :mod:`ctxcore.testing.harness.openai_server`: on
``127.0.0.1`` (a free port), ``POST /v1/messages`` takes the body the Messages API
takes and answers with a ``message`` object the official ``anthropic`` client
parses. Every request body and its headers are recorded::

    from anthropic import Anthropic
    from ctxcore.testing.harness.anthropic_server import MessagesServer

    with MessagesServer(reply=lambda body: "Hello!") as server:
        client = Anthropic(base_url=server.base_url, api_key="unused")
        client.messages.create(model="claude-test", max_tokens=64, messages=[...])
    assert server.requests[0]["messages"][-1]["role"] == "user"

``reply(body)`` returns the assistant's text, or a list of content blocks
(``tool_use`` blocks make the "model" call tools). With ``validate=True`` (the
default) the server refuses with HTTP 400, as the API does, a request that breaks
the rules Anthropic enforces on the wire: roles alternating from a user turn,
every ``tool_use`` answered by a ``tool_result`` at the start of the next user
turn and no result without its call, tool ids unique, tools with ``name`` and an
object ``input_schema``, at most 4 ``cache_control`` breakpoints (the top-level one
included) with no ``ttl: 1h`` after a ``5m`` one, and thinking
blocks returned unchanged: with ``thinking=True`` every reply starts with a
``thinking`` block whose ``signature`` the server checks when the block comes
back (a changed byte is refused, as Anthropic refuses it). Server tools and
compaction the same way: :func:`web_search_blocks` makes the
``server_tool_use`` + ``web_search_tool_result`` pair a web-search turn
returns (each result's ``encrypted_content`` signed) and
:func:`compaction_block` a signed ``compaction`` block; a request whose
``context_management`` holds a ``compact_20260112`` edit gets one first in its
reply once what the server reads reaches the trigger (:func:`server_compaction`);
the server refuses a
``server_tool_use``/``mcp_tool_use`` without its result in the same assistant
message, a result without its call, a changed ``encrypted_content`` or
compaction ``signature``, and a ``compaction`` block outside an assistant turn. A
request with ``"stream": true`` gets the same answer as ``text/event-stream``
server-sent events, cut by :mod:`ctxcore.testing.harness.anthropic_sse` (clients
that always stream, such as pydantic-ai's ``AnthropicModel``, run against it). ``POST
/v1/messages/count_tokens`` (``client.messages.count_tokens``) validates the
same body and answers ``{"input_tokens": N}`` with
:func:`~ctxcore.testing.harness.openai_server.stub_token_count`.
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
from collections.abc import Callable, Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from ctxcore.model.blocks import answers_server_call, unpaired_server_calls
from ctxcore.render.caching import cache_marks, ttl_problem
from ctxcore.testing.harness.anthropic_sse import message_events
from ctxcore.testing.harness.openai_server import stub_token_count
from ctxcore.testing.harness.openai_sse import sse

__all__ = [
    "DEFAULT_COMPACT_TRIGGER",
    "MAX_CACHE_BREAKPOINTS",
    "AnthropicReply",
    "MessagesServer",
    "compaction_block",
    "server_compaction",
    "web_search_blocks",
]

AnthropicReply = Callable[[dict[str, Any]], str | Sequence[Mapping[str, Any]]]
"""Makes each answer from the request body: the assistant's text or its content blocks."""

#: the most ``cache_control`` blocks one Messages API request may carry.
MAX_CACHE_BREAKPOINTS = 4

_KEY = b"ctxcore-stub-thinking-key"


class MessagesServer:
    """Serve ``POST /v1/messages`` on 127.0.0.1; use as a context manager.

    Args:
        reply: makes each answer from the request body (default: a fixed text).
        validate: refuse, with HTTP 400, a request that breaks Anthropic's wire rules.
        thinking: start every reply with a signed ``thinking`` block.
        count: ``count(body) -> int``, the input tokens reported in ``usage``.
    """

    def __init__(
        self,
        reply: AnthropicReply | None = None,
        *,
        validate: bool = True,
        thinking: bool = False,
        count: Callable[[dict[str, Any]], int] | None = None,
    ) -> None:
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.reply: AnthropicReply = reply or (lambda body: "Done.")
        self.validate = validate
        self.thinking = thinking
        self.count = count
        self.status = 200
        self._calls = 0
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        """The ``base_url`` to give an Anthropic client, e.g. ``http://127.0.0.1:40123``."""
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> MessagesServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def answer(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """The HTTP status and JSON payload for one request (the handler sends them)."""
        route = path.split("?")[0]
        if route not in ("/v1/messages", "/v1/messages/count_tokens"):
            return 404, _error(f"no route {path}", "not_found_error")
        if self.status != 200:
            return self.status, _error("overloaded", "overloaded_error")
        if route == "/v1/messages/count_tokens":  # messages.count_tokens(): the same body, validated alike
            problem = wire_problem({**body, "max_tokens": 1}) if self.validate else None
            if problem is not None:
                return 400, _error(problem, "invalid_request_error")
            return 200, {"input_tokens": stub_token_count(body.get("system"), body.get("messages"), body.get("tools"))}
        if self.validate:
            problem = wire_problem(body) or (self._thinking_problem(body) if self.thinking else None)
            if problem is not None:
                return 400, _error(problem, "invalid_request_error")
        return 200, self._message(body)

    @staticmethod
    def _thinking_problem(body: dict[str, Any]) -> str | None:
        """With thinking on, the assistant turn a tool result answers must start with its thinking block."""
        messages = body["messages"]
        last = messages[-1].get("content")
        if len(messages) < 2 or not isinstance(last, list) or not last or last[0].get("type") != "tool_result":
            return None
        previous = messages[-2].get("content")
        first = previous[0].get("type") if isinstance(previous, list) and previous else "text"
        if first not in ("thinking", "redacted_thinking"):
            return (f"messages.{len(messages) - 2}.content.0.type: Expected `thinking` or `redacted_thinking`, but found "
                    f"`{first}`. When `thinking` is enabled, a final `assistant` message must start with a thinking block.")
        return None

    def _message(self, body: dict[str, Any]) -> dict[str, Any]:
        made = self.reply(body)
        content = [{"type": "text", "text": made}] if isinstance(made, str) else [dict(b) for b in made]
        compacted = server_compaction(body)
        if compacted is not None:
            content.insert(0, compacted)
        if self.thinking:
            thought = f"Reasoning about request {self._calls + 1}."
            content.insert(0, {"type": "thinking", "thinking": thought, "signature": sign(thought)})
        with self._lock:
            self._calls += 1
            calls = self._calls
        return {
            "id": f"msg_test_{calls}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model") or "stub",
            "content": content,
            "stop_reason": "tool_use" if any(b.get("type") == "tool_use" for b in content) else "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": self.count(body) if self.count else 10, "output_tokens": 10},
        }


def sign(thinking: str) -> str:
    """The stub's signature of a thinking text (a keyed digest, base64)."""
    return base64.b64encode(hashlib.blake2b(thinking.encode(), key=_KEY, digest_size=24).digest()).decode()


def web_search_blocks(call_id: str, query: str, results: Sequence[tuple[str, str]]) -> list[dict[str, Any]]:
    """The ``server_tool_use`` and ``web_search_tool_result`` blocks of one web search (``results``: (url, title)).

    Each result's ``encrypted_content`` is the stub's signature of its url and
    title, checked when the block comes back, as Anthropic checks its own.
    """
    return [
        {"type": "server_tool_use", "id": call_id, "name": "web_search", "input": {"query": query}},
        {"type": "web_search_tool_result", "tool_use_id": call_id, "content": [
            {"type": "web_search_result", "url": url, "title": title, "encrypted_content": sign(url + title),
             "page_age": None} for url, title in results
        ]},
    ]


def compaction_block(summary: str) -> dict[str, Any]:
    """A ``compaction`` block as the API returns it: the summary and its signature (checked when it comes back)."""
    return {"type": "compaction", "content": summary, "signature": sign(summary)}


#: the input tokens past which ``compact_20260112`` compacts when its edit gives no ``trigger`` (the API's default).
DEFAULT_COMPACT_TRIGGER = 150_000


def server_compaction(body: Mapping[str, Any]) -> dict[str, Any] | None:
    """The ``compaction`` block the server puts first in its reply when the request asks for it, else ``None``.

    As the API does with a ``compact_20260112`` edit in ``context_management``:
    when the input the server reads (from the newest ``compaction`` block on,
    counted with :func:`~ctxcore.testing.harness.openai_server.stub_token_count`)
    reaches the edit's ``trigger``, the reply starts with a signed compaction
    block summarising what it replaces, which the client must send back.
    """
    edits = (body.get("context_management") or {}).get("edits") or []
    compact = next((e for e in edits if isinstance(e, Mapping) and e.get("type") == "compact_20260112"), None)
    if compact is None:
        return None
    trigger = (compact.get("trigger") or {}).get("value", DEFAULT_COMPACT_TRIGGER)
    messages = list(body.get("messages") or [])
    start = max((i for i, m in enumerate(messages) if isinstance(m.get("content"), list)
                 and any(isinstance(b, Mapping) and b.get("type") == "compaction" for b in m["content"])), default=0)
    read = messages[start:]
    if stub_token_count(body.get("system"), read, body.get("tools")) < trigger:
        return None
    return compaction_block(f"Summary of the {len(read)} messages before this point.")


def wire_problem(body: Mapping[str, Any]) -> str | None:
    """The first Anthropic wire rule ``body`` breaks, as the API words it, or ``None``."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "messages: at least one message is required"
    if not isinstance(body.get("max_tokens"), int):
        return "max_tokens: Field required"
    problem = _tools_problem(body.get("tools") or [])
    if problem:
        return problem
    if messages[0].get("role") != "user":
        return "messages: first message must use the \"user\" role"
    pending: set[str] = set()
    seen: set[str] = set()
    for i, m in enumerate(messages):
        role = m.get("role")
        if i and role == messages[i - 1].get("role"):
            return f"messages: roles must alternate between \"user\" and \"assistant\" (messages.{i})"
        blocks = m.get("content")
        blocks = [{"type": "text", "text": blocks}] if isinstance(blocks, str) else list(blocks or [])
        if not blocks:
            return f"messages.{i}: all messages must have non-empty content"
        problem = _turn_problem(i, role, blocks, pending, seen)
        if problem:
            return problem
    if pending:
        return f"messages: tool_use ids were found without tool_result blocks immediately after: {', '.join(sorted(pending))}"
    breakpoints = len(cache_marks(body))  # the top-level automatic cache_control takes a slot too
    if breakpoints > MAX_CACHE_BREAKPOINTS:
        return f"A maximum of {MAX_CACHE_BREAKPOINTS} blocks with cache_control may be provided. Found {breakpoints}."
    return ttl_problem(body)


def _turn_problem(i: int, role: Any, blocks: list[Any], pending: set[str], seen: set[str]) -> str | None:
    """What the Messages API says about message ``i`` (``pending``: tool_use ids awaiting results; ``seen``: all)."""
    if role == "user":
        return _user_problem(i, blocks, pending)
    if role != "assistant":
        return f"messages.{i}.role: Input should be 'user' or 'assistant'"
    return _assistant_problem(i, blocks, pending, seen)


def _user_problem(i: int, blocks: list[Any], pending: set[str]) -> str | None:
    """Tool results first, each answering a pending tool_use, and none left pending."""
    answered = 0
    for k, b in enumerate(blocks):
        if b.get("type") == "compaction":
            return f"messages.{i}.content.{k}: `compaction` blocks are only allowed in assistant messages"
        if b.get("type") != "tool_result":
            continue
        if k != answered:
            return f"messages.{i}.content.{k}: tool_result blocks must come first in the user message"
        answered += 1
        if b.get("tool_use_id") not in pending:
            return f"messages.{i}.content.{k}: unexpected tool_use_id found in tool_result blocks: {b.get('tool_use_id')}"
        pending.discard(b["tool_use_id"])
    if pending:
        return f"messages.{i}: tool_use ids were found without tool_result blocks immediately after: {', '.join(sorted(pending))}"
    return None


def _assistant_problem(i: int, blocks: list[Any], pending: set[str], seen: set[str]) -> str | None:
    """Unique tool_use ids with object inputs, signed thinking, no images or documents, server tools paired."""
    unpaired = unpaired_server_calls(blocks)
    if unpaired:
        return (f"messages.{i}: `server_tool_use` block with id `{unpaired[0]}` was found without a corresponding "
                "result block in the same assistant message")
    for k, b in enumerate(blocks):
        problem = _signed_problem(i, k, b, blocks)
        if problem:
            return problem
        kind = b.get("type")
        if kind == "tool_use":
            if b.get("id") in seen:
                return f"messages.{i}.content.{k}: tool_use ids must be unique ({b.get('id')})"
            if not isinstance(b.get("input"), dict):
                return f"messages.{i}.content.{k}.input: Input should be a valid dictionary"
            seen.add(b["id"])
            pending.add(b["id"])
        elif kind == "thinking" and b.get("signature") != sign(str(b.get("thinking"))):
            return f"messages.{i}.content.{k}: Invalid `signature` in `thinking` block"
        elif kind in ("image", "document"):
            return f"messages.{i}.content.{k}: {kind} blocks are only allowed in user messages"
    return None


def _signed_problem(i: int, k: int, b: Mapping[str, Any], blocks: list[Any]) -> str | None:
    """A signed block changed since the stub made it, or a server tool result with no call before it."""
    kind = b.get("type")
    if kind == "compaction" and b.get("content") is not None and b.get("signature") != sign(str(b.get("content"))):
        return f"messages.{i}.content.{k}: Invalid `signature` in `compaction` block"
    if kind == "web_search_tool_result" and isinstance(b.get("content"), list):
        for r in b["content"]:
            if r.get("encrypted_content") != sign(f"{r.get('url')}{r.get('title')}"):
                return f"messages.{i}.content.{k}: Invalid `encrypted_content` in `web_search_result` block"
    if answers_server_call(kind):
        calls = {c.get("id") for c in blocks[:k] if c.get("type") in ("server_tool_use", "mcp_tool_use")}
        if b.get("tool_use_id") not in calls:
            return f"messages.{i}.content.{k}: `{kind}` block has no `server_tool_use` block with id `{b.get('tool_use_id')}` before it"
    return None


def _tools_problem(tools: Any) -> str | None:
    if not isinstance(tools, list):
        return "tools: Input should be a valid list"
    names: set[str] = set()
    for i, t in enumerate(tools):
        if not isinstance(t, Mapping) or not isinstance(t.get("name"), str):
            return f"tools.{i}.name: Field required"
        schema = t.get("input_schema")
        server_tool = t.get("type") not in (None, "custom")  # web_search_20250305...: the API defines its input
        if not server_tool and (not isinstance(schema, Mapping) or schema.get("type") != "object"):
            return f"tools.{i}.input_schema: Field required (a JSON schema of type 'object')"
        if t["name"] in names:
            return f"tools: Tool names must be unique ({t['name']})"
        names.add(t["name"])
    return None


def _error(message: str, kind: str) -> dict[str, Any]:
    """An error body shaped like the Anthropic API's."""
    return {"type": "error", "error": {"type": kind, "message": message}}


def _handler(server: MessagesServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            try:
                body = json.loads(self.rfile.read(length))
            except json.JSONDecodeError as exc:
                self._send(400, _error(f"request body is not JSON: {exc}", "invalid_request_error"))
                return
            server.requests.append(body)
            server.headers.append(dict(self.headers))
            status, payload = server.answer(self.path, body)
            if status == 200 and body.get("stream") is True and payload.get("type") == "message":
                self._stream(payload)
            else:
                self._send(status, payload)

        def _stream(self, message: dict[str, Any]) -> None:
            """The answer as server-sent events, one write per event (the connection's end closes the stream)."""
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream; charset=utf-8")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            for frame in sse(message_events(message), named=True, done=False):
                self.wfile.write(frame)
                self.wfile.flush()

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    return Handler
