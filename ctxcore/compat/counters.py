"""The reference token counters: ``SimpleTokenCounter``, ``TiktokenTokenCounter``, ``HFTokenCounter``.

Each wraps ctxcore's own counter (``approximate`` in plain mode, ``tiktoken``,
``huggingface``), created through the registry, and counts a message the way
the reference does: the tokens of its text, at least 1, with no per-message or
reply-priming overhead (``count_messages`` is the plain sum). That is what the
reference budgets were computed with, so a ported ``TokenBudgetFilter`` keeps
the same messages. ctxcore's native counters add OpenAI's overheads; use them
(``counter: {type: tiktoken}``) for new code.

They also satisfy ctxcore's ``TokenCounter`` protocol (``name``,
``count_text``, ``count_tools``), so a compat counter can be handed to a native
``ContextBuilder`` and keeps its reference counts there.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ctxcore.compat._resolve import create
from ctxcore.model.messages import Message

__all__ = ["HFTokenCounter", "SimpleTokenCounter", "TiktokenTokenCounter"]


class _ReferenceCounter:
    """Counts a message as ``max(1, tokens of its text)``; the native counter tokenizes."""

    name: str
    _native: Any

    def count_text(self, text: str) -> int:
        """Tokens of a bare string, by the native counter."""
        return int(self._native.count_text(text))

    def count_message(self, message: Message) -> int:
        """Tokens of the message's text, at least 1 (the reference rule)."""
        return max(1, self.count_text(message.text))

    def count_messages(self, messages: Iterable[Message]) -> int:
        """Sum of :meth:`count_message` (no reply priming, as in the reference)."""
        return sum(self.count_message(m) for m in messages)

    def count_tools(self, tools: Sequence[Mapping[str, Any]]) -> int:
        """Tokens of tool definitions, by the native counter's rule (the reference does not count them)."""
        return int(self._native.count_tools(tools))


class SimpleTokenCounter(_ReferenceCounter):
    """Characters divided by ``chars_per_token`` (default 4), rounded down, at least 1 per message.

    Built on ``approximate`` with ``chars_per_token`` (plain mode). As in the
    reference, the ratio is ``max(1, int(chars_per_token))``.
    """

    def __init__(self, chars_per_token: int = 4) -> None:
        self.chars_per_token = max(1, int(chars_per_token))
        self._native = create("counter", "approximate", {"chars_per_token": self.chars_per_token},
                              for_="SimpleTokenCounter")
        self.name = f"compat-simple:{self.chars_per_token}"


class TiktokenTokenCounter(_ReferenceCounter):
    """Exact tiktoken counts of a message's text; ``encoding_name`` wins over ``model``; default ``cl100k_base``.

    Built on the ``tiktoken`` counter, which loads encodings offline only: a
    missing encoding raises ctxcore's ``EncodingUnavailable`` naming the file
    to provide (the reference raises ``RuntimeError`` and may download).
    """

    def __init__(self, *, model: str | None = None, encoding_name: str | None = None) -> None:
        options: dict[str, Any] = {"encoding": encoding_name} if encoding_name else (
            {"model": model} if model else {"encoding": "cl100k_base"})
        self._native = create("counter", "tiktoken", options, for_="TiktokenTokenCounter")
        self.name = f"compat-{self._native.name}"


class HFTokenCounter(_ReferenceCounter):
    """Counts with a HuggingFace tokenizer: a loaded ``tokenizer`` object, or ``model_name`` loaded locally.

    Built on the ``huggingface`` counter (distribution ``ctxcore-counter-hf``).
    ``model_name`` must be a local tokenizer file or directory: ctxcore never
    downloads from the hub (the reference calls ``AutoTokenizer.from_pretrained``
    with network access). Text is encoded without special tokens, as in the reference.

    Raises:
        ValueError: neither ``tokenizer`` nor ``model_name`` is given.
    """

    def __init__(self, model_name: str | None = None, *, tokenizer: Any | None = None, use_fast: bool = True) -> None:
        if tokenizer is None and not model_name:
            raise ValueError("model_name is required when tokenizer is not provided")
        self.use_fast = use_fast  # kept for signature parity; local loading picks the fast tokenizer when there is one
        options: dict[str, Any] = {"tokenizer": tokenizer} if tokenizer is not None else {"path": model_name}
        options["use_chat_template"] = False  # the reference counts text, not templated prompts
        self._native = create("counter", "huggingface", options, for_="HFTokenCounter")
        self._tokenizer = tokenizer if tokenizer is not None else self._native
        self.name = f"compat-{self._native.name}"
