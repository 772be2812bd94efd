"""The page of ``ctx replay --html``: the session's timeline and every call's report, inline CSS and JS.

``%%TITLE%%`` and ``%%DATA%%`` are filled in by
:func:`ctxcore.tools.replay_html.render_replay_html`. The charts are SVG built
with DOM calls; a call's report is drawn by the report page's
``ctxReport.draw`` (:mod:`ctxcore.tools._report_page`) after its delta-encoded
lists are rebuilt, so message text is only ever set as text.
"""

from __future__ import annotations

from ctxcore.tools._report_page import CSP, CSS, REPORT_JS, REPORT_TEMPLATE

__all__ = ["REPLAY_PAGE"]

_CSS = """
.chart { width:100%; display:block; }
.chart text { font-size:11px; fill:var(--muted); }
.chart .hit { fill:transparent; cursor:pointer; }
.chart .hit:hover, .chart .hit.selected { fill:rgba(99,102,241,.14); }
.chart .line { fill:none; stroke-width:1.5; }
.chart .marker { fill:#dc2626; }
.call-head { display:flex; align-items:baseline; gap:12px; }
.call-head h2 { margin:0; }
#call-report main, #call-report > div { padding:0; }
.hint { color:var(--muted); font-size:12px; margin:6px 0 0; }
"""

