"""Filters for ctxcore: unit-aware budgets (``max_messages``, ``token_budget``), the ``compaction`` ladder, ``merge_same_role``, ``budget_hint``."""

from ctxcore_filters.budget_hint import BudgetHint, BudgetHintConfig
from ctxcore_filters.compaction import Compaction, PlanAuditError, audit_plans
from ctxcore_filters.compaction_config import CompactionConfig
from ctxcore_filters.compaction_summarizers import ChatEndpoint, ChatSelector, ChatSummarizer, ExtractiveSummarizer, SummarizerError
from ctxcore_filters.max_messages import MaxMessages, MaxMessagesConfig
from ctxcore_filters.merge_same_role import MergeSameRole, MergeSameRoleConfig, merge_messages
from ctxcore_filters.token_budget import TokenBudget, TokenBudgetConfig

__all__ = [
    "BudgetHint",
    "BudgetHintConfig",
    "ChatEndpoint",
    "ChatSelector",
    "ChatSummarizer",
    "Compaction",
    "CompactionConfig",
    "ExtractiveSummarizer",
    "MaxMessages",
    "MaxMessagesConfig",
    "MergeSameRole",
    "MergeSameRoleConfig",
    "PlanAuditError",
    "SummarizerError",
    "TokenBudget",
    "TokenBudgetConfig",
    "audit_plans",
    "merge_messages",
]
