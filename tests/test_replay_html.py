"""Tests for `ctx replay --html`: the page's data, every call's report, and the page in a real headless Chromium."""

from __future__ import annotations

import json
import os
import random
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctxcore import Pipeline
from ctxcore.tools.html_report import pipeline_context, report_payload
from ctxcore.tools.replay_html import _delta, _unpack, call_report, replay_page
from tests.test_cli import ROOT, ctx
from tools import chromium

sys.path.insert(0, str(ROOT / "bench"))
from workload import coding_agent_transcript  # noqa: E402

WORDS = ("parse token list value error index buffer stream config module import return class function test "
         "assert result cache window budget request model filter provider message source zone unit").split()


def big_session(calls: int, seed: int = 0) -> list[dict[str, Any]]:
    """A coding-agent session of ``calls`` model calls and five messages per call.

    Each step is a user request, the assistant calling three tools at once and
    the three results (the next request follows the results), so a session of
    400 calls has 2,000 messages. Seeded: the same session every run.
    """
    rng = random.Random(seed)

    def prose(low: int, high: int) -> str:
        return " ".join(rng.choice(WORDS) for _ in range(rng.randint(low, high)))

    out: list[dict[str, Any]] = []
    for n in range(calls):
        out.append({"role": "user", "content": f"Step {n}: " + prose(8, 30)})
        ids = [f"call_{n}_{k}" for k in range(3)]
        out.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": i, "type": "function", "function": {"name": name, "arguments": f'{{"path": "src/m{n % 17}.py", "step": {n}}}'}}
            for i, name in zip(ids, ("read_file", "run_tests", "grep"), strict=True)]})
        out.extend({"role": "tool", "tool_call_id": i, "content": prose(20, 260)} for i in ids)
    return out




sys.path.insert(0, str(ROOT / "bench"))

PIPELINE = ROOT / "tests" / "data" / "replay-pipeline.yaml"
XSS = "</script><script>alert(1)</script><img src=x onerror=alert(2)>"
pytestmark = pytest.mark.integration


