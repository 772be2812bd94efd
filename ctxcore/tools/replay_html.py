"""``ctx replay --html``: a whole session as one self-contained page.

:func:`replay_page` replays a session (the replay of :mod:`ctxcore.tools.replay`,
one builder for every call) and keeps, for every call, what the page draws:

- the **timeline**: input tokens stacked by source and zone (plus tool schemas
  and request framing), cached and uncached tokens, the budget and the water
  marks (``tool_tokens + ratio * (budget - tool_tokens)``: a compaction
  filter's budget excludes the tool schemas), cost per call and cumulative,
  and the reductions that call made (stage, count, tokens saved);
- each call's **full build report** (:func:`ctxcore.tools.html_report.report_payload`)
  with the diff from the call before (:func:`ctxcore.tools.diff.diff_builds`);
- the **summary**: totals of :class:`~ctxcore.tools.replay.ReplayResult`, and the
  same session replayed through a sliding window (the pipeline's providers
  and a ``token_budget`` filter only: every call keeps the newest messages
  that fit, with no water marks) for the cost baseline.

Hundreds of reports would repeat the same messages, so the page stores each
message's text once (by id) and each call's long lists (``messages``,
``units``, ``compressions``) as a change from the call before: the common
head and tail lengths and the items between (``{"$d": [head, tail, items]}``,
the items as ``{"$k": keys, "$v": rows}``). A message's ``position`` is left
out when it is the index of a sent record (``positions`` false), so a trim
does not change every later record. The page's script (and :func:`call_report`)
rebuilds a call's report exactly.
"""

from __future__ import annotations

import html
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ctxcore.engine.budget import ModelBudget
from ctxcore.engine.builder import BuiltContext, ContextBuilder, Step
from ctxcore.tools._replay_page import REPLAY_PAGE
from ctxcore.tools.diff import diff_builds
from ctxcore.tools.html_report import _script_json, report_payload
from ctxcore.tools.message_text import message_text
from ctxcore.tools.replay import ReplayResult, builder_requests, replay_requests

__all__ = ["DELTA_KEYS", "call_report", "render_replay_html", "replay_page", "sliding_window_builder", "water_marks"]

#: The report keys a call stores as a change from the previous call's.
DELTA_KEYS = ("messages", "units", "compressions")


def water_marks(builder: ContextBuilder) -> dict[str, Any] | None:
    """The first filter with ``trigger_ratio`` and ``target_ratio`` in its config (compaction), or ``None``."""
    for step in builder.filters:
        config = getattr(step.component, "config", None)
        trigger, target = getattr(config, "trigger_ratio", None), getattr(config, "target_ratio", None)
        if isinstance(trigger, float) and isinstance(target, float):
            return {"step": step.id, "trigger_ratio": trigger, "target_ratio": target}
    return None


def sliding_window_builder(builder: ContextBuilder, token_budget: Any) -> ContextBuilder:
    """``builder``'s providers, counter, budget and target with ``token_budget`` as the only filter."""
    return ContextBuilder(builder.providers, [Step("sliding_window", token_budget)], builder.counter,
                          budget=builder.budget, target=builder.target, tools=builder.tools)


def _pack(items: list[Any]) -> Any:
    """Dicts with the same keys as ``{"$k": keys, "$v": rows, "$c": constants}``; anything else as it is.

    A key whose value is the same in every item (the ``into`` of a trimmed
    batch, a fate, a step) is stored once in ``$c``.
    """
    if items and all(isinstance(i, dict) for i in items):
        keys = list(items[0])
        if all(list(i) == keys for i in items):
            same = {k: items[0][k] for k in keys if len(items) > 1 and all(i[k] == items[0][k] for i in items)}
            varying = [k for k in keys if k not in same]
            return {"$k": varying, "$v": [[i[k] for k in varying] for i in items], "$c": same}
    return items


