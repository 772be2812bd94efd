"""Smoke test of the performance guard (bench/perf.py): the harness compares like with like.

Runs the harness once at quick sizes and checks correctness, never timing:
both sides' windows are within budget, keep the system prompt and start on a
user message, ctxcore never splits a tool call from its results, both sides
count by the same rule, the table has a row per guard, a failed guard row makes
the exit status non-zero, and the docs section is replaced between its markers
only. Also pins that LangChain stays a bench-only dependency.
"""

from __future__ import annotations

import ast
import json
import os
import re
import sys
from dataclasses import replace
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import perf  # noqa: E402
from langchain_side import ExactCl100kCounter, MemoizedCl100kCounter, to_langchain  # noqa: E402
from report_table import markers, replace_section, write_section  # noqa: E402
from workload import as_messages, coding_agent_transcript  # noqa: E402

from ctxcore.model.messages import Message  # noqa: E402


@pytest.fixture(scope="module")
def results() -> perf.Results:
    """One quick run of the whole harness (at most 300 messages, one repetition of everything)."""
    return perf.run(perf.Config.quick(), "pytest smoke")


def test_every_window_is_legal_within_budget_and_comparable(results: perf.Results) -> None:
    """Each cell's ctxcore and LangChain windows fit the budget by the independent count and differ by a few messages."""
    assert len(results.cells) == 3 * 2  # sizes x budgets
    for cell in results.cells:
        ours, theirs = cell["ctxcore_window"], cell["langchain_window"]
        assert ours["tokens"] <= cell["budget"] and theirs["tokens"] <= cell["budget"]
        assert abs(ours["messages"] - theirs["messages"]) <= perf.WINDOW_SLACK
        assert cell["ratio"] > 0


def test_ctxcore_keeps_the_system_prompt_starts_on_a_user_and_never_splits_a_tool_call(results: perf.Results) -> None:
    """The system prompt leads the window, the first non-system message is the user's, every call has its results."""
    ours: list[Message] = results.outputs["ctxcore"]
    assert ours[0].role == "system" and ours[0].text == perf.SYSTEM_PROMPT
    assert next(m for m in ours if m.role != "system").role == "user"
    calls = {c.id for m in ours for c in m.tool_calls}
    assert calls == {m.tool_call_id for m in ours if m.role == "tool"}


def test_the_window_is_the_newest_history() -> None:
    """ctxcore and LangChain keep the newest messages: the appended request ends both windows."""
    dicts = coding_agent_transcript(120, seed=0)
    extra = perf.growth(2, 0)[:1]
    encoding = perf.encoding_of(perf.make_pipeline(8_000).builder().counter)
    _, kept = perf.langchain_next_turn(dicts, extra, 8_000, MemoizedCl100kCounter(encoding))
    _, built, _, _ = perf.ctxcore_next_turn(dicts, extra, 8_000)
    assert built.messages[-1].text == kept[-1].content and "(turn 0)" in kept[-1].content


def test_an_unfair_window_stops_the_run() -> None:
    """A window over budget, or far from LangChain's in size, is a harness error, not a number."""
    with pytest.raises(perf.HarnessError, match="not comparable"):
        perf.check_same_window({"messages": 40}, {"messages": 40 + perf.WINDOW_SLACK + 1}, "here")
    pipeline = perf.make_pipeline(8_000)
    encoding = perf.encoding_of(pipeline.builder().counter)
    built = pipeline.build({"messages": coding_agent_transcript(60, seed=0)})
    with pytest.raises(perf.HarnessError, match="over the 10-token budget"):
        perf.check_ctxcore_output(built, encoding, 10)


