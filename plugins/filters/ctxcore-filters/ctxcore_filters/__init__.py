"""Filters for ctxcore: ``max_messages``, ``token_budget`` and the ``compaction`` ladder."""

from ctxcore_filters.compaction import Compaction, PlanAuditError, audit_plans
from ctxcore_filters.compaction_config import CompactionConfig
from ctxcore_filters.compaction_summarizers import ChatEndpoint, ChatSelector, ChatSummarizer, ExtractiveSummarizer, SummarizerError
from ctxcore_filters.max_messages import MaxMessages, MaxMessagesConfig
from ctxcore_filters.token_budget import TokenBudget, TokenBudgetConfig

__all__ = [
    "ChatEndpoint",
    "ChatSelector",
    "ChatSummarizer",
    "Compaction",
    "CompactionConfig",
    "ExtractiveSummarizer",
    "MaxMessages",
    "MaxMessagesConfig",
    "PlanAuditError",
    "SummarizerError",
    "TokenBudget",
    "TokenBudgetConfig",
    "audit_plans",
]