def _unpack(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [{**value["$c"], **dict(zip(value["$k"], row, strict=True))} for row in value["$v"]]
    return list(value)


#: Fields holding one message id, and fields holding a list of them: stored as indexes into the page's ``ids``.
_ID_FIELDS = ("id", "into", "new_id")
_ID_LISTS = ("replaces", "original_ids", "ids")
#: Keys only a replacement's record has (``report_payload`` never sets them to ``None``).
_REPLACEMENT = ("replaces", "tokens_before", "tokens_after")
#: The key order of a report's message records (``BuildReport.to_dict()``'s), restored by :func:`call_report`.
_ORDER = ("id", "role", "source", "zone", "trust", "fate", "tokens", "by", "position", "preview", "stage", "into",
          "unit_start")
#: Record fields that are the same for a message in every call (kept in the page's table of messages).
_CONSTANT = ("role", "source", "zone", "trust", "tokens", "preview")


def _unintern(item: Any, ids: Sequence[str]) -> Any:
    if not isinstance(item, dict):
        return item
    out = dict(item)
    for k in _ID_FIELDS:
        if isinstance(out.get(k), int):
            out[k] = ids[out[k]]
    for k in _ID_LISTS:
        if isinstance(out.get(k), list):
            out[k] = [ids[i] for i in out[k]]
    return out


def _without_positions(messages: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    """The records without ``position``, when it is the index of every sent record (sent ones come first).

    A trim shifts the position of every later message; without it, consecutive
    calls share long runs of equal records. ``None`` when the rule does not hold.
    """
    out = []
    for k, m in enumerate(messages):
        sent = m["fate"] in ("kept", "added")
        if m["position"] != (k if sent else None):
            return None
        out.append({key: v for key, v in m.items() if key != "position"})
    return out


def _delta(current: list[Any], previous: list[Any] | None) -> Any:
    """``current`` as ``{"$d": [head, tail, middle]}`` against ``previous`` (the common head and tail kept)."""
    if previous is None:
        return {"$d": [0, 0, _pack(current)]}
    n, m = len(current), len(previous)
    head = 0
    while head < n and head < m and current[head] == previous[head]:
        head += 1
    tail = 0
    while tail < n - head and tail < m - head and current[n - 1 - tail] == previous[m - 1 - tail]:
        tail += 1
    return {"$d": [head, tail, _pack(current[head:n - tail])]}


def _segments(built: BuiltContext) -> tuple[list[dict[str, Any]], int]:
    """Sent tokens per (source, zone) in request order of first appearance, and the framing (priming) tokens."""
    tokens: Counter[tuple[str, str]] = Counter()
    for r in built.report.kept:
        tokens[(r.source or "", r.zone)] += r.tokens or 0
    report = built.report
    framing = report.total_tokens - report.tool_tokens - sum(tokens.values())
    return [{"source": s, "zone": z, "tokens": t} for (s, z), t in tokens.items()], framing


def _reductions(built: BuiltContext, seen: set[str]) -> list[dict[str, Any]]:
    """The reductions in ``built`` that the previous call did not have: per stage, how many and tokens saved."""
    out: dict[str, dict[str, Any]] = {}
    for c in built.report.compressions:
        if c.new_id in seen:
            continue
        item = out.setdefault(c.stage, {"stage": c.stage, "step": c.step_id, "count": 0, "saved": 0})
        item["count"] += 1
        item["saved"] += c.tokens_before - c.tokens_after
    return list(out.values())


class _Recorder:
    """Turns every build of the replay into its timeline entry and its (delta-encoded) report."""

    def __init__(self, model: ModelBudget | None, source_kinds: Mapping[str, str] | None,
                 marks: Mapping[str, Any] | None, tools: Any) -> None:
        self.model, self.source_kinds, self.marks, self.tools = model, source_kinds, marks, tools
        self.texts: dict[str, Any] = {}
        self.messages: dict[str, dict[str, Any]] = {}
        self._index: dict[str, int] = {}
        self.reports: list[dict[str, Any]] = []
        self.entries: list[dict[str, Any]] = []
        self._previous: BuiltContext | None = None
        self._lists: dict[str, list[Any]] = {}
        self._seen: set[str] = set()

    def _shared(self, record: dict[str, Any]) -> dict[str, Any]:
        """``record`` without the fields the page's message table holds (kept when they differ from it).

        Every record gets the replacement keys (``None`` when it is no
        replacement), so one call's records have the same keys and pack as rows.
        """
        known = self.messages.setdefault(record["id"], {k: record[k] for k in _CONSTANT})
        out = {k: v for k, v in record.items() if k not in known or known[k] != v}
        for k in _REPLACEMENT:
            out.setdefault(k, None)
        return out

    def _intern(self, item: Any) -> Any:
        """``item`` (a dict of a report list) with its message ids as indexes into ``self.ids``."""
        if not isinstance(item, dict):
            return item
        index = self._index
        out = dict(item)
        for k in _ID_FIELDS:
            v = out.get(k)
            if isinstance(v, str):
                out[k] = index.setdefault(v, len(index))
        for k in _ID_LISTS:
            v = out.get(k)
            if isinstance(v, (list, tuple)):
                out[k] = [index.setdefault(i, len(index)) for i in v]
        return out

    def add(self, built: BuiltContext) -> None:
        index = len(self.entries)
        for m in built.messages:
            if m.id not in self.texts:
                self.texts[m.id] = message_text(m)
        diff = None
        if self._previous is not None:
            diff = diff_builds(self._previous, built, labels=(f"call {index - 1}", f"call {index}"),
                               tools=(self.tools, self.tools))
        payload = report_payload(built, model=self.model, source_kinds=self.source_kinds, title=f"call {index}",
                                 diff=diff, texts=False)
        stripped = _without_positions(payload["messages"])
        payload["positions"] = stripped is None  # False: rebuild each position as the index of a sent record
        if stripped is not None:
            payload["messages"] = stripped
        payload["messages"] = [self._shared(m) for m in payload["messages"]]
        for key in DELTA_KEYS:
            current = [self._intern(i) for i in payload[key]]
            payload[key] = _delta(current, self._lists.get(key))
            self._lists[key] = current
        self.reports.append(payload)
        segments, framing = _segments(built)
        report = built.report
        budget = report.budget
        entry: dict[str, Any] = {"segments": segments, "tool_tokens": report.tool_tokens, "framing": framing,
                                 "reduction_markers": _reductions(built, self._seen), "trigger": None, "target": None}
        if budget is not None and self.marks is not None:
            room = budget - report.tool_tokens
            entry["trigger"] = report.tool_tokens + int(self.marks["trigger_ratio"] * room)
            entry["target"] = report.tool_tokens + int(self.marks["target_ratio"] * room)
        self.entries.append(entry)
        self._seen = {c.new_id for c in report.compressions}
        self._previous = built


def replay_page(
    builder: ContextBuilder,
    messages: Sequence[Mapping[str, Any]],
    *,
    state: Mapping[str, Any] | None = None,
    runtime: Mapping[str, Any] | None = None,
    price_per_mtok: float = 3.0,
    cached_discount: float = 0.1,
    model: ModelBudget | None = None,
    source_kinds: Mapping[str, str] | None = None,
    baseline: ContextBuilder | None = None,
    title: str = "ctx replay",
    on_call: Callable[[int, int], None] | None = None,
    **replay_options: Any,
) -> tuple[ReplayResult, dict[str, Any]]:
    """Replay ``messages`` through ``builder`` and collect the page's data; returns the result and the payload.

    The payload has ``title``, ``totals`` (the replay's), ``calls`` (each call of
    ``ReplayResult.to_dict()`` with its timeline entry: ``segments``,
    ``tool_tokens``, ``framing``, ``reduction_markers``, ``trigger``, ``target``, ``cost``,
    ``cumulative_cost`` and ``baseline_cumulative_cost``), ``turns``, ``water_marks``,
    ``baseline`` (the sliding window's totals, or ``None``), ``summary`` (the
    numbers of the cards), ``texts`` (message id -> full text), ``messages``
    (message id -> the record fields that do not change between calls), ``ids``
    (the message ids the reports refer to by index) and ``reports``
    (one per call, long lists delta-encoded; see the module doc).
    ``replay_options`` (``times``, ``prices``, ``anthropic_min_tokens``) go to
    both replays unchanged, so the page's ``providers`` bills follow the same
    caching rules as ``ctx replay --json``.
    """
    marks = water_marks(builder)
    recorder = _Recorder(model, source_kinds, marks, (state or {}).get("tools"))
    request = builder_requests(builder, messages, state, runtime, on_build=lambda _h, built: recorder.add(built))
    result = replay_requests(messages, request, price_per_mtok=price_per_mtok, cached_discount=cached_discount,
                             on_call=on_call, **replay_options)
    base: ReplayResult | None = None
    if baseline is not None:
        base = replay_requests(messages, builder_requests(baseline, messages, state, runtime),
                               price_per_mtok=price_per_mtok, cached_discount=cached_discount, **replay_options)
    data = result.to_dict()
    price = price_per_mtok / 1_000_000
    cumulative = baseline_cumulative = 0.0
    base_calls = base.calls if base is not None else []
    for k, (call, entry) in enumerate(zip(data["calls"], recorder.entries, strict=True)):
        cost = (call["input_tokens"] - call["cached_tokens"]) * price + call["cached_tokens"] * price * cached_discount
        cumulative += cost
        entry.update(call, cost=cost, cumulative_cost=cumulative)
        if base_calls:
            b = base_calls[k]
            baseline_cumulative += (b.input_tokens - b.cached_tokens) * price + b.cached_tokens * price * cached_discount
            entry["baseline_cumulative_cost"] = baseline_cumulative
        else:
            entry["baseline_cumulative_cost"] = None
    totals = data["totals"]
    base_totals = base.totals if base is not None else None
    summary = {
        "cost": totals["cost"],
        "baseline_cost": None if base_totals is None else base_totals["cost"],
        "saved_share": None if not base_totals or not base_totals["cost"] else 1 - totals["cost"] / base_totals["cost"],
        "cached_share": totals["cached_share"],
        "baseline_cached_share": None if base_totals is None else base_totals["cached_share"],
        "mean_fill": totals["mean_fill"],
        "over_budget": totals["over_budget"],
        "calls": totals["calls"],
        "turns": totals["turns"],
        "reductions": totals["reductions"],
    }
    payload = {
        "title": title, "totals": totals, "turns": data["turns"], "calls": recorder.entries,
        "water_marks": marks, "baseline": base_totals, "summary": summary,
        "model": None if model is None else {"context_window": model.context_window,
                                             "reserve_output_tokens": model.reserve_output_tokens,
                                             "safety_margin": model.safety_margin},
        "texts": recorder.texts, "messages": recorder.messages, "ids": list(recorder._index),
        "reports": recorder.reports,
    }
    return result, payload


def call_report(payload: Mapping[str, Any], index: int) -> dict[str, Any]:
    """Call ``index``'s report rebuilt from ``payload`` as the page does: its ``report_payload``, as JSON reads it."""
    lists: dict[str, list[Any]] = {key: [] for key in DELTA_KEYS}
    for k in range(index + 1):
        for key in DELTA_KEYS:
            head, tail, middle = payload["reports"][k][key]["$d"]
            previous = lists[key]
            lists[key] = previous[:head] + _unpack(middle) + previous[len(previous) - tail:]
    ids = payload["ids"]
    for key in DELTA_KEYS:
        lists[key] = [_unintern(i, ids) for i in lists[key]]
    out = {**payload["reports"][index], **lists}
    positions = out.pop("positions")
    messages = []
    for k, m in enumerate(out["messages"]):
        m = {**payload["messages"][m["id"]], **{k: v for k, v in m.items() if k not in _REPLACEMENT or v is not None},
             "text": payload["texts"].get(m["id"])}
        m = {key: m[key] for key in _ORDER if key in m} | {key: v for key, v in m.items() if key not in _ORDER}
        if not positions:
            m["position"] = k if m["fate"] in ("kept", "added") else None
        messages.append(m)
    out["messages"] = messages
    return out


def render_replay_html(payload: Mapping[str, Any]) -> str:
    """The replay page of ``payload`` (from :func:`replay_page`): inline CSS and JS, no network."""
    fill = {"TITLE": html.escape(str(payload["title"])), "DATA": _script_json(payload)}
    return re.sub(r"%%(TITLE|DATA)%%", lambda m: fill[m.group(1)], REPLAY_PAGE)
