"""Tests for `ctx report`: the JSON payload, the self-contained HTML page, and the page in a real headless Chromium."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from ctxcore.errors import BudgetExceeded
from ctxcore.pipeline.spec import Pipeline
from ctxcore.tools.html_report import render_html, report_payload
from tests.test_cli import ROOT, ctx
from tools import chromium

DEMO = ROOT / "examples" / "report-demo.yaml"
# The demo with a window too small for its prompt, tool schemas and current turn: the build raises BudgetExceeded.
TIGHT = "version: 1\nname: tight\nmodel: {context_window: 300, reserve_output_tokens: 100}\n" \
    "counter: {type: tiktoken, encoding: cl100k_base}\nproviders:\n  - type: static_prompt\n" \
    "    text: You are a careful coding agent. Read files before editing them.\n  - {type: history, id: chat}\n" \
    "filters:\n  - token_budget\n"
DEMO_STATE = ROOT / "examples" / "report-state.json"
XSS = "</script><script>alert(1)</script><img src=x onerror=alert(2)>"

pytestmark = pytest.mark.integration


def _report_json(*extra: str, state: Path = DEMO_STATE) -> dict[str, Any]:
    result = ctx("report", str(DEMO), "--state", str(state), "--json", *extra)
    assert result.returncode == 0, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def _hostile_state(tmp_path: Path) -> Path:
    """The demo conversation with a message that tries to break out of the page's script element."""
    state = json.loads(DEMO_STATE.read_text())
    state["messages"][-1]["content"] = f"{XSS} Summarise the change."
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(state))
    return path


class TestPayload:
    def test_superset_of_explain_json(self) -> None:
        """Every key of `ctx explain --json` is in `ctx report --json` with the same value."""
        explain = ctx("explain", str(DEMO), "--state", str(DEMO_STATE), "--json")
        assert explain.returncode == 0, explain.stderr
        report = _report_json()
        for key, value in json.loads(explain.stdout).items():
            assert report[key] == value, key

    def test_bar_fills_the_context_window(self) -> None:
        """The budget bar's segments add up to the context window: sent tokens, free space and the output reserve."""
        data = _report_json()
        assert sum(s["tokens"] for s in data["bar"]) == data["model"]["context_window"] == 3000
        cats = {c: v["tokens"] for c, v in data["categories"].items()}
        assert cats["reserved"] == 600 + 100
        assert cats["free"] == data["budget"] - data["total_tokens"]
        assert cats["tools"] == data["tool_tokens"] > 0
        sent = cats["prompt"] + cats["tools"] + cats["memory"] + cats["history"] + cats.get("framing", 0)
        assert sent == data["total_tokens"]

    def test_units_cover_the_history_with_their_fates(self) -> None:
        """The demo compacts tool results and trims old turns: units are kept, compressed and dropped, oldest first."""
        data = _report_json()
        fates = [u["fate"] for u in data["units"]]
        assert {"kept", "compressed", "dropped"} <= set(fates)
        assert fates[0] == "kept" and fates[1] == "dropped"  # keep_first: 1, then the oldest unit trimmed
        tool_units = [u for u in data["units"] if "tool" in u["roles"]]
        assert all(u["roles"][0] == "assistant" for u in tool_units)  # a call and its result are one unit
        assert data["counts"] == {f: sum(1 for m in data["messages"] if m["fate"] == f) for f in data["counts"]}
        assert data["counts"]["compressed"] > 0 and data["counts"]["dropped"] > 0

    def test_decisions_name_the_filter(self) -> None:
        """Each decision names the step that made it; the texts are those of `ctx explain`."""
        data = _report_json()
        by_kind = {d["kind"]: d for d in data["decision_items"]}
        assert by_kind["dropped"]["by"] == "compaction" and by_kind["compressed"]["by"] == "compaction"
        assert [d["text"] for d in data["decision_items"]] == data["decisions"]

    def test_fast_record_copy_equals_to_dict(self, host: Any) -> None:
        """The payload's copy of the report (records copied field by field) equals BuildReport.to_dict()."""
        from ctxcore.tools.html_report import _report_dict

        p = Pipeline.from_yaml(DEMO, host=host)
        report = p.build(json.loads(DEMO_STATE.read_text())).report
        assert _report_dict(report) == report.to_dict()

    def test_library_render_without_a_pipeline(self, host: Any) -> None:
        """render_html works on any build: without model or history the page still has the data and no reserve."""
        p = Pipeline.from_yaml(DEMO, host=host)
        built = p.build(json.loads(DEMO_STATE.read_text()))
        data = report_payload(built)
        assert "reserved" not in {s["category"] for s in data["bar"]}
        assert sum(u["tokens"] for u in data["units"]) > 0
        page = render_html(built, title="<b>mine</b>")
        assert "<title>&lt;b&gt;mine&lt;/b&gt;</title>" in page and 'id="report-data"' in page


