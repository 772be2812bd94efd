"""The page of ``ctx report --html``: one HTML document with inline CSS and JS.

``%%TITLE%%`` (HTML-escaped) and ``%%DATA%%`` (the report JSON, made safe for a
``<script>`` element) are filled in by :func:`ctxcore.tools.html_report.render_html`.
The script reads the JSON and builds every element with ``textContent`` and
attributes, never ``innerHTML``, so message text is shown and never run.

:data:`CSS`, :data:`REPORT_TEMPLATE` and :data:`REPORT_JS` are shared with the
replay page (:mod:`ctxcore.tools._replay_page`), which draws one call's report
with the same ``ctxReport.draw(data, root)``.
"""

from __future__ import annotations

__all__ = ["CSS", "PAGE", "REPORT_JS", "REPORT_TEMPLATE", "CSP"]

CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"

CSS = """
:root { --ink:#0f172a; --muted:#64748b; --line:#e2e8f0; --bg:#f8fafc; --card:#fff;
  --prompt:#6366f1; --tools:#0ea5e9; --memory:#a855f7; --history:#14b8a6; --framing:#94a3b8;
  --reserved:#f59e0b; --free:#e2e8f0; --kept:#22c55e; --uncached:#0f766e; --cached:#99f6e4; --added:#3b82f6; --compressed:#f59e0b; --dropped:#ef4444; }
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
td.text-cell { color:#334155; max-width:380px; }
td.text-cell summary { cursor:pointer; overflow:hidden; text-overflow:ellipsis; white-space:nowrap; list-style-position:inside; }
td.text-cell pre, .diff pre { margin:6px 0 0; padding:8px 10px; background:#f1f5f9; border-radius:6px; white-space:pre-wrap;
  overflow-wrap:anywhere; font:12px/1.45 ui-monospace,SFMono-Regular,Menlo,Consolas,"DejaVu Sans Mono",monospace; max-height:420px; overflow:auto; }
td.text-cell .call-name { font-weight:600; margin-top:6px; }
.link { color:#4338ca; text-decoration:none; font-size:12px; white-space:nowrap; }
.link:hover { text-decoration:underline; }
tr.flash td { background:#fef9c3; transition:background .6s; }
.alert { border-color:#fca5a5; background:#fef2f2; }
.alert h2 { color:#b91c1c; }
.alert .big { font-size:18px; font-weight:650; margin:0 0 8px; }
tr.needed td { background:#fee2e2; }
.diff .explain { font-size:15px; margin:0 0 10px; }
.diff ul { margin:4px 0 10px; padding-left:18px; }
.delta-pos { color:#b91c1c; } .delta-neg { color:#15803d; }
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

REPORT_JS = r"""
window.ctxReport = (function () {
  "use strict";
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
    for (const c of children.flat()) {
      if (c === null || c === undefined) continue;
      e.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return e;
  }
  const pill = (fate) => { const p = el("span", { class: "pill" }, fate); p.style.background = COLORS[fate] || "#64748b"; return p; };
  const signed = (n) => el("span", { class: n > 0 ? "delta-pos" : n < 0 ? "delta-neg" : "" }, (n > 0 ? "+" : "") + fmt(n));

  function messageText(m) {
    // The whole message behind an expand control: text, then each tool call with its arguments.
    if (!m.text) return el("span", { class: "empty", title: "the full text is not in this report" }, m.preview);
    const body = [];
    if (m.text.text) body.push(el("pre", { "data-testid": "full-text" }, m.text.text));
    for (const c of m.text.tool_calls) {
      body.push(el("div", { class: "call-name" }, `\u2192 ${c.name}(\u2026)  id ${c.id}`));
      body.push(el("pre", { "data-testid": "tool-arguments" }, c.arguments));
    }
    if (m.text.tool_call_id) body.push(el("div", { class: "empty" }, `result of tool call ${m.text.tool_call_id}`));
    return el("details", { "data-testid": "message-text" }, el("summary", {}, m.preview || "(empty)"), body);
  }

  function draw(data, root) {
    const tpl = document.getElementById("report-template");
    root.replaceChildren(tpl.content.cloneNode(true));
    const $ = (slot) => root.querySelector(`[data-slot="${slot}"]`);
    const labels = Object.fromEntries(Object.entries(data.categories).map(([k, v]) => [k, v.label]));
    const over = data.over_budget;

    $("title").textContent = data.title;
    const window_ = data.model ? data.model.context_window : null;
    $("subtitle").textContent = (window_ ? `context window ${fmt(window_)} tokens \u00b7 ` : "") +
      (data.budget !== null ? `input budget ${fmt(data.budget)} tokens` : "no budget set") +
      ` \u00b7 ${data.messages.length} messages considered`;

    // Over budget: the build raised BudgetExceeded; show by how much and what would have to go.
    if (over) {
      const s = $("over");
      s.hidden = false;
      s.append(el("p", { class: "big" }, "Over budget by ", el("span", { "data-testid": "shortfall" }, fmt(over.shortfall)),
        " tokens: no request was built."));
      s.append(el("p", {}, "The part every budget filter must keep needs ", el("span", { "data-testid": "required" }, fmt(over.required)),
        " tokens; the budget is ", el("span", { "data-testid": "over-budget" }, fmt(over.budget)),
        " tokens. The protected part alone (protected messages, tool schemas, priming) is ",
        el("span", { "data-testid": "protected-tokens" }, fmt(over.protected_tokens)), " tokens."));
      s.append(el("p", { class: "text" }, over.message));
      const rows = over.would_go.map((c) => el("tr", { "data-testid": "would-go", class: c.needed ? "needed" : "", "data-tokens": c.tokens },
        el("td", {}, c.needed ? "must go" : ""), el("td", {}, c.role), el("td", {}, c.source || "\u2014"), el("td", {}, c.why),
        el("td", { class: "n" }, fmt(c.tokens)), el("td", { class: "text" }, c.preview)));
      s.append(el("p", {}, "What would have to go for it to fit (largest first; removing the marked ones covers the shortfall, ",
        el("span", { "data-testid": "would-go-tokens" }, fmt(over.would_go_tokens)), " tokens):"));
      s.append(el("table", {}, el("thead", {}, el("tr", {}, ["", "role", "source", "kept as", "tokens", "preview"].map((h, i) =>
        el("th", { class: i === 4 ? "n" : "" }, h)))), el("tbody", {}, rows)));
      if (over.uncovered) s.append(el("p", {}, "Even without all of them the request is ", el("span", { "data-testid": "uncovered" }, fmt(over.uncovered)),
        " tokens over: the rest is history the failing filter could not remove (for compaction: its steps ran out; add a trim step)."));
      if (over.removed_before) s.append(el("p", { class: "empty" }, `Filters had removed ${over.removed_before} message(s) before the failure; below is everything the providers returned, unfiltered.`));
    }

    // Summary cards: tokens, then messages by fate (the strip below counts units).
    const util = data.utilization === null ? "\u2014" : (data.utilization * 100).toFixed(1) + "%";
    const h = data.history_counts || {};
    const cards = [
      [over ? "Tokens before filters" : "Request tokens", fmt(data.total_tokens), "total-tokens", data.tool_tokens ? `${fmt(data.tool_tokens)} of them tool schemas` : (over ? "everything the providers returned" : "sent to the model")],
      ["Input budget", fmt(data.budget), "budget", `${util} used`],
      [over ? "Provider messages" : "Kept messages", fmt(data.counts.kept), "count-kept", over ? "unfiltered: nothing was sent" : `sent as they were \u00b7 ${fmt(h.kept)} in history`],
      ["Added messages", fmt(data.counts.added), "count-added", `summaries, markers, repairs \u00b7 ${fmt(h.added)} in history`],
      ["Compressed messages", fmt(data.counts.compressed), "count-compressed", `replaced by a shorter one \u00b7 ${fmt(h.compressed)} in history`],
      ["Dropped messages", fmt(data.counts.dropped), "count-dropped", `left out \u00b7 ${fmt(h.dropped)} in history`],
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
      $("strip-legend").append(el("span", { class: "item" }, sw, fate + " ", el("span", { class: "num", "data-testid": "units-" + fate }, fmt(n)),
        " units \u00b7 ", el("span", { class: "num", "data-testid": "unit-messages-" + fate }, fmt(data.unit_messages[fate])), " messages"));
    }

    if (data.diff) drawDiff(data.diff, $("diff"));

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
    if (!data.decision_items.length) $("decisions").append(el("li", { class: "empty" }, over ? "none before the failure" : "none: everything fit"));
    for (const d of data.decision_items) {
      $("decisions").append(el("li", { "data-testid": "decision", "data-kind": d.kind },
        el("span", { class: "by" + (d.kind === "warning" ? " warning" : "") }, d.by || d.kind),
        el("span", { class: "text" }, d.text)));
    }

    // Every message: sent ones in request order, then the removed ones; a compression links both ways.
    const position = Object.fromEntries(data.messages.map((m) => [m.id, m.position === null ? `a removed ${m.role} message` : `#${m.position}`]));
    const link = (id, text, testid) => {
      const a = el("a", { class: "link", href: "#m-" + id, "data-testid": testid, "data-target": id }, text);
      a.addEventListener("click", (ev) => {
        ev.preventDefault();
        const row = root.querySelector(`tr[data-id="${CSS.escape(id)}"]`);
        if (!row) return;
        const det = row.querySelector("details"); if (det) det.open = true;
        row.scrollIntoView({ block: "center" });
        row.classList.add("flash"); setTimeout(() => row.classList.remove("flash"), 1200);
      });
      return a;
    };
    for (const m of data.messages) {
      const notes = [];
      if (m.into) notes.push(link(m.into, `\u2192 replaced by ${position[m.into] || "a message"}`, "replaced-by"));
      if (m.replaces) {
        notes.push(el("div", { class: "link", "data-testid": "compression", "data-before": m.tokens_before, "data-after": m.tokens_after },
          `${m.stage || "compressed"}: ${fmt(m.tokens_before)} \u2192 ${fmt(m.tokens_after)} tokens`));
        for (const id of m.replaces.slice(0, 3)) notes.push(el("div", {}, link(id, `replaces ${position[id] || "a message not in this report"}`, "replaces")));
        if (m.replaces.length > 3) notes.push(el("div", { class: "empty" }, `and ${m.replaces.length - 3} more (each links back here)`));
      }
      $("messages").append(el("tr", { "data-testid": "message", "data-id": m.id, id: "m-" + m.id },
        el("td", { class: "n" }, m.position === null ? "" : m.position), el("td", {}, m.role),
        el("td", {}, m.source || "\u2014"), el("td", {}, m.zone), el("td", {}, pill(m.fate)),
        el("td", {}, [m.by, m.stage].filter(Boolean).join(" \u00b7 "), notes.length ? el("div", {}, notes) : null),
        el("td", { class: "n", "data-col": "tokens" }, fmt(m.tokens)),
        el("td", { class: "text-cell" }, messageText(m))));
    }
  }

  function drawDiff(d, s) {
    // What changed from build A to build B, and the first position where the request prefix differs.
    s.hidden = false;
    s.append(el("h2", {}, `Changes from ${d.a.label} to ${d.b.label}`));
    s.append(el("p", { class: "explain", "data-testid": "diff-explanation" }, d.explanation));
    const p = d.prefix;
    s.append(el("p", {}, "Identical prefix: ", el("span", { class: "num", "data-testid": "diff-common-messages" }, fmt(p.common_messages)),
      " messages, ", el("span", { class: "num", "data-testid": "diff-common-tokens" }, fmt(p.common_tokens)), " tokens (",
      p.tools_same ? "tool schemas identical" : "tool schemas differ", "). Request tokens ", fmt(d.a.total_tokens), " \u2192 ",
      fmt(d.b.total_tokens), " (", el("span", { "data-testid": "diff-tokens-delta" }, signed(d.tokens_delta)), ")."));
    const lists = [["entered", "entered the request"], ["left", "left the request"], ["compressed", "newly compressed"], ["changed", "changed in place"]];
    for (const [key, title] of lists) {
      const items = d[key];
      const head = el("div", {}, el("strong", {}, title + ": "), el("span", { class: "num", "data-testid": "diff-count-" + key }, fmt(items.length)));
      s.append(head);
      if (!items.length) continue;
      s.append(el("ul", {}, items.slice(0, 50).map((m) => el("li", { class: "text", "data-testid": "diff-" + key },
        `${m.role} from ${m.source || "\u2014"}${m.by ? " (" + m.by + ")" : ""}, ${fmt(m.tokens)} tokens: ${m.preview}`)),
        items.length > 50 ? el("li", { class: "empty" }, `and ${items.length - 50} more`) : null));
    }
    s.append(el("table", {}, el("thead", {}, el("tr", {}, el("th", {}, "source"), el("th", { class: "n" }, d.a.label),
      el("th", { class: "n" }, d.b.label), el("th", { class: "n" }, "delta"))),
      el("tbody", {}, d.by_source.map((r) => el("tr", { "data-testid": "diff-source", "data-source": r.source },
        el("td", {}, r.source), el("td", { class: "n", "data-col": "a" }, fmt(r.a)), el("td", { class: "n", "data-col": "b" }, fmt(r.b)),
        el("td", { class: "n", "data-col": "delta" }, signed(r.delta)))))));
  }

  return { draw, drawDiff, el, fmt, COLORS };
})();
"""

REPORT_TEMPLATE = """<template id="report-template">
<header><h1 data-slot="title"></h1><p data-slot="subtitle"></p></header>
<section class="alert" data-slot="over" data-testid="over-budget-section" hidden><h2>Over budget: the build raised BudgetExceeded</h2></section>
<section class="cards" data-slot="cards"></section>
<section>
  <h2>Context window <span style="text-transform:none;letter-spacing:0;font-weight:500">\u00b7 <span data-slot="utilization" data-testid="utilization"></span> of the input budget used</span></h2>
  <div class="bar" data-slot="bar"></div>
  <div class="legend" data-slot="legend"></div>
