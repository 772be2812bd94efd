"""Options of the ``compaction`` filter: water marks, policy, steps, strategies.

The steps are a discriminated union on ``kind``; when a pipeline gives no
``steps``, the ``strategy`` decides them (``ladder`` by default). Every
rule that ties options together is checked here, so a wrong combination is a
``ConfigError`` at load time naming the YAML line, not a surprise mid-build.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ctxcore_filters.compaction_summarizers import ChatConfig, ExtractiveConfig

__all__ = [
    "ToolResultsStep",
    "TrimStep",
    "SummarizeStep",
    "ConsolidateStep",
    "StepConfig",
    "CompactionConfig",
    "TRIM_KINDS",
    "COMPRESS_KINDS",
    "strategy_steps",
    "DEFAULT_TRIGGER_RATIO",
    "DEFAULT_TARGET_RATIO",
    "DEFAULT_TRIM_TO_RATIO",
    "CACHE_WRITE_TRIGGER_RATIO",
    "CACHE_WRITE_TARGET_RATIO",
    "water_marks_for",
]

#: default water marks, chosen by the prompt-cache replay of bench/cache_economics.py (docs/compaction.md).
DEFAULT_TRIGGER_RATIO = 0.95
DEFAULT_TARGET_RATIO = 0.75
#: default water marks when the target bills cache writes (Anthropic with caching on): a compaction rewrites the cached
#: prefix at 1.25x the input price, reads cost 0.1x, so compacting late and deep pays each rewrite once for more reads
#: (the best pair of bench/caching_rules.py, docs/caching.md).
CACHE_WRITE_TRIGGER_RATIO = 0.95
CACHE_WRITE_TARGET_RATIO = 0.3
#: how deep the default ladder's trim goes once it has to run (below the target: trims break the cache from the front).
DEFAULT_TRIM_TO_RATIO = 0.55


class _Step(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: str
    id: str | None = Field(default=None, description="Step id for reports and selection; default: the kind.")

    @property
    def step_id(self) -> str:
        """The explicit id, or the kind."""
        return self.id or self.kind


class ToolResultsStep(_Step):
    """Stage 1: replace large old tool results with a placeholder naming the tool."""

    kind: Literal["tool_results"] = "tool_results"
    min_tokens: int = Field(default=200, ge=0, description="Results smaller than this are left alone.")
    preview_chars: int = Field(default=150, ge=0, description="Characters of the (JSON-minimised) result kept as a preview.")
    keep_last_results: int = Field(default=1, ge=0, description="Newest tool-call units whose results are never compacted.")
    spill_dir: str | None = Field(default=None, description="Write each full result to a file here; the placeholder names it.")
    scope: Literal["needed", "all"] = Field(
        default="all",
        description="needed: oldest first until the batch target is reached; all: every eligible result once the "
        "step runs (the prompt cache breaks at the first one anyway, and the next batch comes later).",
    )


class TrimStep(_Step):
    """Stage 2: drop the middle of the dynamic history behind a marker."""

    kind: Literal["trim"] = "trim"
    keep_first: int = Field(default=1, ge=0, description="Oldest dynamic units always kept (the task statement).")
    keep_last: int = Field(default=4, ge=1, description="Newest dynamic units always kept.")
    keep_last_turns: int | None = Field(
        default=None, ge=1, description="Keep the newest N user turns instead of keep_last units."
    )
    to_ratio: float | None = Field(
        default=None, gt=0, le=1,
        description="When a trim runs, trim down to this utilization instead of the batch target (a trim breaks the "
        "prompt cache from the front, so trimming deeper makes the next trims rarer).",
    )


class SummarizeStep(_Step):
    """Stage 3: replace a span of old units with one untrusted summary."""

    kind: Literal["summarize"] = "summarize"
    keep_groups: int = Field(default=1, ge=0, description="Newest user turns kept verbatim.")
    summary_tokens: int = Field(default=512, gt=0, description="Longest summary, in tokens.")


class ConsolidateStep(_Step):
    """Stage 4: merge adjacent summaries into one."""

    kind: Literal["consolidate"] = "consolidate"
    summary_tokens: int = Field(default=512, gt=0, description="Longest merged summary, in tokens.")
    boundary: Literal["summaries", "user_turn"] = Field(
        default="summaries",
        description="summaries: merge the first run of adjacent summaries; user_turn: fold the oldest history, "
        "summaries included, up to the smallest user-turn boundary that removes at least the needed tokens "
        "(nanobot's consolidation rule; the newest user turn is never folded).",
    )


StepConfig = Annotated[
    ToolResultsStep | TrimStep | SummarizeStep | ConsolidateStep, Field(discriminator="kind")
]

TRIM_KINDS = frozenset({"trim"})
COMPRESS_KINDS = frozenset({"tool_results", "summarize", "consolidate"})


def strategy_steps(strategy: str, keep_groups: int) -> list[StepConfig]:
    """The steps a named strategy stands for.

    ``ladder``: the four stages cheapest first. ``recent``: keep the newest
    ``keep_groups`` user turns verbatim and trim the rest (no model call).
    ``continuity``: summarise older turns, newest ``keep_groups`` verbatim.
    """
    if strategy == "recent":
        return [TrimStep(keep_first=0, keep_last_turns=max(keep_groups, 1))]
    if strategy == "continuity":
        return [SummarizeStep(keep_groups=keep_groups), ConsolidateStep()]
    return [ToolResultsStep(), TrimStep(to_ratio=DEFAULT_TRIM_TO_RATIO), SummarizeStep(), ConsolidateStep()]


class CompactionConfig(BaseModel):
    """Options of the ``compaction`` filter (see docs/compaction.md)."""

    model_config = ConfigDict(extra="forbid")

    max_tokens: int | None = Field(default=None, ge=0, description="Input-token budget; default: the pipeline's model budget.")
    trigger_ratio: float = Field(default=DEFAULT_TRIGGER_RATIO, gt=0, le=1, description="Start reducing above this utilization.")
    target_ratio: float = Field(default=DEFAULT_TARGET_RATIO, gt=0, le=1, description="Reduce down to this utilization.")
    mode: Literal["validate", "reduce", "audit"] = Field(default="reduce", description="validate: never reduce; audit: check plans.")
    selection: Literal["sequence", "fixed", "auto", "model"] = Field(default="sequence", description="How steps are chosen.")
    fixed: Literal["trim", "compress"] | None = Field(default=None, description="With selection: fixed, the only kind of step run.")
    max_trim_loss_ratio: float = Field(default=0.25, ge=0, le=1, description="auto/model: most of the dynamic history trims may remove.")
    strategy: Literal["ladder", "recent", "continuity"] | None = Field(default=None, description="Ready-made steps (default ladder).")
    keep_groups: int = Field(default=1, ge=0, description="Newest user turns kept verbatim by the recent/continuity strategies.")
    steps: list[StepConfig] | None = Field(default=None, description="Explicit steps, in sequence order.")
    summarizer: Annotated[ExtractiveConfig | ChatConfig, Field(discriminator="type")] = Field(
        default_factory=ExtractiveConfig, description="Summarizer for summarize and consolidate steps."
    )
    selector: ChatConfig | None = Field(default=None, description="Model that picks steps for selection: model.")
    on_overflow: Literal["raise", "warn"] = Field(default="raise", description="Still over budget after every step.")
    on_error: Literal["warn", "raise"] = Field(default="warn", description="A summarizer or selector failed.")
    mutable_sources: list[str] | None = Field(default=None, description="audit: sources allowed to change (default: any dynamic).")
    mutable_ids: list[str] | None = Field(
        default=None, description="audit: ids of the original messages allowed to change (runtime['mutable_ids'] wins).")
    max_model_calls: int | None = Field(
        default=None, ge=0,
        description="Model calls the run has left, the final answer included (runtime['model_calls_left'] wins); "
        "compaction's selector and summarizers share what is left after reserve_calls. Default: no shared limit.",
    )
    reserve_calls: int = Field(default=1, ge=1, description="Model calls kept back for the final answer (at least 1).")
    timeout: float | None = Field(
        default=None, gt=0,
        description="Seconds the reductions of one build may take (combined with runtime['deadline'] and "
        "runtime['cancel']); a result arriving later is discarded, never committed.",
    )

    @model_validator(mode="after")
    def _consistent(self) -> CompactionConfig:
        if self.target_ratio > self.trigger_ratio:
            raise ValueError(f"target_ratio ({self.target_ratio}) must not exceed trigger_ratio ({self.trigger_ratio})")
        if self.selection == "fixed" and self.fixed is None:
            raise ValueError("selection: fixed needs fixed: trim or fixed: compress")
        if self.fixed is not None and self.selection != "fixed":
            raise ValueError("fixed is only used with selection: fixed")
        if self.steps is not None and self.strategy is not None:
            raise ValueError("give either steps or strategy, not both")
        ids = [s.step_id for s in self.resolved_steps()]
        duplicates = sorted({i for i in ids if ids.count(i) > 1})
        if duplicates:
            raise ValueError(f"step ids must be unique; repeated: {', '.join(duplicates)} (set 'id' on each)")
        return self

    def resolved_steps(self) -> list[StepConfig]:
        """The explicit steps, or the strategy's."""
        if self.steps is not None:
            return list(self.steps)
        return strategy_steps(self.strategy or "ladder", self.keep_groups)


def water_marks_for(config: CompactionConfig, bills_cache_writes: bool) -> CompactionConfig:
    """``config`` with the water marks that suit the target's cache pricing, where the pipeline sets none.

    With ``bills_cache_writes`` (see ``TargetSpec.bills_cache_writes``) an unset
    ``trigger_ratio`` / ``target_ratio`` takes :data:`CACHE_WRITE_TRIGGER_RATIO` /
    :data:`CACHE_WRITE_TARGET_RATIO`; a ratio the pipeline gives always wins.
    """
    given = config.model_fields_set
    if not bills_cache_writes or {"trigger_ratio", "target_ratio"} <= given:
        return config
    trigger = config.trigger_ratio if "trigger_ratio" in given else CACHE_WRITE_TRIGGER_RATIO
    target = config.target_ratio if "target_ratio" in given else CACHE_WRITE_TARGET_RATIO
    return config.model_copy(update={"trigger_ratio": trigger, "target_ratio": target})