class TestFullText:
    def test_every_message_has_its_whole_text(self) -> None:
        """Each message of the JSON carries its full text (not the 60-character preview), kept or removed."""
        data = _report_json()
        state = json.loads(DEMO_STATE.read_text())
        texts = {m["content"] for m in state["messages"] if isinstance(m.get("content"), str)}
        long_ones = [m for m in data["messages"] if m["text"] and len(m["text"]["text"]) > 60]
        assert long_ones and all(m["text"] is not None for m in data["messages"])
        removed = [m for m in data["messages"] if m["position"] is None]
        assert removed and all(m["text"]["text"] in texts or m["text"]["tool_calls"] for m in removed)

    def test_tool_call_arguments_are_pretty_printed(self) -> None:
        """A tool call's JSON arguments are shown indented, with the call's name and id."""
        data = _report_json()
        calls = [c for m in data["messages"] if m["text"] for c in m["text"]["tool_calls"]]
        assert calls and all(c["name"] and c["id"] for c in calls)
        assert all(c["arguments"] == json.dumps(json.loads(c["arguments"]), indent=2) for c in calls)
        assert any("\n  " in c["arguments"] for c in calls)

    def test_compressions_link_both_ways_with_tokens(self) -> None:
        """A compressed original names its replacement; the replacement lists its originals and tokens before/after."""
        data = _report_json()
        by_id = {m["id"]: m for m in data["messages"]}
        for c in data["compressions"]:
            new = by_id[c["new_id"]]
            assert new["replaces"] == c["original_ids"]
            assert (new["tokens_before"], new["tokens_after"]) == (c["tokens_before"], c["tokens_after"])
            assert all(by_id[i]["into"] == c["new_id"] for i in c["original_ids"])
        assert any(c["stage"] == "tool_results" for c in data["compressions"])


class TestOverBudget:
    def _run(self, tmp_path: Path, *extra: str) -> Any:
        pipeline = tmp_path / "tight.yaml"
        pipeline.write_text(TIGHT)
        return ctx("report", str(pipeline), "--state", str(DEMO_STATE), *extra)

    def test_reports_the_shortfall_instead_of_nothing(self, tmp_path: Path) -> None:
        """An over-budget build still gets a report: shortfall, protected size, what would have to go; exit 0 with a warning."""
        result = self._run(tmp_path, "--json")
        assert result.returncode == 0, result.stderr
        assert "over budget by" in result.stderr
        data = json.loads(result.stdout)
        over = data["over_budget"]
        assert over["shortfall"] == over["required"] - over["budget"] > 0
        kept = [m for m in data["messages"] if m["position"] is not None]
        assert len(kept) == len(data["messages"])  # the providers' output, unfiltered
        protected = sum(m["tokens"] for m in kept if m["zone"] == "protected") + data["tool_tokens"]
        assert protected <= over["protected_tokens"] <= protected + 10  # plus the reply priming
        needed = [c for c in over["would_go"] if c["needed"]]
        tokens = [c["tokens"] for c in over["would_go"]]
        assert tokens == sorted(tokens, reverse=True)
        assert over["would_go_tokens"] == sum(c["tokens"] for c in needed)
        assert over["would_go_tokens"] >= over["shortfall"] or over["uncovered"] > 0
        assert sum(c["tokens"] for c in needed[:-1]) < over["shortfall"]

    def test_a_build_that_fits_has_no_shortfall(self) -> None:
        """`over_budget` is null for a build that fits."""
        assert _report_json()["over_budget"] is None