</section>
<section>
  <h2>History units, oldest to newest <span style="text-transform:none;letter-spacing:0;font-weight:500">\u00b7 the strip counts units (a tool call and its results are one unit); the cards above count messages</span></h2>
  <div class="strip" data-slot="strip"></div>
  <div class="axis"><span>oldest</span><span>newest</span></div>
  <div class="legend" data-slot="strip-legend"></div>
</section>
<section class="diff" data-slot="diff" data-testid="diff-section" hidden></section>
<div class="grid2">
<section>
  <h2>Tokens by source and zone</h2>
  <table><thead><tr><th>source</th><th>zone</th><th class="n">tokens in</th><th class="n">tokens out</th><th class="n">units dropped</th><th class="n">compressed</th></tr></thead><tbody data-slot="rows"></tbody></table>
  <table style="margin-top:12px"><thead><tr><th>zone</th><th class="n">kept tokens</th><th class="n">compressed tokens</th><th class="n">dropped tokens</th></tr></thead><tbody data-slot="zones"></tbody></table>
</section>
<section>
  <h2>Decisions</h2>
  <ol class="decisions" data-slot="decisions"></ol>
</section>
</div>
<section>
  <h2>Messages (request order, then removed) \u00b7 click a text to read it whole</h2>
  <table><thead><tr><th class="n">#</th><th>role</th><th>source</th><th>zone</th><th>fate</th><th>by</th><th class="n">tokens</th><th>text</th></tr></thead><tbody data-slot="messages"></tbody></table>
</section>
</template>
"""

PAGE = (
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
    + """</style>
</head>
<body>
<main id="report"></main>
"""
    + REPORT_TEMPLATE
    + """<script type="application/json" id="report-data">%%DATA%%</script>
<script>"""
    + REPORT_JS
    + """
(function () {
  "use strict";
  const data = JSON.parse(document.getElementById("report-data").textContent);
  document.title = data.title;
  window.ctxReport.draw(data, document.getElementById("report"));
})();
</script>
</body>
</html>
"""
)
