"""CI smoke of the performance benchmark (bench/perf.py): the harness compares like with like.

Runs the harness once at quick sizes and checks correctness, never timing:
both sides' windows are within budget, keep the system prompt and start on a
user message, ctxcore never splits a tool call from its results, both sides
count by the same rule, the table has a numeric row per target, and the docs
section is replaced between its markers only. Also pins that LangChain stays
a bench-only dependency.
"""

from __future__ import annotations

import ast
import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import perf  # noqa: E402
from langchain_core.messages import HumanMessage, SystemMessage  # noqa: E402
from langchain_side import ExactCl100kCounter, to_langchain  # noqa: E402
from report_table import markers, replace_section, write_section  # noqa: E402
from workload import as_messages, coding_agent_transcript  # noqa: E402

from ctxcore.model.messages import Message  # noqa: E402


@pytest.fixture(scope="module")
def results() -> perf.Results:
    """One quick run of the whole harness (300 messages, one repetition of everything)."""
    return perf.run(perf.Config.quick(), "pytest smoke")


def _lc_counter(results: perf.Results) -> ExactCl100kCounter:
    return ExactCl100kCounter(perf.encoding_of(results.outputs["counter"]))


def test_both_windows_fit_the_budget(results: perf.Results) -> None:
    """Both sides return a window of at most 8,000 tokens, counted by the same exact rule."""
    budget = results.config["budget"]
    ours: list[Message] = results.outputs["ctxcore"]
    assert results.outputs["counter"].count_messages(ours) <= budget
    assert _lc_counter(results)(results.outputs["langchain"]) <= budget
    # and the windows are not trivially small: the budget is mostly used
    assert results.checks["ctxcore_next_turn_output"]["tokens"] > budget // 2
    assert results.checks["langchain_output"]["tokens"] > budget // 2


def test_both_keep_the_system_prompt_and_start_on_a_user_message(results: perf.Results) -> None:
    """The system prompt leads both windows and the first non-system message is the user's."""
    ours: list[Message] = results.outputs["ctxcore"]
    assert ours[0].role == "system" and ours[0].text == perf.SYSTEM_PROMPT
    assert next(m for m in ours if m.role != "system").role == "user"
    kept = results.outputs["langchain"]
    assert isinstance(kept[0], SystemMessage) and kept[0].content == perf.SYSTEM_PROMPT
    assert isinstance(kept[1], HumanMessage)


def test_ctxcore_never_splits_a_tool_call_from_its_results(results: perf.Results) -> None:
    """Every kept tool call has its result kept and every kept result its call."""
    ours: list[Message] = results.outputs["ctxcore"]
    calls = {c.id for m in ours for c in m.tool_calls}
    answered = {m.tool_call_id for m in ours if m.role == "tool"}
    assert calls == answered
    assert calls, "the quick window should hold at least one tool transaction"


def test_the_window_is_the_newest_history() -> None:
    """Both sides keep the newest messages: the last history message ends both windows."""
    res = perf.run(perf.Config(n=120, small_n=60, reps=1, cold_reps=1, langchain_reps=1, count_n=20, count_reps=1))
    ours, kept = res.outputs["ctxcore"], res.outputs["langchain"]
    assert ours[-1].text == kept[-1].content
    assert ours[-1].role == "user" and "(turn 0)" in ours[-1].text


def test_langchain_counter_counts_like_ctxcore() -> None:
    """The reference counter gives ctxcore's exact count for every message (tool calls included)."""
    from ctxcore_counters.tiktoken_counter import TiktokenCounter

    counter = TiktokenCounter("cl100k_base")
    reference = ExactCl100kCounter(counter._encoding)
    dicts = coding_agent_transcript(80, seed=5)
    ours, theirs = as_messages(dicts), to_langchain(dicts)
    assert any(m.tool_calls for m in ours) and any(m.role == "tool" for m in ours)
    for a, b in zip(ours, theirs, strict=True):
        assert counter.count_message(a) == reference.count_message(b), a.id
    assert counter.count_messages(ours) == reference(theirs)


def test_full_count_texts_are_what_ctxcore_tokenizes() -> None:
    """Target 4's reference texts add up, with the fixed overheads, to ctxcore's count."""
    ours, direct, totals = perf.full_count(coding_agent_transcript(30, seed=2), reps=1)
    assert len(ours) == len(direct) == 1
    assert totals["messages"] == 30 and totals["texts"] > 30


def test_table_has_a_numeric_row_per_target(results: perf.Results) -> None:
    """Targets 1-5 each have a row with a numeric ratio and a verdict; target 6 points to its section."""
    table = perf.render(results)
    rows = {int(r[0]): r for r in (
        [c.strip() for c in line.strip("|").split("|")] for line in table.splitlines() if re.match(r"\| \d+ \|", line)
    )}
    assert sorted(rows) == [1, 2, 3, 4, 5, 6]
    for target in range(1, 6):
        ratio = rows[target][4]
        assert re.fullmatch(r"[\d,]+\.\d+×", ratio), ratio
        assert rows[target][6] in ("✅", "❌")
    assert "prompt-cache" in rows[6][1]
    for t in results.targets:
        assert t.ratio > 0 and t.met == (t.ratio >= t.goal if t.op == ">=" else t.ratio <= t.goal)
    json.dumps(results.to_json())  # the raw results serialise


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
    assert markers("cache")[0] in written and markers("cache")[1] in written
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
    """``perf.py --quick --doc --json`` writes both outputs (small sizes to stay quick)."""
    monkeypatch.setattr(perf.Config, "quick", classmethod(
        lambda cls: cls(n=60, small_n=30, reps=1, cold_reps=1, langchain_reps=1, count_n=10, count_reps=1)))
    page, out = tmp_path / "p.md", tmp_path / "r" / "perf.json"
    start, end = markers("perf")
    page.write_text(f"# P\n{start}\nstale table\n{end}\n", encoding="utf-8")
    assert perf.main(["--quick", "--doc", str(page), "--json", str(out)]) == 0
    assert "| 1 |" in page.read_text(encoding="utf-8") and "stale table" not in page.read_text(encoding="utf-8")
    data = json.loads(out.read_text(encoding="utf-8"))
    assert [t["id"] for t in data["targets"]] == [1, 2, 3, 4, 5]
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
    """No module of ctxcore or of a plugin imports langchain, and no pyproject depends on it."""
    sources = [p for p in (ROOT / "ctxcore").rglob("*.py")]
    sources += [p for p in (ROOT / "plugins").rglob("*.py") if ".egg-info" not in str(p)]
    assert len(sources) > 20
    offenders = [str(p.relative_to(ROOT)) for p in sources if any(n.split(".")[0].startswith("langchain") for n in _imports(p))]
    assert offenders == []
    for pyproject in [ROOT / "pyproject.toml", *(ROOT / "plugins").glob("*/*/pyproject.toml")]:
        assert "langchain" not in pyproject.read_text(encoding="utf-8").lower(), pyproject
