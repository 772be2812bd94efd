"""The other peers of bench/perf.py: nanobot's per-turn path and LlamaIndex's ChatMemoryBuffer.

Bench-only: ``nanobot-ai`` and ``llama-index-core`` come from
requirements-bench.txt and are never imported by ctxcore or a plugin. Each
side is what that framework does on every turn, fed the same OpenAI-format
transcript of :mod:`workload`:

- **nanobot** (``nanobot-ai``): the session holds the dicts
  (``Session.messages``); a turn is ``Session.get_history()`` (its replay
  slice: starts on a user message, drops orphan tool results), the system
  prompt in front, then ``ContextGovernor().fit_to_budget`` (its budget trim:
  every message counted with its own cl100k estimate, newest first, no cache;
  its encoding is the bench's loaded one, as nanobot's own loader would download it).
  Its input budget is ``context_window - max_tokens - 1024``; the bench sets the
  window so that budget is the bench's.
- **LlamaIndex** (``llama-index-core``): ``ChatMemoryBuffer`` with
  ``token_limit`` and a cl100k tokenizer; a turn is ``memory.get()``, which
  drops the oldest messages one at a time and re-counts the rest each time
  (quadratic in what it drops: the bench uses it at 2,000 messages at most).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

__all__ = ["NanobotSide", "LlamaIndexSide", "available"]

SNIP_SAFETY_BUFFER = 1024  # nanobot.agent.context_governance.SNIP_SAFETY_BUFFER (checked below)
MAX_OUTPUT = 4096


def available() -> dict[str, bool]:
    """Which peers are installed (``make bench`` installs them; the smoke test may run without)."""
    found = {}
    for name, module in (("nanobot", "nanobot.agent.context_governance"), ("llamaindex", "llama_index.core.memory")):
        try:
            __import__(module)
            found[name] = True
        except ImportError:
            found[name] = False
    return found


class NanobotSide:
    """One nanobot session over ``dicts`` with an input budget of ``budget`` tokens."""

    def __init__(self, dicts: Sequence[dict[str, Any]], system_prompt: str, budget: int, encoding: Any) -> None:
        from nanobot.agent import context_governance as cg
        from nanobot.session.manager import Session
        from nanobot.utils import helpers

        # nanobot asks tiktoken for cl100k_base, which downloads it: hand it the bench's loaded
        # encoding instead (else it silently falls back to a byte count).
        helpers._get_token_encoding = lambda: encoding

        if cg.SNIP_SAFETY_BUFFER != SNIP_SAFETY_BUFFER:
            raise RuntimeError(f"nanobot's safety buffer is {cg.SNIP_SAFETY_BUFFER}, the bench assumes {SNIP_SAFETY_BUFFER}")
        self.session = Session(key="bench:1", messages=[dict(d) for d in dicts])
        self.governor = cg.ContextGovernor()
        self.config = cg.ContextGovernanceConfig(
            provider=SimpleNamespace(generation=SimpleNamespace(max_tokens=MAX_OUTPUT)),
            model="gpt-4", tools=None, workspace=Path("."), session_key="bench:1",  # type: ignore[arg-type]
            max_tool_result_chars=10**9, context_window_tokens=budget + MAX_OUTPUT + SNIP_SAFETY_BUFFER,
            max_tokens=MAX_OUTPUT,
        )
        self.system = {"role": "system", "content": system_prompt}
        if self.governor.input_budget(self.config) != budget:
            raise RuntimeError("nanobot's input budget does not match the bench's")

    def append(self, message: dict[str, Any]) -> None:
        """The history grows by one message (nanobot stores dicts)."""
        self.session.messages.append(dict(message))

    def turn(self) -> list[dict[str, Any]]:
        """What nanobot sends this turn: replay slice, system prompt first, fitted to the budget."""
        history = self.session.get_history()
        return self.governor.fit_to_budget(self.config, [self.system, *history], tool_definitions=None)


class LlamaIndexSide:
    """A ``ChatMemoryBuffer`` holding ``dicts`` with ``token_limit=budget`` and a cl100k tokenizer."""

    def __init__(self, dicts: Sequence[dict[str, Any]], system_prompt: str, budget: int, encoding: Any) -> None:
        from llama_index.core.base.llms.types import ChatMessage
        from llama_index.core.memory import ChatMemoryBuffer

        self._chat = ChatMessage
        self.system = ChatMessage(role="system", content=system_prompt)
        self.memory = ChatMemoryBuffer.from_defaults(
            chat_history=[self._convert(d) for d in dicts], token_limit=budget, tokenizer_fn=encoding.encode_ordinary,
        )

    def _convert(self, d: dict[str, Any]) -> Any:
        extra: dict[str, Any] = {}
        if d.get("tool_calls"):
            extra["tool_calls"] = d["tool_calls"]
        if d.get("tool_call_id"):
            extra["tool_call_id"] = d["tool_call_id"]
        return self._chat(role=d["role"], content=d.get("content") or "", additional_kwargs=extra)

    def append(self, message: dict[str, Any]) -> None:
        """The history grows by one message."""
        self.memory.put(self._convert(message))

    def turn(self) -> list[dict[str, Any]]:
        """What LlamaIndex sends this turn (as OpenAI dicts, for the bench's checks)."""
        out = [{"role": "system", "content": self.system.content}]
        for m in self.memory.get():
            d: dict[str, Any] = {"role": m.role.value, "content": m.content}
            d.update(m.additional_kwargs)
            out.append(d)
        return out


def to_dicts_for_check(messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Plain copies (``json`` round trip): the checks never see a peer's private objects."""
    return json.loads(json.dumps(list(messages)))
