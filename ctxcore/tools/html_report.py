"""A build report as one self-contained HTML page (``ctx report --html``).

:func:`report_payload` turns a build into a JSON-ready dict: everything
``ctx explain --json`` prints (from :mod:`ctxcore.tools.explain`), the whole
:meth:`BuildReport.to_dict`, plus what the page draws — the budget bar
(tokens per category and source), the history as units with their fate, and
the decisions with the step that made each. Credentials in text fields
(previews, decisions) are redacted with :mod:`ctxcore.redaction`, because a
page is made to be shared. :func:`render_html` embeds that dict in a page whose inline script draws it with DOM text nodes only, so
message text (untrusted) can never become markup or script.
"""

from __future__ import annotations

import html
import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ctxcore.engine.budget import ModelBudget
from ctxcore.engine.builder import BuiltContext
from ctxcore.engine.report import BuildReport, MessageRecord
from ctxcore.model.messages import Message
from ctxcore.model.transactions import group_units
from ctxcore.redaction import redact_text
from ctxcore.tools._report_page import PAGE
from ctxcore.tools.explain import decision_items, explain_payload
from ctxcore.tools.message_text import message_text, messages_by_id

if TYPE_CHECKING:  # pragma: no cover
    from ctxcore.pipeline.spec import Pipeline

__all__ = ["CATEGORIES", "category_of", "pipeline_context", "render_html", "report_payload"]

#: Budget-bar categories in drawing order, with their labels.
CATEGORIES: dict[str, str] = {
    "prompt": "protected prompt",
    "tools": "tool schemas",
    "memory": "memory",
    "history": "history",
    "framing": "request framing",
    "reserved": "reserved output",
    "free": "free",
}
# Fates ordered by how much they say about a unit: one compressed message makes the unit "compressed".
_UNIT_FATE = ("compressed", "dropped", "added", "kept")


def pipeline_context(pipeline: Pipeline) -> tuple[ModelBudget, dict[str, str]]:
    """The pipeline's model budget and a map from provider step id (a message's ``source``) to provider type."""
    kinds = {step.id or step.type: step.type for step in pipeline.spec.providers}
    return pipeline.budget, kinds


def category_of(record: MessageRecord, source_kinds: Mapping[str, str] | None = None) -> str:
    """The budget-bar category of a message: ``memory`` for memory providers, ``prompt`` when protected, else ``history``."""
    kind = (source_kinds or {}).get(record.source or "", record.source or "")
    if "memory" in kind:
        return "memory"
    return "prompt" if record.zone == "protected" else "history"


def _bar(report: BuildReport, model: ModelBudget | None, source_kinds: Mapping[str, str] | None) -> list[dict[str, Any]]:
    """Segments of the budget bar: sent tokens per (category, source), then framing, reserve and free space."""
    sent: Counter[tuple[str, str, str]] = Counter()
    for r in report.kept:
        sent[(category_of(r, source_kinds), r.source or "", r.zone)] += r.tokens or 0
    order = list(CATEGORIES)
    segments: list[dict[str, Any]] = [
        {"category": c, "source": s, "zone": z, "tokens": t}
        for (c, s, z), t in sorted(sent.items(), key=lambda kv: (order.index(kv[0][0]), kv[0][1]))
    ]
    if report.tool_tokens:
        segments.insert(sum(1 for s in segments if s["category"] == "prompt"),
                        {"category": "tools", "source": "tools", "zone": "protected", "tokens": report.tool_tokens})
    framing = report.total_tokens - sum(s["tokens"] for s in segments)
    if framing > 0:
        segments.append({"category": "framing", "source": "", "zone": "", "tokens": framing})
    if report.budget is not None:
        segments.append({"category": "free", "source": "", "zone": "", "tokens": max(report.budget - report.total_tokens, 0)})
    if model is not None and model.reserve_output_tokens + model.safety_margin:
        segments.append({"category": "reserved", "source": "", "zone": "",
                         "tokens": model.reserve_output_tokens + model.safety_margin})
    return segments


def _unit(records: Sequence[MessageRecord]) -> dict[str, Any]:
    """One history unit: its fate (the most telling of its messages'), who decided it, its tokens in and out."""
    fates = {str(r.fate) for r in records}
    fate = next(f for f in _UNIT_FATE if f in fates)
    by = next((r.by for r in records if r.by and str(r.fate) == fate), None)
    originals = [r for r in records if r.fate != "added"] or list(records)
    return {
        "fate": fate, "by": by, "ids": [r.id for r in records], "roles": [r.role for r in originals],
        "tokens": sum(r.tokens or 0 for r in originals),
        "tokens_sent": sum(r.tokens or 0 for r in records if r.position is not None),
        "preview": originals[0].preview, "source": originals[0].source,
    }


