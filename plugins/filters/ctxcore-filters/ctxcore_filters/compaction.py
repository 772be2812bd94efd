"""``compaction``: a progressive ladder that shrinks the request when pressure is high.

Pressure is the utilization of the budget. Below ``trigger_ratio`` nothing
changes; above it, steps run until utilization is down to ``target_ratio``:
tool results compacted, the middle of the history trimmed, old turns
summarised, summaries consolidated — cheapest first, each only as far as
needed, each at most once per build (see docs/compaction.md).

Reductions are remembered (by the ids of the messages they replace) and
replayed on the next build, so the request prefix stays byte-identical from
turn to turn until the next batch of reductions: provider prompt caches keep
hitting. Every reduction is recorded in the report with tokens before and after.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import structlog

from ctxcore import BudgetExceeded, CtxError, FilterContext, Message
from ctxcore_filters.compaction_config import (
    COMPRESS_KINDS,
    TRIM_KINDS,
    CompactionConfig,
)
from ctxcore_filters.compaction_stages import (
    META,
    Env,
    Proposal,
    Stage,
    Work,
    make_stage,
    raw_ids,
    stage_of,
)
from ctxcore_filters.compaction_summarizers import make_selector, make_summarizer

__all__ = ["Compaction", "CompactionCancelled", "CompactionTimeout", "PlanAuditError", "audit_plans"]

log = structlog.get_logger("ctxcore_filters.compaction")

# Cheapest first when ``selection: auto`` compares candidates with the same model cost.
_RANK = {"tool_results": 0, "trim": 1, "summarize": 2, "consolidate": 3}


class PlanAuditError(CtxError):
    """``mode: audit`` found a change outside the declared mutable parts."""


class CompactionTimeout(CtxError):
    """The reductions passed ``timeout`` (or ``runtime['deadline']``) with ``on_error: raise``; nothing late was kept."""


class CompactionCancelled(CtxError):
    """The caller cancelled the build (``runtime['cancel']`` was set) while compaction ran; nothing late was kept."""


class _Expired(Exception):
    """Internal: the deadline passed while a step ran."""


class _Clock:
    """The deadline and the caller's cancellation of one batch of reductions.

    Without either, steps run inline (no thread). With one, each step that may
    call a model runs in a daemon thread and the build waits at most until the
    deadline (checking ``cancel`` every 50 ms); a step still running then is
    abandoned and its result, whenever it comes, is dropped.
    """

    def __init__(self, timeout: float | None, runtime: Mapping[str, Any]) -> None:
        deadline = runtime.get("deadline")
        if deadline is not None and not isinstance(deadline, (int, float)):
            raise ValueError(f"runtime['deadline'] must be a time.monotonic() value, got {type(deadline).__name__}")
        cancel = runtime.get("cancel")
        if cancel is not None and not callable(getattr(cancel, "is_set", None)):
            raise ValueError("runtime['cancel'] must have is_set() (a threading.Event)")
        ends = [t for t in (None if timeout is None else time.monotonic() + timeout, deadline) if t is not None]
        self.deadline: float | None = min(ends) if ends else None
        self.cancel = cancel
        self.timeout = timeout

    @property
    def active(self) -> bool:
        return self.deadline is not None or self.cancel is not None

    def check(self) -> None:
        """Raise when cancelled; :class:`_Expired` when the deadline has passed."""
        if self.cancel is not None and self.cancel.is_set():
            raise CompactionCancelled("the build was cancelled (runtime['cancel']) while compaction ran")
        if self.deadline is not None and time.monotonic() >= self.deadline:
            raise _Expired

    def call(self, fn: Callable[[], Any]) -> Any:
        """``fn()``, or :class:`_Expired` / :class:`CompactionCancelled` if it does not return in time."""
        if not self.active:
            return fn()
        self.check()
        box: dict[str, Any] = {}
        done = threading.Event()

        def work() -> None:
            try:
                box["value"] = fn()
            except BaseException as exc:  # handed to the waiting build below
                box["error"] = exc
            finally:
                done.set()

        threading.Thread(target=work, daemon=True, name="ctxcore-compaction-step").start()
        while True:
            wait = None if self.deadline is None else max(self.deadline - time.monotonic(), 0.0)
            if self.cancel is not None:
                wait = 0.05 if wait is None else min(wait, 0.05)
            if done.wait(wait):
                break
            self.check()
        if self.cancel is not None and self.cancel.is_set():
            raise CompactionCancelled("the build was cancelled (runtime['cancel']) while compaction ran")
        if "error" in box:
            raise box["error"]
        return box["value"]


@dataclass(frozen=True)
class _Decision:
    raw_ids: tuple[str, ...]
    message: Message


class _Memo:
    """Reductions of earlier builds, keyed by the first original id they replace (LRU-bounded)."""

    def __init__(self, max_entries: int = 4096) -> None:
        self._by_first: OrderedDict[str, _Decision] = OrderedDict()
        self.max_entries = max_entries
        self._lock = threading.Lock()

    def replay(self, messages: list[Message], work: Work, count: Callable[[Message], int]) -> None:
        """Fill ``work`` with ``messages``, earlier reductions applied where their originals still are."""
        i, n = 0, len(messages)
        ids = [m.id for m in messages]
        while i < n:
            d = self._by_first.get(ids[i]) if self._by_first else None
            k = len(d.raw_ids) if d is not None else 0
            if d is not None and tuple(ids[i:i + k]) == d.raw_ids:
                work.messages.append(d.message)
                work.tokens.append(count(d.message))
                work.covers.append(d.raw_ids)
                i += k
                continue
            work.messages.append(messages[i])
            work.tokens.append(count(messages[i]))
            work.covers.append((ids[i],))
            i += 1

    def remember(self, messages: Sequence[Message]) -> None:
        """Keep every reduction in ``messages`` (newer ones replace the ones they contain)."""
        with self._lock:
            for m in messages:
                if stage_of(m) is None:
                    continue
                ids = raw_ids(m)
                for i in ids[1:]:
                    self._by_first.pop(i, None)
                self._by_first[ids[0]] = _Decision(ids, m)
                self._by_first.move_to_end(ids[0])
            while len(self._by_first) > self.max_entries:
                self._by_first.popitem(last=False)


def audit_plans(before: Sequence[Message], after: Sequence[Message], mutable_sources: Sequence[str] | None = None,
                mutable_ids: Sequence[str] | None = None) -> list[str]:
    """Problems found comparing two plans: anything outside the mutable parts that changed.

    Protected messages, dynamic messages whose source is not in
    ``mutable_sources`` (when given) and messages of ``before`` whose id is not
    in ``mutable_ids`` (when given; the ContextPlan design's
    ``mutableFragmentIds``) must appear in ``after`` unchanged and in the same
    order as in ``before``. A message new in ``after`` is fixed unless a rule
    allows its source. Returns an empty list when the plans agree.
    """
    mutable = set(mutable_sources) if mutable_sources is not None else None
    ids = set(mutable_ids) if mutable_ids is not None else None
    before_ids = {m.id for m in before} if ids is not None else set()

    def fixed(m: Message) -> bool:
        if m.zone == "protected" or (mutable is not None and m.source not in mutable):
            return True
        return ids is not None and m.id in before_ids and m.id not in ids

    old = [(m.source, m.role, m.fingerprint) for m in before if fixed(m)]
    new = [(m.source, m.role, m.fingerprint) for m in after if fixed(m)]
    problems = []
    for k, (a, b) in enumerate(zip(old, new, strict=False)):
        if a != b:
            problems.append(f"fixed message {k} (source {a[0]!r}, role {a[1]}) changed or moved")
            break
    if len(old) != len(new):
        problems.append(f"{len(old)} fixed messages before, {len(new)} after")
    return problems


class Compaction:
    """The ``compaction`` filter. See the module docstring and docs/compaction.md.

    Args:
        config: the options (a :class:`CompactionConfig`); keyword options may be
            given instead, e.g. ``Compaction(trigger_ratio=0.9)``.
        summarizer: any object with ``summarize(messages, target_tokens)`` and
            ``max_calls`` (overrides ``config.summarizer``), or a config dict.
        selector: for ``selection: model``: an object with ``select(candidates,
            pressure) -> list of step ids`` and ``max_calls``, a plain callable,
            or a config dict.
    """

    def __init__(self, config: CompactionConfig | None = None, *, summarizer: Any = None, selector: Any = None, **options: Any) -> None:
        for key, value in (("summarizer", summarizer), ("selector", selector)):
            if isinstance(value, Mapping):  # a config, as in YAML
                options[key] = value
        summarizer = None if isinstance(summarizer, Mapping) else summarizer
        selector = None if isinstance(selector, Mapping) else selector
        if config is None:
            config = CompactionConfig(**options)
        elif options:
            raise TypeError("give either a config or keyword options, not both")
        self.config = config
        self.summarizer = summarizer if summarizer is not None else make_summarizer(config.summarizer)
        if selector is None and config.selector is not None:
            selector = make_selector(config.selector)
        if config.selection == "model" and selector is None:
            raise ValueError("selection: model needs a selector (selector: {type: openai_chat, ...})")
        self.selector = selector
        self.stages: list[Stage] = [make_stage(s, self.summarizer) for s in config.resolved_steps()]
        self._memo = _Memo()
        self._plans: dict[str, list[Message]] = {}

    # ------------------------------------------------------------------ apply
    def apply(self, messages: Sequence[Message], ctx: FilterContext) -> list[Message]:
        """Return the messages, reduced when utilization passed ``trigger_ratio``.

        Raises:
            BudgetExceeded: over budget after every allowed step (``on_overflow:
                raise``), or over budget at all in ``validate`` and ``audit`` modes.
            PlanAuditError: ``audit`` found a change outside the mutable parts.
        """
        budget = self.config.max_tokens if self.config.max_tokens is not None else ctx.budget
        if budget is None:
            raise ValueError("no token budget: set max_tokens or the pipeline's model.context_window")
        messages = list(messages)
        if self.config.mode != "reduce":
            return self._check_only(messages, budget, ctx)
        work = Work([], [], [], ctx.counter.priming)
        self._memo.replay(messages, work, ctx.counter.count_message)
        if work.total > self.config.trigger_ratio * budget:
            self._reduce(work, budget, ctx)
            self._memo.remember(work.messages)
        if work.total > budget:
            self._overflow(work, budget, ctx)
        self._record(messages, work, ctx)
        return work.messages

    def _check_only(self, messages: list[Message], budget: int, ctx: FilterContext) -> list[Message]:
        if self.config.mode == "audit":
            key = str(ctx.runtime.get("thread_id", ""))
            original = ctx.runtime.get("audit_original")  # trusted originals given by the caller win
            if original is not None and not all(isinstance(m, Message) for m in original):
                raise ValueError("runtime['audit_original'] must be a list of Messages (the trusted original plan)")
            previous = list(original) if original is not None else self._plans.get(key)
            self._plans[key] = messages
            mutable_ids = ctx.runtime.get("mutable_ids", self.config.mutable_ids)
            problems = (audit_plans(previous, messages, self.config.mutable_sources, mutable_ids)
                        if previous is not None else [])
            if problems:
                raise PlanAuditError(
                    f"filter '{ctx.step_id}': plans differ outside the mutable parts: {'; '.join(problems)} "
                    "(declare the source in mutable_sources, or the message id in mutable_ids, if it may change)"
                )
        total = ctx.counter.count_messages(messages)
        if total > budget:
            raise BudgetExceeded(
                f"the request needs {total} tokens but the budget is {budget} (filter '{ctx.step_id}', "
                f"mode: {self.config.mode} never reduces); use mode: reduce or raise model.context_window",
                budget=budget, required=total, report=ctx.report,
            )
        return messages

    # ----------------------------------------------------------------- reduce
    def _reduce(self, work: Work, budget: int, ctx: FilterContext) -> None:
        target = int(self.config.target_ratio * budget)
        dynamic = sum(t for m, t in zip(work.messages, work.tokens, strict=True) if m.zone == "dynamic")
        run = _Run(self, work, target, ctx, int(self.config.max_trim_loss_ratio * dynamic), budget)
        try:
            self._select_and_run(run)
        except _Expired:
            message = (f"reductions stopped at the deadline ({self.config.timeout}s timeout or runtime['deadline']); "
                       "the running step's result was discarded and later steps did not run")
            if self.config.on_error == "raise":
                raise CompactionTimeout(f"compaction '{ctx.step_id}': {message}") from None
            run._warn(message)
        if run.calls and ctx.report is not None:
            ctx.report.notes.append(f"compaction '{ctx.step_id}': {run.calls} model call(s) spent"
                                    + (f" of {run.pool} available (reserve_calls {self.config.reserve_calls} kept back)"
                                       if run.pool is not None else ""))

    def _select_and_run(self, run: _Run) -> None:
        selection = self.config.selection
        if selection == "model":
            picked = run.ask_selector(self.selector)
            if picked is None:
                selection = "auto"
            else:
                for stage in picked:
                    run.step(stage, capped=True)
        if selection == "auto":
            run.auto()
        elif selection in ("sequence", "fixed"):
            kinds = {"trim": TRIM_KINDS, "compress": COMPRESS_KINDS}.get(self.config.fixed or "", None)
            for stage in self.stages:
                if kinds is None or stage.kind in kinds:
                    run.step(stage, capped=False)

    def _overflow(self, work: Work, budget: int, ctx: FilterContext) -> None:
        protected = sum(t for m, t in zip(work.messages, work.tokens, strict=True) if m.zone == "protected") + work.priming
        message = (
            f"the request needs {work.total} tokens after compaction but the budget is {budget} "
            f"(filter '{ctx.step_id}'; protected content alone: {protected}); "
            "shorten the protected prompt or the current turn, allow more steps, or raise model.context_window"
        )
        if self.config.on_overflow == "raise":
            raise BudgetExceeded(message, budget=budget, required=work.total, report=ctx.report)
        log.warning("over_budget", filter=ctx.step_id, required=work.total, budget=budget)
        if ctx.report is not None:
            ctx.report.warnings.append(message + " (on_overflow: warn — sent over budget)")

    def _record(self, messages: list[Message], work: Work, ctx: FilterContext) -> None:
        if ctx.report is None:
            return
        count = ctx.counter.count_message
        given: dict[str, Message] | None = None
        for m, tokens, covers in zip(work.messages, work.tokens, work.covers, strict=True):
            if META not in m.metadata:
                continue
            if given is None:
                given = {g.id: g for g in messages}
            if m.id in given:
                continue  # an earlier filter (or build) made it: not this build's reduction
            before = sum(count(given[i]) for i in covers)
            ctx.report.record_compression(ctx.step_id, covers, m, before, tokens, str(stage_of(m)))


def _call_pool(max_model_calls: int | None, reserve: int, runtime: Mapping[str, Any]) -> int | None:
    """Model calls compaction may spend this build: what the run has left minus the reserve; ``None``: no shared limit."""
    left = runtime.get("model_calls_left", max_model_calls)
    if left is None:
        return None
    if isinstance(left, bool) or not isinstance(left, int) or left < 0:
        raise ValueError(f"runtime['model_calls_left'] must be a whole number >= 0, got {left!r}")
    return max(left - reserve, 0)


class _Run:
    """One batch of reductions: the work, the target and what has been spent."""

    def __init__(self, owner: Compaction, work: Work, target: int, ctx: FilterContext, trim_cap: int, budget: int) -> None:
        self.owner, self.work, self.target, self.ctx = owner, work, target, ctx
        self.budget = budget
        self.trim_left = trim_cap
        self.calls = 0
        self.done: set[str] = set()
        self.pool = _call_pool(owner.config.max_model_calls, owner.config.reserve_calls, ctx.runtime)
        self.clock = _Clock(owner.config.timeout, ctx.runtime)

    @property
    def need(self) -> int:
        return self.work.total - self.target

    def env(self, capped: bool) -> Env:
        return Env(self.ctx.counter, max_trim_tokens=max(self.trim_left, 0) if capped else None)

    def affordable(self, stage: Stage) -> bool:
        """Whether the summarizer's ``max_calls`` and the shared pool (after the reserve) cover the step."""
        if stage.model_calls == 0:
            return True
        limit = getattr(self.owner.summarizer, "max_calls", 0)
        if self.pool is not None:
            limit = min(limit, self.pool)
        return self.calls + stage.model_calls <= limit

    def _unaffordable(self, stage: Stage) -> str:
        if self.pool is not None and self.calls + stage.model_calls > self.pool:
            return (f"step '{stage.step_id}' skipped: the run's model calls are spent ({self.pool} available after "
                    f"reserve_calls {self.owner.config.reserve_calls})")
        return f"step '{stage.step_id}' skipped: the summarizer's max_calls ({self.owner.summarizer.max_calls}) is spent"

    def step(self, stage: Stage, *, capped: bool) -> None:
        """Run ``stage`` once if still above target (skipped with a warning when it cannot be afforded)."""
        if stage.step_id in self.done or self.need <= 0:
            return
        self.done.add(stage.step_id)
        if not self.affordable(stage):
            self._warn(self._unaffordable(stage))
            return
        self.calls += stage.model_calls  # counted before the call: a failed call is not refunded
        need = self.need
        to_ratio = getattr(getattr(stage, "config", None), "to_ratio", None)
        if to_ratio is not None:  # a trim that goes deeper than the batch target (never shallower)
            need = max(need, self.work.total - int(to_ratio * self.budget))
        env = self.env(capped)
        try:
            if stage.model_calls:
                proposal = self.clock.call(lambda: stage.run(self.work, need, env))
            else:
                self.clock.check()
                proposal = stage.run(self.work, need, env)
        except (_Expired, CompactionCancelled):
            raise
        except Exception as exc:
            if self.owner.config.on_error == "raise" or isinstance(exc, BudgetExceeded):
                raise
            self._warn(f"step '{stage.step_id}' failed and was skipped: {type(exc).__name__}: {exc}")
            return
        self.commit(proposal)

    def commit(self, proposal: Proposal) -> None:
        """Write spill files, then apply the replacements."""
        for r in proposal.replacements:
            if r.spill is not None:
                path, text = r.spill
                path.parent.mkdir(parents=True, exist_ok=True)
                if not path.exists():
                    tmp = path.with_suffix(path.suffix + ".tmp")
                    tmp.write_text(text, encoding="utf-8")
                    tmp.replace(path)
        if proposal.replacements:
            self.work.replace_all(proposal.replacements)
        self.trim_left -= proposal.trimmed

    def auto(self) -> None:
        """Rehearse every remaining step; run the cheapest safe one; repeat while above target."""
        stages = self.owner.stages
        while self.need > 0:
            best: tuple[tuple[int, int, int], Stage] | None = None
            for order, stage in enumerate(stages):
                if stage.step_id in self.done or not self.affordable(stage):
                    continue
                p = stage.rehearse(self.work, self.need, self.env(capped=True))
                if p.saved > 0:
                    key = (stage.model_calls, _RANK.get(stage.kind, 9), order)
                    if best is None or key < best[0]:
                        best = (key, stage)
            if best is None:
                return
            self.step(best[1], capped=True)

    def ask_selector(self, selector: Any) -> list[Stage] | None:
        """The steps a model-backed selector picked (known ids only), or ``None`` when it failed."""
        candidates = []
        for stage in self.owner.stages:
            p = stage.rehearse(self.work, self.need, self.env(capped=True))
            candidates.append({"id": stage.step_id, "kind": stage.kind, "saves_tokens": p.saved,
                               "model_calls": stage.model_calls, "safe": p.saved > 0})
        budget = self.owner.config.max_tokens or self.ctx.budget or 1
        pressure = {"tokens": self.work.total, "budget": budget, "target": self.target,
                    "utilization": round(self.work.total / budget, 3)}
        selector_calls = getattr(selector, "max_calls", 1)
        if selector_calls < 1:
            self._warn("selector has max_calls 0, falling back to selection: auto")
            return None
        if self.pool is not None and self.calls + selector_calls > self.pool:
            self._warn(f"selector skipped: it may make {selector_calls} model call(s) and {self.pool - self.calls} are "
                       f"available after reserve_calls {self.owner.config.reserve_calls}; falling back to selection: auto")
            return None
        self.calls += selector_calls
        select = selector.select if hasattr(selector, "select") else selector
        try:
            ids = list(self.clock.call(lambda: select(candidates, pressure)))
        except (_Expired, CompactionCancelled):
            raise
        except Exception as exc:
            if self.owner.config.on_error == "raise":
                raise
            self._warn(f"selector failed, falling back to selection: auto: {type(exc).__name__}: {exc}")
            return None
        by_id = {s.step_id: s for s in self.owner.stages}
        unknown = [i for i in ids if i not in by_id]
        if unknown:
            self._warn(f"selector named unknown steps {unknown}; a selector can only pick configured steps")
        picked: list[Stage] = []
        for i in ids:
            if i in by_id and by_id[i] not in picked:
                picked.append(by_id[i])
        return picked

    def _warn(self, message: str) -> None:
        message = f"compaction '{self.ctx.step_id}': {message}"
        log.warning("compaction_step", message=message)
        if self.ctx.report is not None:
            self.ctx.report.warnings.append(message)
