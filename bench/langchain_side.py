"""The LangChain reference: the workload as LangChain messages and an exact cl100k counter.

Bench-only: this module (and ``langchain-core``) is never imported by ctxcore
or a plugin. ``to_langchain`` turns the OpenAI-format dicts of
:mod:`workload` into ``SystemMessage`` / ``HumanMessage`` / ``AIMessage``
(with ``tool_calls``) / ``ToolMessage`` objects, built once outside any timed
call. ``ExactCl100kCounter`` is the ``token_counter`` handed to
``trim_messages``: a callable over a message list that counts with the same
tiktoken encoding object and the same rule as ctxcore's tiktoken counter
(OpenAI's published rule, which ``ChatOpenAI.get_num_tokens_from_messages``
follows too):

- per message: 3 + tokens(role) + tokens(content) (+ tokens(tool_call_id) for a
  tool result, + tokens(name) + 1 when a name is set);
- per tool call: 3 + tokens(id) + tokens(name) + tokens(JSON arguments), the
  arguments serialised with ``json.dumps`` exactly as the transcript sent them;
- per request: 3 tokens of reply priming.

So both sides count the same texts and the same overheads: the two kept
windows are directly comparable, and ``ExactCl100kCounter`` applied to a
ctxcore output gives the same number as ctxcore's own counter.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

__all__ = ["to_langchain", "ExactCl100kCounter", "MemoizedCl100kCounter", "ROLES"]

#: OpenAI role of each LangChain message type (what the model is sent, so what is counted).
ROLES = {"system": "system", "human": "user", "ai": "assistant", "tool": "tool"}


def to_langchain(dicts: Sequence[dict[str, Any]], system_prompt: str | None = None) -> list[BaseMessage]:
    """LangChain messages for OpenAI-format ``dicts``, led by ``SystemMessage(system_prompt)`` when given."""
    out: list[BaseMessage] = [SystemMessage(system_prompt)] if system_prompt is not None else []
    for i, d in enumerate(dicts):
        role, content = d["role"], d.get("content") or ""
        if role == "system":
            out.append(SystemMessage(content, id=f"m{i}"))
        elif role == "user":
            out.append(HumanMessage(content, id=f"m{i}"))
        elif role == "assistant":
            calls = [
                {"name": c["function"]["name"], "args": json.loads(c["function"]["arguments"]), "id": c["id"], "type": "tool_call"}
                for c in d.get("tool_calls") or ()
            ]
            out.append(AIMessage(content, tool_calls=calls, id=f"m{i}"))
        elif role == "tool":
            out.append(ToolMessage(content, tool_call_id=d["tool_call_id"], id=f"m{i}"))
        else:
            raise ValueError(f"message {i}: unknown role {role!r}")
    return out


class ExactCl100kCounter:
    """``token_counter`` for ``trim_messages``: exact counts with a tiktoken encoding, no cache.

    ``encoding`` is a loaded ``tiktoken.Encoding`` (the same object ctxcore's
    counter uses, so neither side pays for loading it). ``calls`` and
    ``messages_counted`` record how much work LangChain asked for.
    """

    tokens_per_message = 3
    tokens_per_name = 1
    tokens_per_tool_call = 3
    reply_priming = 3

    def __init__(self, encoding: Any) -> None:
        self._encode = encoding.encode_ordinary
        self.calls = 0
        self.messages_counted = 0

    def _text(self, text: str) -> int:
        return len(self._encode(text)) if text else 0

    def count_message(self, message: BaseMessage) -> int:
        """Tokens of one message by the rule in the module doc."""
        if not isinstance(message.content, str):
            raise TypeError(f"{type(message).__name__} {message.id}: the benchmark only builds string contents")
        count = self.tokens_per_message + self._text(ROLES[message.type]) + self._text(message.content)
        if message.name:
            count += self._text(message.name) + self.tokens_per_name
        if isinstance(message, ToolMessage):
            count += self._text(message.tool_call_id)
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                count += (
                    self.tokens_per_tool_call
                    + self._text(call["id"] or "")
                    + self._text(call["name"])
                    + self._text(json.dumps(call["args"]))
                )
        return count

    def __call__(self, messages: list[BaseMessage]) -> int:
        """Tokens of a request made of ``messages`` (what ``trim_messages`` compares to ``max_tokens``)."""
        self.calls += 1
        self.messages_counted += len(messages)
        return sum(self.count_message(m) for m in messages) + self.reply_priming


class MemoizedCl100kCounter(ExactCl100kCounter):
    """The same counts, each message tokenized once: what a careful LangChain user writes.

    ``trim_messages`` calls its ``token_counter`` on many prefixes of the
    history; LangChain messages are not hashable, so the memo is keyed by the
    object's identity (and holds the object, so the identity cannot be reused).
    ``tokenized`` counts the messages actually tokenized.
    """

    def __init__(self, encoding: Any) -> None:
        super().__init__(encoding)
        self._memo: dict[int, tuple[BaseMessage, int]] = {}
        self.tokenized = 0

    def __call__(self, messages: list[BaseMessage]) -> int:
        """Tokens of a request made of ``messages``, from the memo where possible."""
        self.calls += 1
        self.messages_counted += len(messages)
        memo, total = self._memo, self.reply_priming
        for m in messages:
            hit = memo.get(id(m))
            if hit is None or hit[0] is not m:
                hit = memo[id(m)] = (m, self.count_message(m))
                self.tokenized += 1
            total += hit[1]
        return total
