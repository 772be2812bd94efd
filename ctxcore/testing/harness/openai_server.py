"""A local HTTP server speaking OpenAI chat-completions JSON, for tests of code that calls a model.

A hosted model is the one part a test cannot run here, so this stands in for it on
``127.0.0.1`` (a free port) with the real wire protocol: ``POST /v1/chat/completions``
takes the request body the OpenAI API takes and answers with a ``chat.completion``
object the official ``openai`` client parses. Every request body and its headers are
recorded, so a test asserts on what was really sent::

    from ctxcore.testing.harness.openai_server import ChatServer

    with ChatServer(reply=lambda body: "Hello!") as server:
        client = OpenAI(base_url=server.base_url, api_key="unused")
        ...
    assert server.requests[0]["messages"][-1]["role"] == "user"

``reply(body)`` returns the assistant's text, or a whole assistant message dict (with
``tool_calls`` to make the "model" call tools). ``POST /v1/responses`` speaks the
Responses API the same way: ``reply`` gets the request body (``input`` items) and its
answer becomes the response's ``output`` items (an answer dict's ``output``
list of raw items first: hosted tool calls, ``compaction``..., then ``message``
text, then a ``function_call`` per tool call; a request whose ``context_management``
holds ``{"type": "compaction", "compact_threshold": N}`` gets a ``compaction`` item
after the raw ones once the input from its newest compaction on reaches N tokens), and ``POST /v1/responses/input_tokens`` answers
``responses.input_tokens.count()`` with a ``response.input_tokens`` object
(``count(body)`` when given, else :func:`stub_token_count`); the input rules of
:mod:`ctxcore.testing.harness.responses_rules` (a ``function_call_output``
answering no call, reasoning split from its item or (with ``reasoning=True``) changed, an
``mcp_approval_response`` answering no request) are refused with a 400. A request with ``"stream": true`` (on
either route) gets the same answer as ``text/event-stream`` server-sent events, the
real API's event sequence (``response.created`` ... ``response.completed`` on
``/v1/responses``; ``chat.completion.chunk`` objects ending in ``data: [DONE]`` on chat
completions; cut by :mod:`ctxcore.testing.harness.openai_sse`), so the client's stream
helpers and the Agents SDK's ``Runner.run_streamed`` run against it; it is recorded
like any other request, and a refused one is the same JSON error. Like the real API, the server can refuse
a request: with ``validate=True`` one that breaks OpenAI's message rules (a tool result
without its call, ...; checked by :func:`ctxcore.render.validate_request`), and with
``context_window`` and ``count`` one whose prompt is longer than the window
(``context_length_exceeded``). ``status`` forces an HTTP error, :meth:`ChatServer.fail_next`
answers the next requests with an error status (and a ``Retry-After`` header) before
answering normally, and ``hang`` makes requests wait without an answer, to exercise error
handling, retries and timeouts.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from ctxcore.errors import InvalidHistory
from ctxcore.render import validate_request
from ctxcore.testing.harness.openai_sse import chat_chunks, response_events, sse
from ctxcore.testing.harness.responses_rules import compaction_item, reasoning_item, responses_input_problem

__all__ = ["ChatServer", "Reply", "stub_token_count"]

Reply = Callable[[dict[str, Any]], str | Mapping[str, Any]]
"""Makes each answer from the request body: the assistant's text or a whole assistant message."""

_DEFAULT_REPLY = "The user asked for a fix; the assistant read files and found the bug."


