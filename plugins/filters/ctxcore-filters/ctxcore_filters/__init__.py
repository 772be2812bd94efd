"""Filters for ctxcore: ``max_messages`` and ``token_budget``, both unit-aware."""

from ctxcore_filters.max_messages import MaxMessages, MaxMessagesConfig
from ctxcore_filters.token_budget import TokenBudget, TokenBudgetConfig

__all__ = ["MaxMessages", "MaxMessagesConfig", "TokenBudget", "TokenBudgetConfig"]