def _embedded(page: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(page.split('id="replay-data">', 1)[1].split("</script>", 1)[0])
    return data


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One `ctx replay --html --json` run of a compacting session (a hostile message in it): page path, JSON, embedded data."""
    tmp = tmp_path_factory.mktemp("replay-html")
    messages = coding_agent_transcript(90)
    messages[-2] = {**messages[-2], "content": f"{XSS} {messages[-2].get('content') or ''}"} if messages[-2]["role"] == "user" \
        else messages[-2]
    first_user = next(i for i, m in enumerate(messages) if m["role"] == "user")
    messages[first_user] = {**messages[first_user], "content": f"{XSS} please"}
    session = tmp / "session.json"
    session.write_text(json.dumps({"messages": messages}))
    html = tmp / "replay.html"
    result = ctx("replay", str(session), "--pipeline", str(PIPELINE), "--html", str(html), "--json")
    assert result.returncode == 0, result.stderr
    return {"html": html, "json": json.loads(result.stdout), "data": _embedded(html.read_text()), "messages": messages}


class _Recording:
    """A builder that remembers every build (to compare the page's reports with report_payload of the same builds)."""

    def __init__(self, builder: Any) -> None:
        self._builder = builder
        self.builds: list[Any] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._builder, name)

    def build(self, *args: Any, **kwargs: Any) -> Any:
        built = self._builder.build(*args, **kwargs)
        self.builds.append(built)
        return built


class TestPayload:
    def test_every_call_report_is_the_builds_report(self, host: Any) -> None:
        """Each call's report, rebuilt from the page's encoding, equals report_payload of that call's build."""
        p = Pipeline.from_yaml(PIPELINE, host=host)
        recording = _Recording(p.builder())
        model, kinds = pipeline_context(p)
        messages = coding_agent_transcript(60)
        _, payload = replay_page(recording, messages, model=model, source_kinds=kinds)  # type: ignore[arg-type]
        assert len(recording.builds) == len(payload["calls"]) > 10
        texts = payload["texts"]
        for i, built in enumerate(recording.builds):
            expected = json.loads(json.dumps(report_payload(built, model=model, source_kinds=kinds, title=f"call {i}",
                                                            texts=False, diff=payload["reports"][i]["diff"])))
            got = call_report(payload, i)
            for m in got["messages"]:
                m["text"] = None
            assert got == expected, i
            sent = {m.id for m in built.messages}
            assert all(texts[i_] for i_ in sent)

    def test_timeline_adds_up(self, run: dict[str, Any]) -> None:
        """Per call, the stacked parts sum to the input tokens; costs accumulate to the totals; markers match reductions."""
        data = run["data"]
        calls = data["calls"]
        for c in calls:
            assert sum(s["tokens"] for s in c["segments"]) + c["tool_tokens"] + c["framing"] == c["input_tokens"]
            assert sum(r["count"] for r in c["reduction_markers"]) == c["new_reductions"]
            assert all(r["saved"] > 0 for r in c["reduction_markers"])
            assert c["target"] < c["trigger"] <= c["budget"]
        assert calls[-1]["cumulative_cost"] == pytest.approx(data["totals"]["cost"])
        assert calls[-1]["baseline_cumulative_cost"] == pytest.approx(data["baseline"]["cost"])
        assert data["summary"]["cost"] == data["totals"]["cost"] and data["summary"]["reductions"] > 0
        assert data["baseline"]["cost"] > data["totals"]["cost"]  # water marks keep the cache warm

    def test_json_is_the_page_data(self, run: dict[str, Any]) -> None:
        """`--json` with `--html` prints the page's data (without the texts and the call reports)."""
        data = run["data"]
        assert run["json"] == {k: v for k, v in data.items() if k not in ("texts", "reports")}

    def test_self_contained_and_escaped(self, run: dict[str, Any]) -> None:
        """Outside the data (message text may quote URLs), no URL but the SVG namespace; hostile text cannot close the data element."""
        page = run["html"].read_text()
        head, rest = page.split('id="replay-data">', 1)
        data, tail = rest.split("</script>", 1)
        code = (head + tail).replace("http://www.w3.org/2000/svg", "")
        for needle in ("http://", "https://", "<link", "@import", "url(", "src="):
            assert needle not in code, needle
        assert "</script><script>alert(1)" not in page and "<img" not in page
        assert json.loads(data)["reports"]


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
    seen: dict[str, list[str]] = {"console": [], "errors": [], "dialogs": [], "requests": []}
    page.on("console", lambda m: seen["console"].append(m.text) if m.type in ("error", "warning") else None)
    page.on("pageerror", lambda e: seen["errors"].append(str(e)))
    page.on("dialog", lambda d: (seen["dialogs"].append(d.message), d.dismiss()))
    page.on("request", lambda r: None if r.url.startswith(("file:", "data:")) else seen["requests"].append(r.url))
    page.goto(html.resolve().as_uri())
    page.wait_for_selector("body[data-ready='1']")
    return seen


def _num(text: str) -> int:
    return int(text.replace(",", ""))


CLEAN = {"console": [], "errors": [], "dialogs": [], "requests": []}


class TestInChromium:
    def test_numbers_shown_equal_the_json(self, page: Any, run: dict[str, Any]) -> None:
        """Cards, stacked segments, cached/uncached bars, costs and reduction markers are the JSON's numbers."""
        seen = _open(page, run["html"])
        data = run["json"]
        s = data["summary"]
        for testid, key in (("cost", "cost"), ("saved-share", "saved_share"), ("cached-share", "cached_share"),
                            ("mean-fill", "mean_fill"), ("over-budget", "over_budget"), ("reductions", "reductions")):
            assert float(page.get_by_test_id(testid).get_attribute("data-value")) == pytest.approx(s[key]), key
        segments = page.eval_on_selector_all("[data-testid=segment]", "els => els.map(e => [+e.dataset.call, e.dataset.key, +e.dataset.tokens])")
        expected = []
        for i, c in enumerate(data["calls"]):
            parts = [("tool schemas", c["tool_tokens"])] + [(f"{g['source'] or '—'} ({g['zone']})", g["tokens"]) for g in c["segments"]]
            parts.append(("framing", c["framing"]))
            expected.extend([i, k, t] for k, t in parts if t)
        assert segments == expected
        cached = page.eval_on_selector_all("[data-testid=cached]", "els => els.map(e => +e.dataset.tokens)")
        uncached = page.eval_on_selector_all("[data-testid=uncached]", "els => els.map(e => +e.dataset.tokens)")
        assert cached == [c["cached_tokens"] for c in data["calls"]]
        assert uncached == [c["input_tokens"] - c["cached_tokens"] for c in data["calls"]]
        costs = page.eval_on_selector_all("[data-testid=call-cost]", "els => els.map(e => +e.dataset.cost)")
        assert costs == pytest.approx([c["cost"] for c in data["calls"]])
        markers = page.eval_on_selector_all("[data-testid=reduction]", "els => els.map(e => [+e.dataset.call, +e.dataset.saved])")
        assert markers == [[i, sum(r["saved"] for r in c["reduction_markers"])] for i, c in enumerate(data["calls"]) if c["reduction_markers"]]
        lines = page.eval_on_selector_all("polyline[data-line]", "els => els.map(e => e.dataset.line)")
        assert {"budget", "trigger", "target", "cumulative", "baseline"} <= set(lines)
        assert seen == CLEAN

    def test_clicking_a_call_opens_its_report(self, page: Any, run: dict[str, Any]) -> None:
        """A click on a call opens that call's full report; its numbers are the call's report, diff included."""
        seen = _open(page, run["html"])
        data = run["data"]
        assert not page.get_by_test_id("call-report").is_visible()
        i = max(range(len(data["calls"])), key=lambda k: data["calls"][k]["new_reductions"])
        page.get_by_test_id("call").nth(i).click()
        assert page.get_by_test_id("call-title").get_attribute("data-index") == str(i)
        expected = call_report(data, i)
        box = page.get_by_test_id("call-report")
        assert _num(box.get_by_test_id("total-tokens").inner_text()) == expected["total_tokens"] == data["calls"][i]["input_tokens"]
        for fate, n in expected["counts"].items():
            assert _num(box.get_by_test_id(f"count-{fate}").inner_text()) == n, fate
        rows = page.eval_on_selector_all("#call-report [data-testid=message]", "els => els.map(e => [e.dataset.id, e.querySelector('[data-col=tokens]').textContent])")
        assert [(r, _num(t)) for r, t in rows] == [(m["id"], m["tokens"]) for m in expected["messages"]]
        units = page.eval_on_selector_all("#call-report [data-testid=unit]", "els => els.map(e => [e.dataset.fate, +e.dataset.tokens])")
        assert units == [[u["fate"], u["tokens"]] for u in expected["units"]]
        diff = expected["diff"]
        assert _num(box.get_by_test_id("diff-common-tokens").inner_text()) == diff["prefix"]["common_tokens"] == data["calls"][i]["cached_tokens"]
        for key in ("entered", "left", "compressed", "changed"):
            assert _num(box.get_by_test_id(f"diff-count-{key}").inner_text()) == len(diff[key]), key
        assert box.get_by_test_id("diff-explanation").inner_text() == diff["explanation"]
        page.get_by_test_id("call").nth(0).click()  # going back to an earlier call rebuilds it from the start
        assert _num(box.get_by_test_id("total-tokens").inner_text()) == data["calls"][0]["input_tokens"]
        assert seen == CLEAN

    def test_hostile_message_text_runs_nothing(self, page: Any, run: dict[str, Any]) -> None:
        """A `</script>` message is shown as text in a call's report; no dialog, script error or image."""
        seen = _open(page, run["html"])
        page.get_by_test_id("call").last.click()
        page.eval_on_selector_all("#call-report [data-testid=message-text]", "els => els.forEach(e => { e.open = true; })")
        full = page.eval_on_selector_all("#call-report [data-testid=full-text]", "els => els.map(e => e.textContent)")
        assert f"{XSS} please" in full
        assert page.eval_on_selector_all("img", "els => els.length") == 0
        assert seen == CLEAN


@pytest.mark.skipif(chromium.missing() is not None and os.environ.get("CI", "").lower() not in ("1", "true", "yes"),
                    reason="Chromium is not installed")
def test_a_long_session_page_loads_and_renders(page: Any, tmp_path: Path) -> None:
    """A 400-call, 2,000-message session's page (100 calls unless CTXCORE_REPLAY_THOROUGH=1) loads and opens its last call.

    Size and times are printed and written to $CTXCORE_ARTIFACTS/replay-scale.json; docs/report.md records them.
    No timer is asserted: the machine is shared.
    """
    calls = 400 if os.environ.get("CTXCORE_REPLAY_THOROUGH") == "1" else 100
    session = tmp_path / "long.json"
    session.write_text(json.dumps({"messages": big_session(calls)}))
    html = tmp_path / "long.html"
    started = time.perf_counter()
    result = ctx("replay", str(session), "--pipeline", str(PIPELINE), "--html", str(html))
    generate = time.perf_counter() - started
    assert result.returncode == 0, result.stderr
    started = time.perf_counter()
    seen = _open(page, html)
    load = time.perf_counter() - started
    assert page.get_by_test_id("call").count() == calls
    started = time.perf_counter()
    page.get_by_test_id("call").last.click()
    page.wait_for_selector("#call-report [data-testid=total-tokens]")
    open_last = time.perf_counter() - started
    rows = page.eval_on_selector_all("#call-report [data-testid=message]", "els => els.length")
    assert rows == len(call_report(_embedded(html.read_text()), calls - 1)["messages"]) >= 5 * calls
    numbers = {"calls": calls, "messages": 5 * calls, "page_bytes": html.stat().st_size, "generate_seconds": round(generate, 1),
               "load_seconds": round(load, 2), "open_last_call_seconds": round(open_last, 2)}
    print(json.dumps(numbers))
    target = os.environ.get("CTXCORE_ARTIFACTS")
    if target:
        Path(target).mkdir(parents=True, exist_ok=True)
        (Path(target) / "replay-scale.json").write_text(json.dumps(numbers))
    assert seen == CLEAN


# ---------------------------------------------------------------- properties

_record = st.fixed_dictionaries({"id": st.sampled_from("abcdef"), "fate": st.sampled_from(["kept", "dropped"]),
                                 "tokens": st.integers(0, 9)})


@given(lists=st.lists(st.lists(_record, max_size=8), min_size=1, max_size=6))
def test_delta_encoding_round_trips(lists: list[list[dict[str, Any]]]) -> None:
    """Any sequence of lists, each stored as a change from the one before, is rebuilt exactly."""
    previous: list[dict[str, Any]] | None = None
    rebuilt: list[dict[str, Any]] = []
    for current in lists:
        head, tail, middle = _delta(current, previous)["$d"]
        rebuilt = rebuilt[:head] + _unpack(middle) + rebuilt[len(rebuilt) - tail:]
        assert rebuilt == current
        assert head + tail <= len(current)
        previous = current
