"""The page of ``ctx report --html``: one HTML document with inline CSS and JS.

``%%TITLE%%`` (HTML-escaped) and ``%%DATA%%`` (the report JSON, made safe for a
``<script>`` element) are filled in by :func:`ctxcore.tools.html_report.render_html`.
The script reads the JSON and builds every element with ``textContent`` and
attributes, never ``innerHTML``, so message text is shown and never run.
"""

from __future__ import annotations

__all__ = ["PAGE"]

_CSS = """
:root { --ink:#0f172a; --muted:#64748b; --line:#e2e8f0; --bg:#f8fafc; --card:#fff;
  --prompt:#6366f1; --tools:#0ea5e9; --memory:#a855f7; --history:#14b8a6; --framing:#94a3b8;
  --reserved:#f59e0b; --free:#e2e8f0; --kept:#22c55e; --added:#3b82f6; --compressed:#f59e0b; --dropped:#ef4444; }
* { box-sizing: border-box; }
body { margin:0; background:var(--bg); color:var(--ink);
  font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,"Noto Sans","DejaVu Sans",sans-serif; }
main { max-width:1160px; margin:0 auto; padding:28px 28px 40px; }
header h1 { margin:0; font-size:22px; font-weight:650; letter-spacing:-.01em; }
header p { margin:4px 0 0; color:var(--muted); }
section { background:var(--card); border:1px solid var(--line); border-radius:10px; padding:16px 18px; margin-top:16px; }
h2 { margin:0 0 12px; font-size:13px; font-weight:650; text-transform:uppercase; letter-spacing:.06em; color:var(--muted); }
.cards { display:grid; grid-template-columns:repeat(auto-fit,minmax(150px,1fr)); gap:12px; background:none; border:0; padding:0; }
.card { background:var(--card); border:1px solid var(--line); border-radius:10px; padding:12px 14px; }
.card .label { color:var(--muted); font-size:12px; }
.card .value { font-size:22px; font-weight:650; font-variant-numeric:tabular-nums; }
.card .note { color:var(--muted); font-size:12px; }
.bar { display:flex; height:38px; border-radius:8px; overflow:hidden; border:1px solid var(--line); }
.seg { min-width:2px; display:flex; align-items:center; justify-content:center; overflow:hidden; white-space:nowrap;
  color:#fff; font-size:12px; font-weight:600; border-right:1px solid rgba(255,255,255,.55); }
.seg:last-child { border-right:0; }
.seg.free { color:var(--muted); }
.seg.reserved { background-image:repeating-linear-gradient(45deg,rgba(255,255,255,.28) 0 6px,transparent 6px 12px); }
.legend { display:flex; flex-wrap:wrap; gap:6px 18px; margin-top:10px; }
.legend span.item { display:inline-flex; align-items:center; gap:6px; }
.sw { width:11px; height:11px; border-radius:3px; display:inline-block; }
.num { font-variant-numeric:tabular-nums; font-weight:600; }
.strip { display:flex; gap:2px; height:34px; align-items:stretch; }
.unit { min-width:5px; border-radius:3px; }
.axis { display:flex; justify-content:space-between; color:var(--muted); font-size:12px; margin-top:4px; }
.grid2 { display:grid; grid-template-columns:minmax(0,1.1fr) minmax(0,1fr); gap:16px; }
.grid2 > section { margin-top:16px; }
table { border-collapse:collapse; width:100%; font-variant-numeric:tabular-nums; }
th, td { text-align:left; padding:5px 8px; border-bottom:1px solid var(--line); vertical-align:top; }
th { color:var(--muted); font-weight:600; font-size:12px; }
td.n, th.n { text-align:right; }
td.preview { color:#334155; max-width:420px; overflow:hidden; text-overflow:ellipsis; white-space:nowrap; }
.pill { display:inline-block; padding:0 8px; border-radius:999px; font-size:12px; font-weight:600; color:#fff; }
ol.decisions { margin:0; padding:0; list-style:none; }
ol.decisions li { padding:6px 0; border-bottom:1px solid var(--line); display:flex; gap:10px; align-items:baseline; }
ol.decisions li:last-child { border-bottom:0; }
.by { font:12px ui-monospace,SFMono-Regular,Menlo,Consolas,"DejaVu Sans Mono",monospace; background:#eef2ff; color:#3730a3;
  padding:1px 6px; border-radius:4px; white-space:nowrap; }
.by.warning { background:#fef3c7; color:#92400e; }
.text { overflow-wrap:anywhere; }
.empty { color:var(--muted); }
@media (max-width: 900px) { .grid2 { grid-template-columns:1fr; gap:0; } }
"""