class ChatServer:
    """Serve ``POST /v1/chat/completions`` on 127.0.0.1; use as a context manager.

    Args:
        reply: makes each answer from the request body (default: a fixed summary-like text).
        validate: refuse, with HTTP 400 as OpenAI does, a request whose messages break
            OpenAI's rules.
        context_window: refuse a prompt longer than this many tokens (``count`` measures it).
        count: ``count(body) -> int``, the prompt tokens of a request body; also reported
            as ``usage.prompt_tokens``.
        reasoning: start every Responses answer with an encrypted ``reasoning`` item,
            which must come back unchanged and before the item it led to.
    """

    def __init__(
        self,
        reply: Reply | None = None,
        *,
        validate: bool = False,
        context_window: int | None = None,
        count: Callable[[dict[str, Any]], int] | None = None,
        reasoning: bool = False,
    ) -> None:
        if context_window is not None and count is None:
            raise ValueError("ChatServer: context_window needs count, the function that measures a request")
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.reply: Reply = reply or (lambda body: _DEFAULT_REPLY)
        self.validate = validate
        self.context_window = context_window
        self.count = count
        self.reasoning = reasoning
        self._reasoning_of: dict[str, str] = {}  # output item id -> the reasoning item it must come back with
        self.status = 200
        self.hang = threading.Event()  # set: requests wait (until the server stops) and never answer in time
        self._release = threading.Event()
        self._calls = 0
        self._failures: list[tuple[int, str | None]] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        """The ``base_url`` to give an OpenAI client, e.g. ``http://127.0.0.1:40123/v1``."""
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> ChatServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._release.set()
        self._server.shutdown()
        self._server.server_close()

    def fail_next(self, status: int = 429, *, times: int = 1, retry_after: str | None = None) -> None:
        """Answer the next ``times`` requests with ``status`` (and ``Retry-After: retry_after`` when given)."""
        with self._lock:
            self._failures.extend([(status, retry_after)] * times)

    def _next_failure(self) -> tuple[int, str | None] | None:
        with self._lock:
            return self._failures.pop(0) if self._failures else None

    def answer(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """The HTTP status and JSON payload for one request (the handler sends them)."""
        if path not in ("/v1/chat/completions", "/v1/responses", "/v1/responses/input_tokens"):
            return 404, _error(f"no route {path}", "invalid_request_error")
        if self.status != 200:
            return self.status, _error("model overloaded", "server_error")
        if path == "/v1/responses/input_tokens":  # responses.input_tokens.count()
            tokens = self.count(body) if self.count is not None else stub_token_count(body.get("input"), body.get("tools"))
            return 200, {"object": "response.input_tokens", "input_tokens": tokens}
        if path == "/v1/responses":
            return self._responses(body)
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            return 400, _error("'messages' must be a non-empty array", "invalid_request_error", param="messages")
        if self.validate:
            try:
                validate_request(messages, provider="openai")
            except InvalidHistory as exc:
                return 400, _error(f"Invalid parameter: {exc}", "invalid_request_error", param="messages")
        prompt_tokens = self.count(body) if self.count is not None else 10
        if self.context_window is not None and prompt_tokens > self.context_window:
            return 400, _error(
                f"This model's maximum context length is {self.context_window} tokens. However, your messages "
                f"resulted in {prompt_tokens} tokens. Please reduce the length of the messages.",
                "invalid_request_error", param="messages", code="context_length_exceeded",
            )
        return 200, self._completion(body, prompt_tokens)

    def _completion(self, body: dict[str, Any], prompt_tokens: int) -> dict[str, Any]:
        """A ``chat.completion`` object carrying the reply."""
        made = self.reply(body)
        message: dict[str, Any] = {"role": "assistant", "content": made} if isinstance(made, str) else dict(made)
        message.setdefault("role", "assistant")
        message.setdefault("content", None)
        self._calls += 1
        return {
            "id": f"chatcmpl-test-{self._calls}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model") or "stub",
            "choices": [{
                "index": 0,
                "finish_reason": "tool_calls" if message.get("tool_calls") else "stop",
                "message": message,
                "logprobs": None,
            }],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": 10, "total_tokens": prompt_tokens + 10},
        }


    def _responses(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """A Responses API ``response`` object (or the 400 the API gives an unanswerable output)."""
        items = body.get("input")
        if not isinstance(items, (list, str)) or not items:
            return 400, _error("'input' must be a non-empty string or array", "invalid_request_error", param="input")
        problem = responses_input_problem(items if isinstance(items, list) else [], self._reasoning_of,
                                          verify_encrypted=self.reasoning)
        if problem is not None:
            return 400, _error(problem[1], "invalid_request_error", param=problem[0])
        made = self.reply(body)
        message: dict[str, Any] = {"content": made} if isinstance(made, str) else dict(made)
        self._calls += 1
        if _compacts(body, items if isinstance(items, list) else []):
            message["output"] = [*(message.get("output") or []), compaction_item(f"cmp_{self._calls}")]
        output = self._output(message)
        if self.reasoning:
            output.insert(0, reasoning_item(f"rs_{self._calls}"))
            self._reasoning_of.update({o["id"]: f"rs_{self._calls}" for o in output[1:2] if "id" in o})
        return 200, {
            "id": f"resp_test_{self._calls}", "object": "response", "created_at": int(time.time()), "status": "completed",
            "model": body.get("model") or "stub", "output": output, "parallel_tool_calls": True, "tool_choice": "auto",
            "tools": body.get("tools") or [],
            "usage": {"input_tokens": 10, "output_tokens": 10, "total_tokens": 20,
                      "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0}},
        }


    def _output(self, message: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The output items of one answer: its raw ``output`` items, then its text, then its function calls."""
        output: list[dict[str, Any]] = [dict(o) for o in message.get("output") or []]
        if message.get("content"):
            output.append({"type": "message", "id": f"msg_{self._calls}", "role": "assistant", "status": "completed",
                           "content": [{"type": "output_text", "text": message["content"], "annotations": []}]})
        for k, c in enumerate(message.get("tool_calls") or []):
            output.append({"type": "function_call", "id": f"fc_{self._calls}_{k}", "call_id": c["id"],
                           "name": c["function"]["name"], "arguments": c["function"]["arguments"], "status": "completed"})
        return output


def _compacts(body: Mapping[str, Any], items: list[Any]) -> bool:
    """Whether server-side compaction applies, as the API's does: a ``compaction`` entry in ``context_management``
    whose ``compact_threshold`` the input it reads (from the newest ``compaction`` item on) reaches."""
    settings = body.get("context_management") or []
    threshold = next((c.get("compact_threshold") for c in settings
                      if isinstance(c, Mapping) and c.get("type") == "compaction"), None)
    if not threshold:
        return False
    start = max((i for i, it in enumerate(items) if isinstance(it, Mapping) and it.get("type") == "compaction"), default=0)
    return stub_token_count(body.get("instructions"), items[start:]) >= threshold


def stub_token_count(*parts: Any) -> int:
    """The stubs' token count of a request's parts: a quarter of their JSON's characters, rounded up (deterministic)."""
    size = sum(len(json.dumps(p, sort_keys=True)) for p in parts if p is not None)
    return -(-size // 4)


def _error(message: str, kind: str, *, param: str | None = None, code: str | None = None) -> dict[str, Any]:
    """An error body shaped like the OpenAI API's."""
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def _handler(server: ChatServer) -> type[BaseHTTPRequestHandler]:
    """The request handler class bound to ``server``."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server naming
            length = int(self.headers.get("Content-Length", "0"))
            try:
                body = json.loads(self.rfile.read(length))
            except json.JSONDecodeError as exc:
                self._send(400, _error(f"request body is not JSON: {exc}", "invalid_request_error"))
                return
            server.requests.append(body)
            server.headers.append(dict(self.headers))
            if server.hang.is_set():
                server._release.wait(10)
                return
            failure = server._next_failure()
            if failure is not None:
                kind = "rate_limit_exceeded" if failure[0] == 429 else "server_error"
                self._send(failure[0], _error("try again later", kind), retry_after=failure[1])
                return
            status, payload = server.answer(self.path, body)
            if status == 200 and body.get("stream") is True:
                self._stream(payload, body)
            else:
                self._send(status, payload)

        def _stream(self, payload: dict[str, Any], body: dict[str, Any]) -> None:
            """The answer as server-sent events, one write per event (the connection's end closes the stream)."""
            if payload.get("object") == "response":
                frames = sse(response_events(payload), named=True, done=False)
            else:
                include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
                frames = sse(chat_chunks(payload, include_usage=include_usage), named=False, done=True)
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream; charset=utf-8")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            for frame in frames:
                self.wfile.write(frame)
                self.wfile.flush()

        def _send(self, status: int, payload: dict[str, Any], retry_after: str | None = None) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            if retry_after is not None:
                self.send_header("Retry-After", retry_after)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    return Handler
