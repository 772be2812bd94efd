"""Entry point of ctxcore-filters: registers ``max_messages``, ``token_budget`` and ``compaction``."""

from __future__ import annotations

from typing import Any

from ctxcore import hookimpl
from ctxcore_filters.compaction_config import CompactionConfig
from ctxcore_filters.max_messages import MaxMessages, MaxMessagesConfig
from ctxcore_filters.token_budget import TokenBudget, TokenBudgetConfig


def _max_messages(config: MaxMessagesConfig) -> MaxMessages:
    return MaxMessages(config.max_messages, config.pinned_roles)


def _token_budget(config: TokenBudgetConfig) -> TokenBudget:
    return TokenBudget(config.max_tokens, config.pinned_roles, config.trim_from_start, config.on_overflow)


def _compaction(config: CompactionConfig) -> Any:
    from ctxcore_filters.compaction import Compaction

    return Compaction(config)


@hookimpl
def register_filters(register: Any) -> None:
    """Offer the message-count, token-budget and compaction filters."""
    register("max_messages", _max_messages, config=MaxMessagesConfig,
             description="Pinned prefix plus the newest N messages, by whole tool-call units.")
    register("token_budget", _token_budget, config=TokenBudgetConfig,
             description="Drop whole units from the old end until the request fits the token budget.")
    register("compaction", _compaction, config=CompactionConfig,
             description="Progressive ladder (tool results, trim, summarize, consolidate) between water marks.")
