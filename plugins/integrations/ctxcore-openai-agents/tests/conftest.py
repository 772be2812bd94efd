"""Fixtures: a Responses API stub that refuses what the real API refuses of a run's input, and answers with reasoning items.

``strict_responses`` is the stub class, ``illegal_input`` the check it applies
(tests call it on the filter's output too).

On top of :class:`ctxcore.testing.harness.openai_server.ChatServer` (the
Responses wire the official client and the Agents SDK parse), like the API:

- a ``function_call`` with no ``function_call_output`` after it is refused
  ("No tool output found for function call ..."), as is an output with no call
  before it (the base server's check);
- a ``reasoning`` item not followed by an assistant output item (its
  ``message`` or ``function_call``) is refused ("... was provided without its
  required following item").

``reply(body)`` may give ``"reasoning": [summary, encrypted_content]`` pairs:
each becomes a ``reasoning`` output item (``summary_text`` part,
``encrypted_content``) before the message and calls, as a reasoning model's
response has them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from ctxcore.testing.harness.openai_server import ChatServer

_FOLLOWERS = frozenset({"message", "function_call"})


def illegal(items: list[dict[str, Any]]) -> str | None:
    """Why the API would refuse this ``input`` (its message), or ``None`` when it is legal by the rules above."""
    called: set[str] = set()
    answered = {i.get("call_id") for i in items if i.get("type") == "function_call_output"}
    for k, item in enumerate(items):
        kind = item.get("type")
        if kind == "function_call":
            called.add(item["call_id"])
            if item["call_id"] not in answered:
                return f"No tool output found for function call {item['call_id']}."
        elif kind == "function_call_output" and item.get("call_id") not in called:
            return f"No tool call found for function call output with call_id {item.get('call_id')}."
        elif kind == "reasoning":
            nxt = items[k + 1] if k + 1 < len(items) else {}
            if nxt.get("type", "message" if nxt.get("role") == "assistant" else None) not in _FOLLOWERS \
                    or nxt.get("role", "assistant") != "assistant":
                return f"Item '{item.get('id')}' of type 'reasoning' was provided without its required following item."
    return None


class StrictResponses(ChatServer):
    """``ChatServer`` whose ``/v1/responses`` refuses illegal input (HTTP 400, as the API) and emits reasoning items.

    One request at a time (the tests send them in turn): the reply is unwrapped around the base server's answer.
    """

    def _responses(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        items = body.get("input")
        if isinstance(items, list):
            why = illegal(items)
            if why is not None:
                return 400, {"error": {"message": why, "type": "invalid_request_error", "param": "input", "code": None}}
        reasoning: list[Any] = []
        reply = self.reply

        def unwrapped(request: dict[str, Any]) -> Any:
            made = reply(request)
            if isinstance(made, dict) and "reasoning" in made:
                reasoning.extend(made["reasoning"])
                made = {k: v for k, v in made.items() if k != "reasoning"}
            return made

        self.reply = unwrapped
        try:
            status, payload = super()._responses(body)
        finally:
            self.reply = reply
        if status == 200 and reasoning:
            payload["output"][:0] = [
                {"type": "reasoning", "id": f"rs_{self._calls}_{k}", "summary": [{"type": "summary_text", "text": s}],
                 "encrypted_content": e}
                for k, (s, e) in enumerate(reasoning)]
        return status, payload


@pytest.fixture(scope="session")
def strict_responses() -> type[StrictResponses]:
    """The strict Responses stub class (use as ``with strict_responses(reply=...) as server``)."""
    return StrictResponses


@pytest.fixture(scope="session")
def illegal_input() -> Callable[[list[dict[str, Any]]], str | None]:
    """Why the Responses API would refuse an ``input`` list, or ``None``."""
    return illegal