class TestHtmlFile:
    def test_self_contained_and_escaped(self, tmp_path: Path) -> None:
        """The page has no external URL, and hostile message text cannot close the data script element."""
        out = tmp_path / "r.html"
        result = ctx("report", str(DEMO), "--state", str(_hostile_state(tmp_path)), "--html", str(out))
        assert result.returncode == 0, result.stderr
        page = out.read_text()
        for needle in ("http://", "https://", "src=\"", "<link", "@import", "url("):
            assert needle not in page, needle
        assert "</script><script>alert(1)" not in page and "<img" not in page
        data_text = page.split('id="report-data">', 1)[1].split("</script>", 1)[0]
        assert json.loads(data_text)["messages"]  # the whole JSON sits before the first </script>

    def test_credentials_are_redacted(self, tmp_path: Path) -> None:
        """A key or bearer token in a tool result appears neither in the page nor in the JSON."""
        state = json.loads(DEMO_STATE.read_text())
        state["messages"][-3]["content"] = "Bearer abcdefghijklmnop sk-proj-CANARY1234567890 " + state["messages"][-3]["content"]
        path = tmp_path / "secret.json"
        path.write_text(json.dumps(state))
        out = tmp_path / "r.html"
        result = ctx("report", str(DEMO), "--state", str(path), "--html", str(out), "--json")
        assert result.returncode == 0, result.stderr
        for text in (out.read_text(), result.stdout):
            assert "CANARY" not in text and "abcdefghijklmnop" not in text
            assert "[REDACTED]" in text

    def test_needs_an_output(self) -> None:
        """Without --html or --json the command exits 1 saying what to give."""
        result = ctx("report", str(DEMO), "--state", str(DEMO_STATE))
        assert result.returncode == 1 and "give --html OUT.html, --json, or both" in result.stderr

    def test_unwritable_output(self, tmp_path: Path) -> None:
        """An output path in a missing directory exits 1 naming the file."""
        out = tmp_path / "missing" / "r.html"
        result = ctx("report", str(DEMO), "--state", str(DEMO_STATE), "--html", str(out))
        assert result.returncode == 1 and f"cannot write {out}" in result.stderr


# ---------------------------------------------------------------- Chromium
@pytest.fixture
def page() -> Iterator[Any]:
    """A headless Chromium page; fails in CI when the browser is missing, skips elsewhere."""
    reason = chromium.missing()
    if reason:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(f"Chromium is required in CI: {reason}", pytrace=False)
        pytest.skip(reason)
    with chromium.browser_page() as p:
        yield p


def _open(page: Any, html: Path) -> dict[str, list[str]]:
    """Load ``html`` from disk, recording console errors, page errors, dialogs and off-disk requests."""
    seen: dict[str, list[str]] = {"console": [], "errors": [], "dialogs": [], "requests": []}
    page.on("console", lambda m: seen["console"].append(m.text) if m.type in ("error", "warning") else None)
    page.on("pageerror", lambda e: seen["errors"].append(str(e)))
    page.on("dialog", lambda d: (seen["dialogs"].append(d.message), d.dismiss()))
    page.on("request", lambda r: None if r.url.startswith(("file:", "data:")) else seen["requests"].append(r.url))
    page.goto(html.resolve().as_uri())
    page.wait_for_selector("[data-testid=total-tokens]")
    return seen


def _num(text: str) -> int:
    return int(text.replace(",", ""))


