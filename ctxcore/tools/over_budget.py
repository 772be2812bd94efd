"""The report of a build that raised ``BudgetExceeded``: what the providers gave, the shortfall, what would have to go.

A budget filter raises when the part it must keep (the protected prompt, the
tool schemas, the current turn) does not fit, and no request exists to draw.
:func:`inputs_build` builds the same state with the providers only (no
filters, no budget), so the report can show every message the build started
with; :func:`over_budget_section` says by how much it is over, how large the
protected part is, and which messages (largest first) would have to go for
the request to fit.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ctxcore.engine.builder import BuiltContext, ContextBuilder
from ctxcore.errors import BudgetExceeded
from ctxcore.redaction import redact_text
from ctxcore.render.target import TargetSpec

__all__ = ["inputs_build", "over_budget_section"]


def inputs_build(builder: ContextBuilder, state: Mapping[str, Any] | None, runtime: Mapping[str, Any] | None = None) -> BuiltContext:
    """``state`` built by ``builder``'s providers alone: every message the filters would have seen, counted.

    The report's ``budget`` is the builder's input budget, so the page shows
    how far over it the unfiltered request is. Providers run a second time.
    """
    target = TargetSpec(provider=builder.target.provider, legal_start=False, sanitize=builder.target.sanitize,
                        validate=False)
    plain = ContextBuilder(builder.providers, (), builder.counter, target=target, tools=builder.tools,
                           check_pairing=False, warnings=builder.warnings)
    built = plain.build(state, runtime)
    if builder.budget is not None:
        built.report.budget = builder.budget.max_input_tokens
    return built


def over_budget_section(exc: BudgetExceeded, inputs: BuiltContext) -> dict[str, Any]:
    """The shortfall section of the report: ``budget``, ``required``, ``shortfall``, ``protected_tokens``, ``would_go``.

    ``budget`` and ``required`` are the raising filter's (its budget excludes
    the tool schemas when the request has any). The protected part is the
    protected-zone messages, the tool schemas and the reply priming;
    ``would_go`` lists the protected messages, the tool schemas and the
    current turn (what a budget filter never removes) largest first, each
    with ``needed`` true while the ones before it do not cover the shortfall.
    ``uncovered`` is what is still missing when all of them go: history the
    raising filter could not remove (a compaction whose steps ran out).
    ``removed_before`` counts what filters had already removed when it raised.
    """
    report = inputs.report
    kept = report.kept
    priming = report.total_tokens - report.tool_tokens - sum(r.tokens or 0 for r in kept)
    protected = sum(r.tokens or 0 for r in kept if r.zone == "protected") + report.tool_tokens + priming
    last_user = max((i for i, r in enumerate(kept) if r.role == "user"), default=len(kept))
    candidates: list[dict[str, Any]] = [
        {"id": r.id, "role": r.role, "source": r.source, "zone": r.zone, "tokens": r.tokens or 0,
         "preview": redact_text(r.preview), "why": "protected" if r.zone == "protected" else "current turn"}
        for i, r in enumerate(kept) if r.zone == "protected" or i >= last_user
    ]
    if report.tool_tokens:
        candidates.append({"id": None, "role": "tools", "source": "tools", "zone": "protected",
                           "tokens": report.tool_tokens, "preview": "tool schemas", "why": "protected"})
    candidates.sort(key=lambda c: -c["tokens"])
    shortfall = exc.required - exc.budget
    covered = 0
    for c in candidates:
        c["needed"] = covered < shortfall
        covered += c["tokens"]
    removed = exc.report.removed_count if exc.report is not None else 0
    return {
        "message": redact_text(str(exc)),
        "budget": exc.budget,
        "required": exc.required,
        "shortfall": shortfall,
        "protected_tokens": protected,
        "would_go": candidates,
        "would_go_tokens": sum(c["tokens"] for c in candidates if c["needed"]),
        "uncovered": max(shortfall - covered, 0),
        "removed_before": removed,
    }