def _history_units(built: BuiltContext, history: Sequence[Message] | None,
                   source_kinds: Mapping[str, str] | None) -> list[dict[str, Any]]:
    """The history as units (a tool call with its results is one unit), oldest first, with their fate.

    With ``history`` (the input messages; the build keeps their ids) the units
    are those of the input, in its order. Without it, removed units come
    first (filters remove the oldest) and then the units of the request.
    Messages a filter added (a summary, a trim marker, a backfilled result)
    follow what they replaced, or the message they came after in the request.
    """
    report = built.report
    records = [r for r in report.records if category_of(r, source_kinds) == "history"]
    by_id = {r.id: r for r in records}
    groups = [g for g in _groups(built, history, records, by_id) if g]
    home = {r.id: i for i, g in enumerate(groups) for r in g}
    if history is None:
        _place_replaced(groups, records, home)
    after: dict[int, list[list[MessageRecord]]] = {}
    _place_compressions(report.compressions, groups, by_id, home, after)
    _place_added(records, groups, home, after)
    ordered = [[r] for r in records if r.id not in home]  # removed, but not part of any input unit: oldest
    ordered.extend(after.get(-1, []))
    for i, g in enumerate(groups):
        ordered.append(g)
        ordered.extend(after.get(i, []))
    return [_unit(g) for g in ordered]


def _groups(built: BuiltContext, history: Sequence[Message] | None, records: list[MessageRecord],
            by_id: dict[str, MessageRecord]) -> list[list[MessageRecord]]:
    """The records grouped by the input's units, or (no input) removed units first, then the request's units."""
    if history is not None:
        return [[by_id[m.id] for m in u.slice(history) if m.id in by_id] for u in group_units(history)]
    groups: list[list[MessageRecord]] = []
    sent_ids = {r.id for r in records if r.position is not None}
    for r in records:  # removed units; an original whose replacement was sent joins that unit below
        if r.position is None and r.into not in sent_ids:
            if r.unit_start or not groups:
                groups.append([r])
            else:
                groups[-1].append(r)
    sent = list(built.messages)
    groups.extend([by_id[m.id] for m in u.slice(sent) if m.id in by_id] for u in group_units(sent))
    return groups


def _place_replaced(groups: list[list[MessageRecord]], records: list[MessageRecord], home: dict[str, int]) -> None:
    """Put each original whose replacement was sent just before it (one pass, not one insert each)."""
    before: dict[str, list[MessageRecord]] = {}
    for r in records:
        if r.id not in home and r.into in home:
            before.setdefault(str(r.into), []).append(r)
            home[r.id] = home[str(r.into)]

    def expand(r: MessageRecord) -> list[MessageRecord]:
        return [x for b in before.get(r.id, ()) for x in expand(b)] + [r]

    for gi in {home[i] for i in before}:
        groups[gi] = [x for r in groups[gi] for x in expand(r)]


def _place_compressions(compressions: Sequence[Any], groups: list[list[MessageRecord]],
                        by_id: dict[str, MessageRecord], home: dict[str, int],
                        after: dict[int, list[list[MessageRecord]]]) -> None:
    """Put a replacement after the last unit it replaced (a compacted tool result stays in its call's unit)."""
    for c in compressions:
        if c.new_id not in by_id or c.new_id in home:
            continue
        last = max((home[i] for i in c.original_ids if i in home), default=None)
        if last is None:
            continue
        if by_id[c.new_id].role == "tool":
            groups[last].append(by_id[c.new_id])
        else:
            after.setdefault(last, []).append([by_id[c.new_id]])
        home[c.new_id] = last


def _place_added(records: list[MessageRecord], groups: list[list[MessageRecord]], home: dict[str, int],
                 after: dict[int, list[list[MessageRecord]]]) -> None:
    """Put each sent message a filter added after the message it came after in the request."""
    previous = -1
    for r in sorted((r for r in records if r.position is not None), key=lambda r: r.position or 0):
        if r.id in home:
            previous = home[r.id]
        elif r.role == "tool" and previous >= 0:
            groups[previous].append(r)
            home[r.id] = previous
        else:
            after.setdefault(previous, []).append([r])
            home[r.id] = previous