def test_langchain_counters_count_like_ctxcore() -> None:
    """Both reference counters give ctxcore's exact count for every message (tool calls included)."""
    from ctxcore_counters.tiktoken_counter import TiktokenCounter

    counter = TiktokenCounter("cl100k_base")
    reference, memoized = ExactCl100kCounter(counter._encoding), MemoizedCl100kCounter(counter._encoding)
    dicts = coding_agent_transcript(80, seed=5)
    ours, theirs = as_messages(dicts), to_langchain(dicts)
    assert any(m.tool_calls for m in ours) and any(m.role == "tool" for m in ours)
    for a, b in zip(ours, theirs, strict=True):
        assert counter.count_message(a) == reference.count_message(b), a.id
    assert counter.count_messages(ours) == reference(theirs) == memoized(theirs) == memoized(theirs)
    assert memoized.tokenized == len(theirs)  # the second call counted nothing again


def test_table_has_a_row_per_guard(results: perf.Results) -> None:
    """Each guard has a row with a numeric ratio, its bound and (at smoke sizes) no verdict."""
    table = perf.render(results).split("\n\n")[1]
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in table.splitlines()[2:]]
    assert [g.key for g in results.guards] == list(perf.GUARDS)
    assert len(rows) == len(perf.GUARDS)
    for row, g in zip(rows, results.guards, strict=True):
        assert re.fullmatch(r"[\d,]+\.\d+× \(.+\)", row[3]), row[3]
        assert row[4] == f"{g.op} {g.bound:g}×" and row[5] == "not judged (smoke sizes)"
        assert g.ratio > 0 and g.met == (g.ratio >= g.bound if g.op == ">=" else g.ratio <= g.bound)
    json.dumps(results.to_json())  # the raw results serialise


def test_a_failed_guard_row_makes_the_exit_status_non_zero(
    results: perf.Results, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    """At the guard's sizes a row whose bound does not hold exits 1, naming it, with the table printed; all met exits 0."""
    easy = {key: (op, 0.0 if op == ">=" else 1e9) for key, (op, _) in perf.GUARDS.items()}

    def main_with(bounds: dict[str, tuple[str, float]]) -> int:
        monkeypatch.setattr(perf, "GUARDS", bounds)
        judged = replace(results, config={**results.config, "judged": True},
                         guards=perf.guards_of(results.cells, perf.Config.quick()))
        monkeypatch.setattr(perf, "run", lambda config, command, log: judged)
        return perf.main(["--no-write"])

    assert main_with(easy) == 0
    assert "✅ met" in capsys.readouterr().out
    assert main_with({**easy, "next_small": (">=", 1e9)}) == 1
    out = capsys.readouterr()
    assert "❌ not met" in out.out and "guard not met: next turn, 60 messages" in out.err


def test_markers_replace_only_the_perf_section(results: perf.Results, tmp_path: Path) -> None:
    """Writing the table changes only the text between the perf markers of docs/performance.md."""
    page = tmp_path / "performance.md"
    original = (ROOT / "docs" / "performance.md").read_text(encoding="utf-8")
    page.write_text(original, encoding="utf-8")
    body = perf.render(results)
    write_section(page, "perf", body)
    written = page.read_text(encoding="utf-8")
    start, end = markers("perf")
    assert written.split(start)[0] == original.split(start)[0]
    assert written.split(end)[1] == original.split(end)[1]
    assert body in written.split(start)[1].split(end)[0]
    write_section(page, "perf", body)
    assert page.read_text(encoding="utf-8") == written  # idempotent


def test_replace_section_rejects_missing_or_repeated_markers() -> None:
    """A page without the markers, with them twice or in the wrong order is an error, not a silent append."""
    start, end = markers("perf")
    assert replace_section(f"a\n{start}\nold\n{end}\nb\n", "perf", "new") == f"a\n{start}\n\nnew\n\n{end}\nb\n"
    for text in ("no markers", f"{start}\n{start}\n{end}", f"{end}\nx\n{start}"):
        with pytest.raises(ValueError, match="marker"):
            replace_section(text, "perf", "new")
    with pytest.raises(ValueError):
        markers("bad name")


def test_main_writes_the_section_and_the_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``perf.py --quick --doc --json`` writes both outputs and exits 0 (smoke sizes judge no guard)."""
    monkeypatch.setattr(perf.Config, "quick", classmethod(
        lambda cls: cls(sizes=(30, 40, 60), budgets=(8_000, 9_000), reps=1, cold_reps=1, judged=False)))
    page, out = tmp_path / "p.md", tmp_path / "r" / "perf.json"
    start, end = markers("perf")
    page.write_text(f"# P\n{start}\nstale table\n{end}\n", encoding="utf-8")
    assert perf.main(["--quick", "--doc", str(page), "--json", str(out)]) == 0
    text = page.read_text(encoding="utf-8")
    assert "| next turn, 60 messages" in text and "stale table" not in text
    data = json.loads(out.read_text(encoding="utf-8"))
    assert [g["key"] for g in data["guards"]] == list(perf.GUARDS)
    assert data["command"] == "python bench/perf.py --quick --doc " + str(page) + " --json " + str(out)


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_langchain_is_never_a_runtime_dependency() -> None:
    """No module of ctxcore or of a plugin imports a peer (LangChain, nanobot, LlamaIndex), and no pyproject depends on one.

    Framework integrations (plugins/integrations/*, e.g. ctxcore-langchain) are the exception by design:
    each is its own distribution whose job is to depend on its framework; nothing else imports them.
    """
    integrations = ROOT / "plugins" / "integrations"
    sources = [p for p in (ROOT / "ctxcore").rglob("*.py")]
    sources += [p for p in (ROOT / "plugins").rglob("*.py")
                if ".egg-info" not in str(p) and not p.is_relative_to(integrations)]
    assert len(sources) > 20
    peers = ("langchain", "nanobot", "llama_index")
    offenders = [str(p.relative_to(ROOT)) for p in sources if any(n.split(".")[0].startswith(peers) for n in _imports(p))]
    assert offenders == []
    for pyproject in [ROOT / "pyproject.toml", *(p for p in (ROOT / "plugins").glob("*/*/pyproject.toml")
                                                  if not p.is_relative_to(integrations))]:
        text = pyproject.read_text(encoding="utf-8").lower()
        assert not any(name in text for name in ("langchain", "nanobot", "llama-index")), pyproject


