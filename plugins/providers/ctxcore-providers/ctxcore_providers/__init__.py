"""Providers for ctxcore: ``static_prompt`` and ``history``."""

from ctxcore_providers.history import History, HistoryConfig
from ctxcore_providers.static_prompt import StaticPrompt, StaticPromptConfig

__all__ = ["History", "HistoryConfig", "StaticPrompt", "StaticPromptConfig"]