def report_payload(
    built: BuiltContext,
    *,
    model: ModelBudget | None = None,
    source_kinds: Mapping[str, str] | None = None,
    history: Sequence[Message] | None = None,
    inputs: Sequence[Message] | None = None,
    title: str = "ctx report",
    over_budget: Mapping[str, Any] | None = None,
    diff: Mapping[str, Any] | None = None,
    texts: bool = True,
) -> dict[str, Any]:
    """Everything ``ctx report --json`` prints: a superset of ``ctx explain --json`` and ``BuildReport.to_dict()``.

    Each message carries its full ``text`` (``None`` when no message of the
    build, ``history`` or ``inputs`` has its id); a replacement carries
    ``replaces``, ``tokens_before`` and ``tokens_after`` of its compression.

    Args:
        built: the build to show.
        model: the model budget, for the reserved-output part of the bar.
        source_kinds: provider step id -> provider type, to tell memory from history.
        history: the input conversation, to draw the history in its order.
        inputs: more messages to find the text of removed messages in (what the providers returned).
        title: the page title.
        over_budget: the shortfall section of a build that raised ``BudgetExceeded``
            (:func:`ctxcore.tools.over_budget.over_budget_report` fills it).
        diff: a :func:`ctxcore.tools.diff.diff_builds` result, shown as a section.
        texts: put each message's ``text`` in (the replay page keeps one table of
            texts for all its calls instead, and sets ``text`` to ``None`` here).
    """
    report = built.report
    bar = _bar(report, model, source_kinds)
    categories = {c: 0 for c in CATEGORIES}
    for segment in bar:
        categories[segment["category"]] += segment["tokens"]
    units = _history_units(built, history, source_kinds)
    records = report.records
    base = _report_dict(report)
    _add_texts(base["messages"], report, messages_by_id(built.messages, history, inputs) if texts else {})
    history_fates = Counter(str(r.fate) for r in records if category_of(r, source_kinds) == "history")
    unit_messages = Counter[str]()
    for u in units:
        unit_messages[u["fate"]] += len(u["ids"])
    return _redact_texts({
        **base,
        **explain_payload(report),
        "title": title,
        "model": None if model is None else {
            "context_window": model.context_window,
            "reserve_output_tokens": model.reserve_output_tokens,
            "safety_margin": model.safety_margin,
        },
        "categories": {c: {"label": CATEGORIES[c], "tokens": t} for c, t in categories.items() if t or c != "framing"},
        "bar": bar,
        "counts": {f: sum(1 for r in records if r.fate == f) for f in ("kept", "added", "compressed", "dropped")},
        "units": units,
        "unit_counts": {f: sum(1 for u in units if u["fate"] == f) for f in _UNIT_FATE},
        "unit_messages": {f: unit_messages[f] for f in _UNIT_FATE},
        "history_counts": {f: history_fates[f] for f in ("kept", "added", "compressed", "dropped")},
        "decision_items": decision_items(report),
        "over_budget": None if over_budget is None else dict(over_budget),
        "diff": None if diff is None else dict(diff),
    })


def _report_dict(report: BuildReport) -> dict[str, Any]:
    """``report.to_dict()`` with the records copied field by field (their fields are plain values).

    ``dataclasses.asdict`` deep-copies every value, which dominates a replay
    page that reports hundreds of builds; ``tests/test_report_html.py`` checks
    both give the same dict.
    """
    out = report.to_dict.__func__(_NoRecords(report))  # type: ignore[attr-defined]
    out["messages"] = [dict(vars(r)) for r in report.records]
    return out


class _NoRecords:
    """``report`` seen by :meth:`BuildReport.to_dict` with an empty ``records`` list (filled in after)."""

    def __init__(self, report: BuildReport) -> None:
        self._report = report

    def __getattr__(self, name: str) -> Any:
        return [] if name == "records" else getattr(self._report, name)


def _add_texts(messages: list[dict[str, Any]], report: BuildReport, known: Mapping[str, Message]) -> None:
    """Put each message's full text, and each replacement's compression (what it replaced, tokens before/after), in."""
    made = {c.new_id: c for c in report.compressions}
    for item in messages:
        m = known.get(item["id"])
        item["text"] = None if m is None else message_text(m)
        c = made.get(item["id"])
        if c is not None:
            item.update(replaces=list(c.original_ids), tokens_before=c.tokens_before, tokens_after=c.tokens_after,
                        by=item["by"] or c.step_id, stage=item["stage"] or c.stage)


def _redact_texts(payload: dict[str, Any]) -> dict[str, Any]:
    """Credentials in message text removed from previews, decisions, notes and warnings: a page gets shared.

    Only the text fields go through :func:`ctxcore.redaction.redact_text`; numbers and ids stay as they are.
    """
    for item in (*payload["messages"], *payload["units"]):
        item["preview"] = redact_text(item["preview"])
    for item in payload["decision_items"]:
        item["text"] = redact_text(item["text"])
    for key in ("decisions", "notes", "warnings"):
        payload[key] = [redact_text(t) for t in payload[key]]
    return payload


def _script_json(data: Any) -> str:
    """JSON safe inside <script>: no '<', '>' or '&' can close the element or open a comment."""
    text = json.dumps(data, ensure_ascii=False, sort_keys=False)
    return (text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def render_html(built: BuiltContext, **options: Any) -> str:
    """The report of ``built`` as one HTML page: inline CSS and JS, no network; options as :func:`report_payload`."""
    payload = report_payload(built, **options)
    fill = {"TITLE": html.escape(str(payload["title"])), "DATA": _script_json(payload)}
    return re.sub(r"%%(TITLE|DATA)%%", lambda m: fill[m.group(1)], PAGE)