def _save_artifact(page: Any, tmp_path: Path) -> Path:
    shot = tmp_path / "report.png"
    page.screenshot(path=str(shot), full_page=True)
    target = os.environ.get("CTXCORE_ARTIFACTS")
    if target:
        Path(target).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(target) / "report.png")
    return shot


class TestInChromium:
    def test_numbers_shown_equal_the_report(self, page: Any, tmp_path: Path) -> None:
        """The page loads from disk without errors or requests, and every number it shows is the report's."""
        html = tmp_path / "report.html"
        data = _report_json("--html", str(html))  # one build: the page and the JSON it must show
        seen = _open(page, html)

        def text(testid: str) -> str:
            return str(page.get_by_test_id(testid).inner_text())

        assert _num(text("total-tokens")) == data["total_tokens"]
        assert _num(text("budget")) == data["budget"]
        assert float(page.get_by_test_id("utilization").get_attribute("data-value")) == pytest.approx(data["utilization"])
        for fate, n in data["counts"].items():
            assert _num(text(f"count-{fate}")) == n, fate
        for fate, n in data["unit_counts"].items():
            assert _num(text(f"units-{fate}")) == n, fate
            assert _num(text(f"unit-messages-{fate}")) == data["unit_messages"][fate], fate
        for cat, v in data["categories"].items():
            if v["tokens"]:
                assert _num(text(f"cat-{cat}")) == v["tokens"], cat
        segments = page.eval_on_selector_all("[data-testid=bar-segment]", "els => els.map(e => [e.dataset.category, e.dataset.source, +e.dataset.tokens])")
        assert segments == [[s["category"], s["source"], s["tokens"]] for s in data["bar"]]
        units = page.eval_on_selector_all("[data-testid=unit]", "els => els.map(e => [e.dataset.fate, +e.dataset.tokens])")
        assert units == [[u["fate"], u["tokens"]] for u in data["units"]]
        rows = page.eval_on_selector_all("[data-testid=row]", """els => els.map(e => ({source: e.dataset.source, zone: e.dataset.zone,
            ...Object.fromEntries([...e.querySelectorAll('[data-col]')].map(c => [c.dataset.col, +c.textContent.replace(/,/g, '')]))}))""")
        assert rows == data["rows"]
        zones = page.eval_on_selector_all("[data-testid=zone]", """els => Object.fromEntries(els.map(e => [e.dataset.zone,
            Object.fromEntries([...e.querySelectorAll('[data-col]')].map(c => [c.dataset.col, +c.textContent.replace(/,/g, '')]))]))""")
        assert zones == {z: {k: t[k] for k in ("kept_tokens", "compressed_tokens", "dropped_tokens")} for z, t in data["by_zone"].items()}
        messages = page.eval_on_selector_all("[data-testid=message]", "els => els.map(e => [e.dataset.id, e.querySelector('[data-col=tokens]').textContent])")
        assert [(i, _num(t)) for i, t in messages] == [(m["id"], m["tokens"]) for m in data["messages"]]
        decisions = page.eval_on_selector_all("[data-testid=decision] .text", "els => els.map(e => e.textContent)")
        assert decisions == data["decisions"]
        assert seen == {"console": [], "errors": [], "dialogs": [], "requests": []}
        assert _save_artifact(page, tmp_path).stat().st_size > 10_000

    def test_hostile_message_text_is_shown_not_run(self, page: Any, tmp_path: Path) -> None:
        """A message with </script><script>alert(1)</script> shows as text; no dialog opens and no script error occurs."""
        html = tmp_path / "hostile.html"
        assert ctx("report", str(DEMO), "--state", str(_hostile_state(tmp_path)), "--html", str(html)).returncode == 0
        seen = _open(page, html)
        previews = page.eval_on_selector_all("[data-testid=message-text] summary", "els => els.map(e => e.textContent)")
        assert any(p.startswith("</script><script>alert(1)") for p in previews)
        page.eval_on_selector_all("[data-testid=message-text]", "els => els.forEach(e => { e.open = true; })")
        full = page.eval_on_selector_all("[data-testid=full-text]", "els => els.map(e => e.textContent)")
        assert f"{XSS} Summarise the change." in full
        assert page.eval_on_selector_all("img", "els => els.length") == 0
        assert seen == {"console": [], "errors": [], "dialogs": [], "requests": []}


    def test_full_text_expands_and_compressions_link(self, page: Any, tmp_path: Path) -> None:
        """Opening a message shows its whole text and arguments as in the JSON; a compression link opens the replacement."""
        html = tmp_path / "report.html"
        data = _report_json("--html", str(html))
        seen = _open(page, html)
        longest = max((m for m in data["messages"] if m["text"]), key=lambda m: len(m["text"]["text"]))
        row = page.locator(f"tr[data-id='{longest['id']}']")
        assert not row.get_by_test_id("full-text").is_visible()
        row.locator("summary").click()
        assert row.get_by_test_id("full-text").text_content() == longest["text"]["text"]
        shown_args = page.eval_on_selector_all("[data-testid=tool-arguments]", "els => els.map(e => e.textContent)")
        assert shown_args == [c["arguments"] for m in data["messages"] if m["text"] for c in m["text"]["tool_calls"]]
        original = next(m for m in data["messages"] if m["fate"] == "compressed")
        page.locator(f"tr[data-id='{original['id']}'] [data-testid=replaced-by]").click()
        target = page.locator(f"tr[data-id='{original['into']}']")
        assert target.locator("details").evaluate("d => d.open")
        before_after = target.get_by_test_id("compression")
        replacement = next(m for m in data["messages"] if m["id"] == original["into"])
        assert (int(before_after.get_attribute("data-before")), int(before_after.get_attribute("data-after"))) == (
            replacement["tokens_before"], replacement["tokens_after"])
        assert seen == {"console": [], "errors": [], "dialogs": [], "requests": []}

    def test_diff_section_shows_the_diff_json(self, page: Any, tmp_path: Path) -> None:
        """`ctx diff --html`: the page's diff section shows the numbers and the explanation of `--json`."""
        state = json.loads(DEMO_STATE.read_text())
        edited = json.loads(json.dumps(state))
        edited["messages"][-5]["content"] = "Something else entirely."
        a, b = tmp_path / "a.json", tmp_path / "b.json"
        a.write_text(json.dumps(state))
        b.write_text(json.dumps(edited))
        html = tmp_path / "diff.html"
        result = ctx("diff", "--pipeline", str(DEMO), str(a), str(b), "--json", "--html", str(html))
        assert result.returncode == 0, result.stderr
        d = json.loads(result.stdout)
        seen = _open(page, html)
        assert page.get_by_test_id("diff-explanation").inner_text() == d["explanation"]
        assert _num(page.get_by_test_id("diff-common-messages").inner_text()) == d["prefix"]["common_messages"]
        assert _num(page.get_by_test_id("diff-common-tokens").inner_text()) == d["prefix"]["common_tokens"]
        assert _num(page.get_by_test_id("diff-tokens-delta").inner_text().replace("+", "")) == d["tokens_delta"]
        for key in ("entered", "left", "compressed", "changed"):
            assert _num(page.get_by_test_id(f"diff-count-{key}").inner_text()) == len(d[key]), key
        rows = page.eval_on_selector_all("[data-testid=diff-source]", """els => els.map(e => [e.dataset.source,
            ...[...e.querySelectorAll('[data-col]')].map(c => +c.textContent.replace(/[,+]/g, ''))])""")
        assert rows == [[r["source"], r["a"], r["b"], r["delta"]] for r in d["by_source"]]
        assert seen == {"console": [], "errors": [], "dialogs": [], "requests": []}

    def test_over_budget_page_shows_the_shortfall(self, page: Any, tmp_path: Path) -> None:
        """The page of an over-budget build shows the shortfall, protected size and what must go, as in the JSON."""
        pipeline = tmp_path / "tight.yaml"
        pipeline.write_text(TIGHT)
        html = tmp_path / "over.html"
        result = ctx("report", str(pipeline), "--state", str(DEMO_STATE), "--json", "--html", str(html))
        assert result.returncode == 0, result.stderr
        over = json.loads(result.stdout)["over_budget"]
        seen = _open(page, html)
        for testid, key in (("shortfall", "shortfall"), ("required", "required"), ("over-budget", "budget"),
                            ("protected-tokens", "protected_tokens"), ("would-go-tokens", "would_go_tokens")):
            assert _num(page.get_by_test_id(testid).inner_text()) == over[key], key
        rows = page.eval_on_selector_all("[data-testid=would-go]", "els => els.map(e => [+e.dataset.tokens, e.classList.contains('needed')])")
        assert rows == [[c["tokens"], c["needed"]] for c in over["would_go"]]
        assert seen == {"console": [], "errors": [], "dialogs": [], "requests": []}


