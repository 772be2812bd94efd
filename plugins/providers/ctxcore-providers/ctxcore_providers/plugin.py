"""Entry point of ctxcore-providers: registers ``static_prompt`` and ``history``."""

from __future__ import annotations

from typing import Any

from ctxcore import hookimpl
from ctxcore_providers.history import History, HistoryConfig
from ctxcore_providers.static_prompt import StaticPrompt, StaticPromptConfig


def _static_prompt(config: StaticPromptConfig) -> StaticPrompt:
    return StaticPrompt(config.text, config.priority)


def _history(config: HistoryConfig) -> History:
    return History(config.state_key)


@hookimpl
def register_providers(register: Any) -> None:
    """Offer the static prompt and conversation history providers."""
    register("static_prompt", _static_prompt, config=StaticPromptConfig,
             description="A fixed trusted system message in the protected zone.")
    register("history", _history, config=HistoryConfig,
             description="The conversation from state['messages'] (OpenAI dicts or Messages).")
