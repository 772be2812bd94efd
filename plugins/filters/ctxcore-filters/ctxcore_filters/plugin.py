"""Entry point of ctxcore-filters: registers the budgeting filters and the compaction ladder."""

from __future__ import annotations

from typing import Any

from ctxcore import hookimpl
from ctxcore.kit import current_pipeline_context
from ctxcore_filters.budget_hint import BudgetHint, BudgetHintConfig
from ctxcore_filters.compaction_config import CompactionConfig, water_marks_for
from ctxcore_filters.max_messages import MaxMessages, MaxMessagesConfig
from ctxcore_filters.merge_same_role import MergeSameRole, MergeSameRoleConfig
from ctxcore_filters.offload import Offload, OffloadConfig
from ctxcore_filters.recall import Recall, RecallConfig
from ctxcore_filters.token_budget import TokenBudget, TokenBudgetConfig


def _max_messages(config: MaxMessagesConfig) -> MaxMessages:
    return MaxMessages(config.max_messages, config.pinned_roles)


def _token_budget(config: TokenBudgetConfig) -> TokenBudget:
    return TokenBudget(config.max_tokens, config.pinned_roles, config.trim_from_start, config.on_overflow)


def _compaction(config: CompactionConfig) -> Any:
    from ctxcore_filters.compaction import Compaction

    target = current_pipeline_context().target
    return Compaction(water_marks_for(config, target is not None and target.bills_cache_writes))


def _merge_same_role(config: MergeSameRoleConfig) -> MergeSameRole:
    return MergeSameRole(config.roles, config.separator)


def _offload(config: OffloadConfig) -> Offload:
    return Offload(config)


def _recall(config: RecallConfig) -> Recall:
    return Recall(config)


def _budget_hint(config: BudgetHintConfig) -> BudgetHint:
    return BudgetHint(config.max_tokens, config.role, config.template)


@hookimpl
def register_filters(register: Any) -> None:
    """Offer the message-count, token-budget, merge, budget-hint, compaction and offload filters."""
    register("max_messages", _max_messages, config=MaxMessagesConfig,
             description="Pinned prefix plus the newest N messages, by whole tool-call units.")
    register("token_budget", _token_budget, config=TokenBudgetConfig,
             description="Drop whole units, lowest priority and oldest first, until the request fits the token budget.")
    register("merge_same_role", _merge_same_role, config=MergeSameRoleConfig,
             description="Merge consecutive messages of the same role (for providers that reject them).")
    register("budget_hint", _budget_hint, config=BudgetHintConfig,
             description="Append a message telling the model its budget: total, used, remaining, pressure.")
    register("recall", _recall, config=RecallConfig,
             description="Bring back the evicted history units most relevant to the current turn, quoted, within a budget share.")
    register("compaction", _compaction, config=CompactionConfig,
             description="Progressive ladder (tool results, trim, summarize, consolidate) between water marks.")
    register("offload", _offload, config=OffloadConfig,
             description="Replace a too-big tool result with a quoted preview plus a handle context_retrieve resolves.")