_JS = r"""
(function () {
  "use strict";
  const data = JSON.parse(document.getElementById("report-data").textContent);
  const COLORS = { prompt: "var(--prompt)", tools: "var(--tools)", memory: "var(--memory)", history: "var(--history)",
    framing: "var(--framing)", reserved: "var(--reserved)", free: "var(--free)", kept: "var(--kept)",
    added: "var(--added)", compressed: "var(--compressed)", dropped: "var(--dropped)" };
  const fmt = (n) => (n === null || n === undefined ? "\u2014" : Number(n).toLocaleString("en-US"));
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined) continue;
      if (k === "class") e.className = v; else e.setAttribute(k, String(v));
    }
    for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
    return e;
  }
  const $ = (id) => document.getElementById(id);
  const pill = (fate) => { const p = el("span", { class: "pill" }, fate); p.style.background = COLORS[fate] || "#64748b"; return p; };
  const labels = Object.fromEntries(Object.entries(data.categories).map(([k, v]) => [k, v.label]));

  document.title = data.title;
  $("title").textContent = data.title;
  const window_ = data.model ? data.model.context_window : null;
  $("subtitle").textContent = (window_ ? `context window ${fmt(window_)} tokens \u00b7 ` : "") +
    (data.budget !== null ? `input budget ${fmt(data.budget)} tokens` : "no budget set") +
    ` \u00b7 ${data.messages.length} messages considered`;

  // Summary cards.
  const util = data.utilization === null ? "\u2014" : (data.utilization * 100).toFixed(1) + "%";
  const cards = [
    ["Request tokens", fmt(data.total_tokens), "total-tokens", data.tool_tokens ? `${fmt(data.tool_tokens)} of them tool schemas` : "sent to the model"],
    ["Input budget", fmt(data.budget), "budget", `${util} used`],
    ["Kept", fmt(data.counts.kept), "count-kept", "messages sent as they were"],
    ["Added", fmt(data.counts.added), "count-added", "summaries, markers, repairs"],
    ["Compressed", fmt(data.counts.compressed), "count-compressed", "replaced by a shorter message"],
    ["Dropped", fmt(data.counts.dropped), "count-dropped", "left out of the request"],
  ];
  for (const [label, value, id, note] of cards) {
    $("cards").append(el("div", { class: "card" }, el("div", { class: "label" }, label),
      el("div", { class: "value", "data-testid": id }, value), el("div", { class: "note" }, note)));
  }
  $("utilization").textContent = util;
  $("utilization").setAttribute("data-value", data.utilization === null ? "" : String(data.utilization));

  // Budget bar: one segment per (category, source), then framing, free space and the output reserve.
  const barTotal = data.bar.reduce((s, b) => s + b.tokens, 0) || 1;
  for (const b of data.bar) {
    const share = b.tokens / barTotal;
    const name = b.source && b.source !== b.category ? `${labels[b.category]} \u00b7 ${b.source}` : labels[b.category];
    const seg = el("div", { class: "seg " + b.category, "data-testid": "bar-segment", "data-category": b.category,
      "data-source": b.source, "data-tokens": b.tokens, title: `${name}${b.zone ? " (" + b.zone + ")" : ""}: ${fmt(b.tokens)} tokens` });
    seg.style.background = COLORS[b.category];
    seg.style.flex = `${b.tokens} 0 0`;
    if (share > 0.09) seg.append(`${b.source && b.category !== "tools" && b.category !== "free" && b.category !== "reserved" ? b.source : labels[b.category]} ${fmt(b.tokens)}`);
    $("bar").append(seg);
  }
  for (const [cat, v] of Object.entries(data.categories)) {
    if (!v.tokens && cat !== "free") continue;
    const sw = el("span", { class: "sw" }); sw.style.background = COLORS[cat];
    $("legend").append(el("span", { class: "item" }, sw, v.label + " ",
      el("span", { class: "num", "data-testid": "cat-" + cat }, fmt(v.tokens))));
  }

  // History strip: one block per unit, oldest first, coloured by fate.
  if (!data.units.length) $("strip").append(el("span", { class: "empty" }, "no history"));
  data.units.forEach((u, i) => {
    const b = el("div", { class: "unit", "data-testid": "unit", "data-fate": u.fate, "data-tokens": u.tokens,
      title: `unit ${i + 1}: ${u.roles.join(" + ")} \u00b7 ${fmt(u.tokens)} tokens \u00b7 ${u.fate}${u.by ? " by " + u.by : ""}\n${u.preview}` });
    b.style.background = COLORS[u.fate];
    b.style.flex = `${Math.max(u.tokens, 1)} 1 0`;
    $("strip").append(b);
  });
  for (const [fate, n] of Object.entries(data.unit_counts)) {
    const sw = el("span", { class: "sw" }); sw.style.background = COLORS[fate];
    $("strip-legend").append(el("span", { class: "item" }, sw, fate + " ", el("span", { class: "num", "data-testid": "units-" + fate }, fmt(n))));
  }

  // Tokens per source and zone (the rows of ctx explain).
  for (const r of data.rows) {
    $("rows").append(el("tr", { "data-testid": "row", "data-source": r.source, "data-zone": r.zone },
      el("td", {}, r.source || "\u2014"), el("td", {}, r.zone),
      el("td", { class: "n", "data-col": "tokens_in" }, fmt(r.tokens_in)),
      el("td", { class: "n", "data-col": "tokens_out" }, fmt(r.tokens_out)),
      el("td", { class: "n", "data-col": "units_dropped" }, fmt(r.units_dropped)),
      el("td", { class: "n", "data-col": "compressed" }, fmt(r.compressed))));
  }
  for (const [zone, t] of Object.entries(data.by_zone)) {
    $("zones").append(el("tr", { "data-testid": "zone", "data-zone": zone }, el("td", {}, zone),
      el("td", { class: "n", "data-col": "kept_tokens" }, fmt(t.kept_tokens)),
      el("td", { class: "n", "data-col": "compressed_tokens" }, fmt(t.compressed_tokens)),
      el("td", { class: "n", "data-col": "dropped_tokens" }, fmt(t.dropped_tokens))));
  }

  // Decisions, each with the step that made it.
  if (!data.decision_items.length) $("decisions").append(el("li", { class: "empty" }, "none: everything fit"));
  for (const d of data.decision_items) {
    $("decisions").append(el("li", { "data-testid": "decision", "data-kind": d.kind },
      el("span", { class: "by" + (d.kind === "warning" ? " warning" : "") }, d.by || d.kind),
      el("span", { class: "text" }, d.text)));
  }

  // Every message: sent ones in request order, then the removed ones.
  for (const m of data.messages) {
    $("messages").append(el("tr", { "data-testid": "message", "data-id": m.id },
      el("td", { class: "n" }, m.position === null ? "" : m.position), el("td", {}, m.role),
      el("td", {}, m.source || "\u2014"), el("td", {}, m.zone), el("td", {}, pill(m.fate)),
      el("td", {}, [m.by, m.stage].filter(Boolean).join(" \u00b7 ")),
      el("td", { class: "n", "data-col": "tokens" }, fmt(m.tokens)),
      el("td", { class: "preview", title: m.preview }, m.preview)));
  }
})();
"""