# ---------------------------------------------------------------- properties
def _fresh_host() -> Any:
    import ctxcore_counters.plugin
    import ctxcore_filters.plugin
    import ctxcore_providers.plugin

    from ctxcore.testing import fresh_host

    return fresh_host(
        ("ctxcore-providers", ctxcore_providers.plugin),
        ("ctxcore-filters", ctxcore_filters.plugin),
        ("ctxcore-counters", ctxcore_counters.plugin),
    )


_turn = st.tuples(st.integers(1, 60), st.integers(0, 2), st.integers(1, 400), st.booleans())


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(turns=st.lists(_turn, min_size=1, max_size=12), window=st.integers(400, 3000), with_history=st.booleans())
def test_units_partition_the_history(turns: list[tuple[int, int, int, bool]], window: int, with_history: bool) -> None:
    """Whatever is kept, compressed or dropped, every history message is in exactly one unit and the bar fills the window."""
    from ctxcore.engine.builder import coerce_messages
    from ctxcore.tools.html_report import pipeline_context

    raw: list[dict[str, Any]] = []
    for n, (words, calls, result_words, answer) in enumerate(turns):
        raw.append({"role": "user", "content": " ".join(["ask"] * words)})
        if calls:
            ids = [f"c{n}_{k}" for k in range(calls)]
            raw.append({"role": "assistant", "content": None, "tool_calls": [
                {"id": i, "type": "function", "function": {"name": "f", "arguments": "{}"}} for i in ids]})
            raw.extend({"role": "tool", "tool_call_id": i, "content": " ".join(["out"] * result_words)} for i in ids)
        if answer or not calls:
            raw.append({"role": "assistant", "content": "done " * 3})
    raw.append({"role": "user", "content": "next"})
    p = Pipeline.from_dict({
        "version": 1, "model": {"context_window": window, "reserve_output_tokens": 100},
        "providers": [{"type": "static_prompt", "text": "Be brief."}, {"type": "history", "id": "chat"}],
        "filters": [{"type": "compaction", "trigger_ratio": 0.7, "target_ratio": 0.5, "on_overflow": "warn",
                     "steps": [{"kind": "tool_results", "min_tokens": 20}, {"kind": "trim", "keep_first": 1, "keep_last": 2}]},
                    "token_budget"],
    }, host=_fresh_host())
    messages = coerce_messages(raw)
    try:
        built = p.build({"messages": messages})
    except BudgetExceeded:
        event("over budget")
        return  # the newest turn alone does not fit: nothing to draw
    model, kinds = pipeline_context(p)
    data = report_payload(built, model=model, source_kinds=kinds, history=messages if with_history else None)
    history_ids = [m["id"] for m in data["messages"] if m["zone"] == "dynamic"]
    unit_ids = [i for u in data["units"] for i in u["ids"]]
    event(f"fates {sorted(set(u['fate'] for u in data['units']))}")
    assert sorted(unit_ids) == sorted(history_ids)
    assert sum(s["tokens"] for s in data["bar"]) == window
    assert sum(data["unit_counts"].values()) == len(data["units"])