_JS = r"""
(function () {
  "use strict";
  const data = JSON.parse(document.getElementById("replay-data").textContent);
  const { el, fmt } = window.ctxReport;
  const SVG = "http://www.w3.org/2000/svg";
  const svg = (tag, attrs, ...kids) => {
    const e = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) if (v !== null && v !== undefined) e.setAttribute(k, String(v));
    for (const k of kids) e.append(k instanceof Node ? k : document.createTextNode(String(k)));
    return e;
  };
  const $ = (id) => document.getElementById(id);
  const money = (x) => (x === null || x === undefined ? "\u2014" : "$" + x.toFixed(4));
  const pct = (x) => (x === null || x === undefined ? "\u2014" : (x * 100).toFixed(1) + "%");
  const calls = data.calls;
  document.title = data.title;
  $("title").textContent = data.title;
  const s = data.summary;
  $("subtitle").textContent = `${s.calls} model calls in ${s.turns} turns \u00b7 $${data.totals.price_per_mtok}/M input tokens, ` +
    `cached tokens at ${(data.totals.cached_discount * 100).toFixed(0)}% of the price` +
    (data.water_marks ? ` \u00b7 water marks of ${data.water_marks.step}: trigger ${data.water_marks.trigger_ratio}, target ${data.water_marks.target_ratio}` : "");

  // Summary cards.
  const cards = [
    ["Total cost", money(s.cost), "cost", data.baseline ? `sliding window: ${money(s.baseline_cost)}` : "no sliding-window baseline"],
    ["Saved vs sliding window", pct(s.saved_share), "saved-share", "same session, same prices, token_budget only"],
    ["Cached share", pct(s.cached_share), "cached-share", data.baseline ? `sliding window: ${pct(s.baseline_cached_share)}` : "of all input tokens"],
    ["Mean fill", pct(s.mean_fill), "mean-fill", "input tokens / input budget"],
    ["Calls over budget", fmt(s.over_budget), "over-budget", `of ${fmt(s.calls)} calls`],
    ["Reductions", fmt(s.reductions), "reductions", "compactions made in the session"],
  ];
  for (const [label, value, id, note] of cards) {
    const v = el("div", { class: "value", "data-testid": id }, value);
    const raw = { "cost": s.cost, "saved-share": s.saved_share, "cached-share": s.cached_share, "mean-fill": s.mean_fill,
      "over-budget": s.over_budget, "reductions": s.reductions }[id];
    v.setAttribute("data-value", raw === null ? "" : String(raw));
    $("cards").append(el("div", { class: "card" }, el("div", { class: "label" }, label), v, el("div", { class: "note" }, note)));
  }

  // Colours per (source, zone), in order of first appearance.
  const PALETTE = ["#6366f1", "#14b8a6", "#a855f7", "#f97316", "#0891b2", "#84cc16", "#e11d48", "#64748b", "#d946ef", "#0d9488"];
  const keys = [];
  for (const c of calls) for (const g of c.segments) { const k = `${g.source || "\u2014"} (${g.zone})`; if (!keys.includes(k)) keys.push(k); }
  const colour = Object.fromEntries(keys.map((k, i) => [k, PALETTE[i % PALETTE.length]]));
  colour["tool schemas"] = "var(--tools)"; colour["framing"] = "var(--framing)";

  const W = 1100, PADL = 56, PADR = 8;
  const n = Math.max(calls.length, 1);
  const step = (W - PADL - PADR) / n;
  const x = (i) => PADL + i * step;
  const bw = Math.max(step * 0.8, 0.6);

  function axis(g, H, top, max, label) {
    for (let t = 0; t <= 4; t++) {
      const v = max * t / 4, y = top + H - H * t / 4;
      g.append(svg("line", { x1: PADL, x2: W - PADR, y1: y, y2: y, stroke: "#e2e8f0" }));
      g.append(svg("text", { x: PADL - 6, y: y + 4, "text-anchor": "end" }, label(v)));
    }
  }
  function chart(id, H, max, label, drawCall, lines) {
    const root = svg("svg", { class: "chart", viewBox: `0 0 ${W} ${H + 34}`, "data-testid": id });
    const g = svg("g", {});
    root.append(g);
    axis(g, H, 8, max, label);
    const y = (v) => 8 + H - H * Math.min(v, max * 1.2) / max;
    calls.forEach((c, i) => drawCall(g, c, i, y));
    for (const [points, colour_, dash, name] of lines) {
      const pts = points.map((v, i) => (v === null ? null : `${x(i) + step / 2},${y(v)}`)).filter(Boolean);
      if (pts.length) g.append(svg("polyline", { class: "line", points: pts.join(" "), stroke: colour_, "stroke-dasharray": dash, "data-line": name }));
    }
    const last = calls.length - 1;
    for (const i of [0, Math.floor(last / 2), last]) if (i >= 0) g.append(svg("text", { x: x(i) + step / 2, y: H + 24, "text-anchor": "middle" }, `call ${i}`));
    calls.forEach((c, i) => {
      const hit = svg("rect", { class: "hit", x: x(i), y: 8, width: Math.max(step, 1), height: H, "data-index": i,
        "data-testid": id === "tokens-chart" ? "call" : null },
        svg("title", {}, `call ${i} (turn ${c.turn}): ${fmt(c.input_tokens)} input tokens, ${fmt(c.cached_tokens)} cached, ${money(c.cost)}`));
      hit.addEventListener("click", () => openCall(i));
      g.append(hit);
    });
    return root;
  }

  // 1. Input tokens stacked by source and zone, with the budget and the water marks.
  const maxIn = Math.max(1, ...calls.map((c) => Math.max(c.input_tokens, c.budget || 0)));
  $("tokens").append(chart("tokens-chart", 230, maxIn, (v) => fmt(Math.round(v)), (g, c, i, y) => {
    let acc = 0;
    const parts = c.segments.map((p) => [`${p.source || "\u2014"} (${p.zone})`, p.tokens]);
    if (c.tool_tokens) parts.unshift(["tool schemas", c.tool_tokens]);
    if (c.framing) parts.push(["framing", c.framing]);
    for (const [k, t] of parts) {
      if (!t) continue;
      g.append(svg("rect", { x: x(i) + (step - bw) / 2, y: y(acc + t), width: bw, height: Math.max(y(acc) - y(acc + t), 0), fill: colour[k],
        "data-testid": "segment", "data-call": i, "data-key": k, "data-tokens": t }));
      acc += t;
    }
    if (c.reduction_markers.length) {
      const saved = c.reduction_markers.reduce((a, r) => a + r.saved, 0);
      const cx = x(i) + step / 2, top = y(c.input_tokens) - 4;
      g.append(svg("path", { class: "marker", d: `M${cx - 4},${top - 7} L${cx + 4},${top - 7} L${cx},${top} Z`, "data-testid": "reduction",
        "data-call": i, "data-saved": saved }, svg("title", {}, `call ${i}: ` + c.reduction_markers.map((r) => `${r.step} ${r.stage} \u00d7${r.count}, saved ${fmt(r.saved)} tokens`).join("; "))));
    }
  }, [[calls.map((c) => c.budget), "#dc2626", "6 3", "budget"], [calls.map((c) => c.trigger), "#f59e0b", "4 3", "trigger"],
      [calls.map((c) => c.target), "#16a34a", "2 3", "target"]]));
  for (const k of [...(calls.some((c) => c.tool_tokens) ? ["tool schemas"] : []), ...keys, "framing"]) {
    const sw = el("span", { class: "sw" }); sw.style.background = colour[k];
    $("tokens-legend").append(el("span", { class: "item" }, sw, k));
  }
  for (const [name, c, label] of [["budget", "#dc2626", "input budget"], ["trigger", "#f59e0b", "water mark: trigger"], ["target", "#16a34a", "water mark: target"]]) {
    if (!calls.some((x_) => x_[name] !== null)) continue;
    const sw = el("span", { class: "sw" }); sw.style.background = c;
    $("tokens-legend").append(el("span", { class: "item" }, sw, label));
  }
  const sw0 = el("span", { class: "sw" }); sw0.style.background = "#dc2626";
  $("tokens-legend").append(el("span", { class: "item" }, "\u25bc reduction (hover: stage, tokens saved)"));

  // 2. Cached vs uncached input tokens (the provider's prompt cache, as ctx replay counts it).
  $("cache").append(chart("cache-chart", 120, maxIn, (v) => fmt(Math.round(v)), (g, c, i, y) => {
    const un = c.input_tokens - c.cached_tokens;
    g.append(svg("rect", { x: x(i) + (step - bw) / 2, y: y(un), width: bw, height: y(0) - y(un), fill: "var(--uncached)",
      "data-testid": "uncached", "data-call": i, "data-tokens": un }));
    g.append(svg("rect", { x: x(i) + (step - bw) / 2, y: y(c.input_tokens), width: bw, height: y(un) - y(c.input_tokens), fill: "var(--cached)",
      "data-testid": "cached", "data-call": i, "data-tokens": c.cached_tokens }));
  }, []));

  // 3. Cost per call and cumulative (and the sliding window's cumulative cost).
  const maxCost = Math.max(1e-9, ...calls.map((c) => Math.max(c.cumulative_cost, c.baseline_cumulative_cost || 0)));
  const maxCall = Math.max(1e-9, ...calls.map((c) => c.cost));
  $("cost").append(chart("cost-chart", 140, maxCost, (v) => "$" + v.toFixed(3), (g, c, i, y) => {
    const h = 140 * 0.35 * c.cost / maxCall;
    g.append(svg("rect", { x: x(i) + (step - bw) / 2, y: 8 + 140 - h, width: bw, height: h, fill: "#94a3b8",
      "data-testid": "call-cost", "data-call": i, "data-cost": c.cost }));
  }, [[calls.map((c) => c.cumulative_cost), "#4338ca", null, "cumulative"],
      [calls.map((c) => c.baseline_cumulative_cost), "#dc2626", "5 3", "baseline"]]));

  // A call's full report, rebuilt from the delta-encoded lists.
  const DELTA = ["messages", "units", "compressions"];
  const unpack = (v) => (Array.isArray(v) ? v : v.$v.map((row) => Object.assign({}, v.$c, Object.fromEntries(v.$k.map((k, j) => [k, row[j]])))));
  const cache = { k: -1, lists: {} };
  const ID_FIELDS = ["id", "into", "new_id"], ID_LISTS = ["replaces", "original_ids", "ids"], REPLACEMENT = ["replaces", "tokens_before", "tokens_after"];
  function unintern(item) {
    if (item === null || typeof item !== "object") return item;
    const out = Object.assign({}, item);
    for (const k of ID_FIELDS) if (typeof out[k] === "number") out[k] = data.ids[out[k]];
    for (const k of ID_LISTS) if (Array.isArray(out[k])) out[k] = out[k].map((i) => data.ids[i]);
    return out;
  }
  function report(i) {
    if (cache.k > i) { cache.k = -1; cache.lists = {}; }
    for (let k = cache.k + 1; k <= i; k++) {
      for (const key of DELTA) {
        const [head, tail, mid] = data.reports[k][key].$d, prev = cache.lists[key] || [];
        cache.lists[key] = prev.slice(0, head).concat(unpack(mid), prev.slice(prev.length - tail));
      }
      cache.k = k;
    }
    const r = Object.assign({}, data.reports[i]);
    for (const key of DELTA) r[key] = cache.lists[key].map(unintern);
    const positions = r.positions;
    delete r.positions;
    r.messages = r.messages.map((m, k) => {
      const own = Object.assign({}, m);
      for (const k of REPLACEMENT) if (own[k] === null) delete own[k];
      const out = Object.assign({}, data.messages[m.id], own, { text: data.texts[m.id] || null });
      if (!positions) out.position = m.fate === "kept" || m.fate === "added" ? k : null;
      return out;
    });
    return r;
  }
  function openCall(i) {
    const c = calls[i];
    document.querySelectorAll(".hit.selected").forEach((h) => h.classList.remove("selected"));
    document.querySelectorAll(`.hit[data-index="${i}"]`).forEach((h) => h.classList.add("selected"));
    const box = $("call-report");
    box.hidden = false;
    $("call-title").textContent = `Call ${i} \u00b7 turn ${c.turn}`;
    $("call-title").setAttribute("data-index", String(i));
    $("call-note").textContent = `${fmt(c.input_tokens)} input tokens, ${fmt(c.cached_tokens)} cached, ${money(c.cost)} (cumulative ${money(c.cumulative_cost)})`;
    window.ctxReport.draw(report(i), $("call-body"));
    box.scrollIntoView({ block: "start" });
  }
  window.ctxReplay = { openCall, report };
  document.body.setAttribute("data-ready", "1");
})();
"""