PAGE = (
    """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:">
<title>%%TITLE%%</title>
<style>"""
    + _CSS
    + """</style>
</head>
<body>
<main>
<header><h1 id="title"></h1><p id="subtitle"></p></header>
<section class="cards" id="cards"></section>
<section>
  <h2>Context window <span style="text-transform:none;letter-spacing:0;font-weight:500">\u00b7 <span id="utilization" data-testid="utilization"></span> of the input budget used</span></h2>
  <div class="bar" id="bar"></div>
  <div class="legend" id="legend"></div>
</section>
<section>
  <h2>History, oldest to newest (a tool call and its results are one unit)</h2>
  <div class="strip" id="strip"></div>
  <div class="axis"><span>oldest</span><span>newest</span></div>
  <div class="legend" id="strip-legend"></div>
</section>
<div class="grid2">
<section>
  <h2>Tokens by source and zone</h2>
  <table><thead><tr><th>source</th><th>zone</th><th class="n">tokens in</th><th class="n">tokens out</th><th class="n">units dropped</th><th class="n">compressed</th></tr></thead><tbody id="rows"></tbody></table>
  <table style="margin-top:12px"><thead><tr><th>zone</th><th class="n">kept tokens</th><th class="n">compressed tokens</th><th class="n">dropped tokens</th></tr></thead><tbody id="zones"></tbody></table>
</section>
<section>
  <h2>Decisions</h2>
  <ol class="decisions" id="decisions"></ol>
</section>
</div>
<section>
  <h2>Messages (request order, then removed)</h2>
  <table><thead><tr><th class="n">#</th><th>role</th><th>source</th><th>zone</th><th>fate</th><th>by</th><th class="n">tokens</th><th>preview</th></tr></thead><tbody id="messages"></tbody></table>
</section>
</main>
<script type="application/json" id="report-data">%%DATA%%</script>
<script>"""
    + _JS
    + """</script>
</body>
</html>
"""
)