def test_input_forms_times_every_form(capsys: pytest.CaptureFixture[str]) -> None:
    """bench/input_forms.py builds the same small history in each input form and prints one line per form."""
    import input_forms

    out = input_forms.main(["60", "--cold", "1", "--turns", "1"])
    assert sorted(out) == ["anthropic", "chat", "parts", "responses"]
    assert all(items > 0 and cold > 0 and turn > 0 for items, cold, turn in out.values())
    assert len(capsys.readouterr().out.splitlines()) == 4


def test_retention_bench_measures_every_row_and_writes_its_section(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    """bench/retention.py at a tiny size: every system row, both question kinds, the next-turn table, its docs section.

    The embedding model's rows are skipped here as where its packages are missing: one line says why, and the
    tables name them as not measured (the model itself is checked by the test after this one, where installed).
    """
    import retention

    cases = retention.make_cases(6, seed=1, target_tokens=3_000)
    assert {c.kind for c in cases} == {"lexical", "paraphrased"}
    assert all(c.answer in c.messages[c.evidence_at]["content"] for c in cases)
    assert all(c.evidence_at < 0.9 * len(c.messages) for c in cases)
    monkeypatch.setattr(retention.minilm_embedder, "missing", lambda: "torch not installed")
    results = retention.run(4, 1, (800,), (60,), 3_000, "python bench/retention.py --quick")
    assert set(results["retention"]) == set(retention.SYSTEMS)
    for name, row in results["retention"].items():
        if name in retention.NEEDS_MODEL:
            assert row == {"skipped": "torch not installed"}
            continue
        assert {"lexical", "paraphrased", "all", "tokens"} <= set(row["800"])
        assert row["800"]["tokens"] <= 800
    assert results["next_turn"]["60"]["embedder"] is None
    assert sorted(capsys.readouterr().err.splitlines()) == sorted(
        f"retention: row {name!r} skipped: torch not installed" for name in retention.NEEDS_MODEL)
    page = tmp_path / "recall.md"
    page.write_text("intro\n<!-- bench:retention:start -->\nold\n<!-- bench:retention:end -->\nafter\n", encoding="utf-8")
    write_section(page, retention.SECTION, retention.markdown(results))
    text = page.read_text(encoding="utf-8")
    assert "ctxcore + recall (BM25)" in text and "Next-turn build" in text and text.endswith("after\n")
    assert f"Not measured here: {retention.HYBRID} (torch not installed)." in text


def test_the_bench_embedder_is_the_real_model_offline_and_memoised() -> None:
    """Where make bench installed it: unit-length 384-d vectors, no download allowed, each distinct text embedded once."""
    import minilm_embedder

    if minilm_embedder.missing():
        pytest.skip(f"the bench embedding model: {minilm_embedder.missing()}")
    texts = ["My dentist is Dr. Okafor.", "Who looks after my teeth?", "We cooked pasta with garlic."]
    vectors = minilm_embedder.embed([*texts, texts[0]])
    assert len(vectors) == 4 and all(len(v) == 384 and abs(float(v @ v) - 1.0) < 1e-5 for v in vectors)
    assert vectors[0] is vectors[3] and minilm_embedder.embed(texts[:1])[0] is vectors[0]
    assert float(vectors[0] @ vectors[1]) > float(vectors[2] @ vectors[1])  # the paraphrase is nearer than the filler
    assert os.environ["HF_HUB_OFFLINE"] == os.environ["TRANSFORMERS_OFFLINE"] == "1"


def test_retention_cases_hold_agent_tool_rounds_without_the_answer() -> None:
    """A full-size case has three tool rounds of 4,500-9,000 tokens (about 4 characters each); none holds the answer."""
    import random

    import retention

    case = retention.make_case(random.Random(3), "lexical")
    results = [m for m in case.messages if m["role"] == "tool"]
    assert len(results) == retention.TOOL_ROUNDS
    assert all(4 * 4_500 <= len(m["content"]) <= 4 * 9_000 + 200 for m in results)
    assert all(case.answer not in m["content"] for m in results)
    assert case.answer in case.messages[case.evidence_at]["content"]


def test_the_performance_page_stays_short_enough_to_read() -> None:
    """docs/performance.md is a page a user reads (what is fast, the guard, measuring, limits): at most 250 lines."""
    lines = (ROOT / "docs" / "performance.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 250, f"docs/performance.md has {len(lines)} lines; keep it to 250 (history goes to the git log)"


def test_startup_bench_compares_each_case_with_the_baseline(tmp_path: Path) -> None:
    """bench/startup.py: one real round runs every case; the table has a row per case and flags a row over its bound."""
    import startup

    medians = startup.measure(1)
    assert set(medians) == set(startup.CASES) and all(v > 0 for v in medians.values())
    text, _ = startup.table(medians)
    assert text.count("\n") == len(startup.CASES) + 1 and "| 1.00× |" in text
    slow = {case: (1.0 if case is startup.BASELINE else 3.0) for case in startup.CASES}
    text, ok = startup.table(slow)
    assert not ok and text.count("**over**") == 2
    page = tmp_path / "page.md"
    page.write_text("intro\n<!-- bench:startup:start -->\nold\n<!-- bench:startup:end -->\nend\n", encoding="utf-8")
    assert startup.main(["--rounds", "1", "--write", str(page)]) in (0, 1)
    assert "old" not in page.read_text(encoding="utf-8") and "`import ctxcore`" in page.read_text(encoding="utf-8")