REPLAY_PAGE = (
    """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content=\""""
    + CSP
    + """\">
<title>%%TITLE%%</title>
<style>"""
    + CSS
    + _CSS
    + """</style>
</head>
<body>
<main>
<header><h1 id="title"></h1><p id="subtitle"></p></header>
<section class="cards" id="cards"></section>
<section>
  <h2>Input tokens per model call, stacked by source and zone</h2>
  <div id="tokens"></div>
  <div class="legend" id="tokens-legend"></div>
  <p class="hint">Click a call to open its full build report below.</p>
</section>
<section>
  <h2>Cached (light) and uncached (dark) input tokens per call</h2>
  <div id="cache"></div>
</section>
<section>
  <h2>Cost per call (bars) and cumulative (line; dashed: sliding-window baseline)</h2>
  <div id="cost"></div>
</section>
<section id="call-report" data-testid="call-report" hidden>
  <div class="call-head"><h2 id="call-title" data-testid="call-title"></h2><span class="empty" id="call-note"></span></div>
  <div id="call-body"></div>
</section>
</main>
"""
    + REPORT_TEMPLATE
    + """<script type="application/json" id="replay-data">%%DATA%%</script>
<script>"""
    + REPORT_JS
    + "</script>\n<script>"
    + _JS
    + """</script>
</body>
</html>
"""
)
