"""Filters for ctxcore: unit-aware budgets (``max_messages``, ``token_budget``), the ``compaction`` ladder, ``merge_same_role``, ``budget_hint``, ``offload``, ``recall``.

The compaction ladder (``Compaction``, ``PlanAuditError``, ``audit_plans``) is
imported on first use, as ``plugin.py``'s factory does: loading the plugin for
a pipeline without compaction never imports it.
"""

from __future__ import annotations

import importlib
from typing import Any

from ctxcore_filters.budget_hint import BudgetHint, BudgetHintConfig
from ctxcore_filters.compaction_config import CompactionConfig
from ctxcore_filters.compaction_summarizers import (
    ChatEndpoint,
    ChatSelector,
    ChatSummarizer,
    ExtractiveSummarizer,
    SummarizerError,
)
from ctxcore_filters.max_messages import MaxMessages, MaxMessagesConfig
from ctxcore_filters.merge_same_role import (
    MergeSameRole,
    MergeSameRoleConfig,
    merge_messages,
)
from ctxcore_filters.offload import Offload, OffloadConfig
from ctxcore_filters.recall import Recall, RecallConfig, RecalledUnit
from ctxcore_filters.recall_index import Embedder, RecallIndex
from ctxcore_filters.token_budget import TokenBudget, TokenBudgetConfig

__all__ = [
    "BudgetHint",
    "BudgetHintConfig",
    "ChatEndpoint",
    "ChatSelector",
    "ChatSummarizer",
    "Compaction",
    "CompactionCancelled",
    "CompactionConfig",
    "CompactionTimeout",
    "Embedder",
    "ExtractiveSummarizer",
    "MaxMessages",
    "MaxMessagesConfig",
    "MergeSameRole",
    "MergeSameRoleConfig",
    "Offload",
    "OffloadConfig",
    "PlanAuditError",
    "Recall",
    "RecallConfig",
    "RecallIndex",
    "RecalledUnit",
    "SummarizerError",
    "TokenBudget",
    "TokenBudgetConfig",
    "audit_plans",
    "merge_messages",
]

_LAZY = {"Compaction": "ctxcore_filters.compaction", "PlanAuditError": "ctxcore_filters.compaction",
         "audit_plans": "ctxcore_filters.compaction", "CompactionTimeout": "ctxcore_filters.compaction",
         "CompactionCancelled": "ctxcore_filters.compaction"}


def __getattr__(name: str) -> Any:
    """Import the compaction names on first access (PEP 562)."""
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
