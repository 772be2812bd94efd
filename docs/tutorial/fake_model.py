"""A scripted stand-in for the model, so the tutorial runs without an API key or a network.

Run it, then point the OpenAI client at it::

    python docs/tutorial/fake_model.py        # prints the two export lines

It is :class:`ctxcore.testing.harness.openai_server.ChatServer` (a local HTTP server speaking
OpenAI chat-completions JSON) with a tiny "agent brain": a user message naming ``.py``
files gets one ``read_file`` call per file; after tool results it answers in one line.
Like the real API it refuses a request that breaks OpenAI's message rules (HTTP 400)
and a prompt longer than its context window (``context_length_exceeded``), counted
with tiktoken's o200k_base, the encoding of the gpt-4o family.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from typing import Any

from ctxcore.engine.builder import coerce_messages
from ctxcore.testing.harness.openai_server import ChatServer
from ctxcore_counters import TiktokenCounter

CONTEXT_WINDOW = 2000
_COUNTER = TiktokenCounter("o200k_base")


def count(body: dict[str, Any]) -> int:
    """Prompt tokens of a request: its messages (with reply priming) plus its tool schemas."""
    tools = body.get("tools") or []
    return _COUNTER.count_messages(coerce_messages(body["messages"])) + (_COUNTER.count_tools(tools) if tools else 0)


def reply(body: dict[str, Any]) -> str | dict[str, Any]:
    """Call read_file for every .py path the user names; otherwise answer in one line."""
    last = body["messages"][-1]
    if last["role"] == "user":
        paths = list(dict.fromkeys(re.findall(r"[\w/]+\.py", last["content"])))
        if paths:
            tag = hashlib.sha1(last["content"].encode()).hexdigest()[:6]
            return {"tool_calls": [
                {"id": f"call_{tag}_{i}", "type": "function",
                 "function": {"name": "read_file", "arguments": json.dumps({"path": p})}}
                for i, p in enumerate(paths)
            ]}
        return f"Done: {len(body['messages'])} messages in view, nothing to read for that."
    if last["role"] == "tool":
        results = []
        for m in reversed(body["messages"]):
            if m["role"] != "tool":
                break
            results.append(m["content"])
        lines = sum(len(r.splitlines()) for r in results)
        return f"I read {len(results)} file(s), {lines} lines; the answer is in the code above."
    return "Go on."


def make_server() -> ChatServer:
    """The scripted model as a ChatServer (not started: use it in a ``with`` block)."""
    return ChatServer(reply=reply, validate=True, context_window=CONTEXT_WINDOW, count=count)


if __name__ == "__main__":
    with make_server() as server:
        print(f"export OPENAI_BASE_URL={server.base_url}")
        print("export OPENAI_API_KEY=unused")
        print("serving; Ctrl-C to stop", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
