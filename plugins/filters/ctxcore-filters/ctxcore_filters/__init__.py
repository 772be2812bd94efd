"""Filters for ctxcore: unit-aware budgets (``max_messages``, ``token_budget``), ``merge_same_role``, ``budget_hint``."""

from ctxcore_filters.budget_hint import BudgetHint, BudgetHintConfig
from ctxcore_filters.max_messages import MaxMessages, MaxMessagesConfig
from ctxcore_filters.merge_same_role import MergeSameRole, MergeSameRoleConfig, merge_messages
from ctxcore_filters.token_budget import TokenBudget, TokenBudgetConfig

__all__ = [
    "BudgetHint",
    "BudgetHintConfig",
    "MaxMessages",
    "MaxMessagesConfig",
    "MergeSameRole",
    "MergeSameRoleConfig",
    "TokenBudget",
    "TokenBudgetConfig",
    "merge_messages",
]
