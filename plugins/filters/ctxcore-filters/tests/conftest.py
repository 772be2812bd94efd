"""Fixtures of the filter tests: a real HTTP server on 127.0.0.1 speaking OpenAI chat-completions JSON, for summarizer tests.

It stands in for a hosted model (the one thing a test cannot run here): it
records every request body and answers with a configurable reply, an HTTP
error, or no answer at all (to exercise timeouts).
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable


class ChatServer:
    """Serve ``POST /v1/chat/completions``; ``reply(body) -> str`` makes each answer."""

    def __init__(self, reply: Callable[[dict[str, Any]], str] | None = None) -> None:
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.reply = reply or (lambda body: "The user asked for a fix; the assistant read files and found the bug.")
        self.status = 200
        self.hang = threading.Event()  # set: requests wait (until release) and never answer in time
        self._release = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server naming
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length))
                server.requests.append(body)
                server.headers.append(dict(self.headers))
                if server.hang.is_set():
                    server._release.wait(10)
                    return
                if self.path != "/v1/chat/completions":
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                if server.status != 200:
                    self._send(server.status, {"error": {"message": "model overloaded"}})
                    return
                content = server.reply(body)
                self._send(200, {
                    "id": "chatcmpl-test", "object": "chat.completion", "model": body.get("model"),
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": content}}],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
                })

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> ChatServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._release.set()
        self._server.shutdown()
        self._server.server_close()


import pytest  # noqa: E402


@pytest.fixture
def chat_server():
    """A running :class:`ChatServer`; stopped after the test."""
    with ChatServer() as server:
        yield server
