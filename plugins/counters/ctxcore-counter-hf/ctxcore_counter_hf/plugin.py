"""Entry point of ctxcore-counter-hf: registers the ``huggingface`` counter."""

from __future__ import annotations

from typing import Any

from ctxcore import hookimpl
from ctxcore_counter_hf.config import HuggingFaceConfig


def _huggingface(config: HuggingFaceConfig) -> Any:
    from ctxcore_counter_hf.counter import HuggingFaceCounter

    return HuggingFaceCounter(config.path, tokenizer=config.tokenizer, chat_template=config.chat_template,
                              use_chat_template=config.use_chat_template, image_tokens=config.image_tokens)


@hookimpl
def register_token_counters(register: Any) -> None:
    """Offer the huggingface counter."""
    register("huggingface", _huggingface, config=HuggingFaceConfig,
             description="A local HuggingFace tokenizer (tokenizer.json or directory); exact chat-template counts.")
