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
    assert len(results.cells) == 3 * 2 * 2  # sizes x budgets x input forms
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


def test_peers_report_legal_windows(results: perf.Results) -> None:
    """Every installed peer's window was checked legal and counted by the same independent count."""
    for row in results.peers:
        assert row["window"]["messages"] >= 2 and row["window"]["tokens"] > 0 and row["peer_s"] > 0


def test_the_window_is_the_newest_history() -> None:
    """ctxcore (dict and Message input) and LangChain keep the newest messages: the appended request ends every window."""
    dicts = coding_agent_transcript(120, seed=0)
    extra = perf.growth(2, 0)[:1]
    encoding = perf.encoding_of(perf.make_pipeline(8_000).builder().counter)
    _, kept = perf.langchain_next_turn(dicts, extra, 8_000, MemoizedCl100kCounter(encoding))
    for form in perf.FORMS:
        _, built, _, _ = perf.ctxcore_next_turn(dicts, extra, 8_000, form)
        assert built.messages[-1].text == kept[-1].content and "(turn 0)" in kept[-1].content


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


def test_table_has_a_numeric_row_per_goal(results: perf.Results) -> None:
    """Goals 1-5 and 7 (6 needs the counter-speed run) each have a row with a numeric ratio and a verdict."""
    goals = perf.render(results).split("\n\n")[1]  # the first table: the goals
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in goals.splitlines() if re.match(r"\| \d+ \|", line)]
    assert [int(r[0]) for r in rows] == [1, 2, 3, 3, 4, 5, 7]
    for row in rows:
        assert re.fullmatch(r"[\d,]+\.\d+×", row[4]), row[4]
        assert row[6] in ("✅ met", "❌ not met")
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
        lambda cls: cls(sizes=(30, 40, 60), budgets=(8_000, 9_000), reps=1, cold_reps=1, replay_turns=5, peer_n=30,
                        llamaindex_n=20, counter_speed=False)))
    page, out = tmp_path / "p.md", tmp_path / "r" / "perf.json"
    start, end = markers("perf")
    page.write_text(f"# P\n{start}\nstale table\n{end}\n", encoding="utf-8")
    assert perf.main(["--quick", "--doc", str(page), "--json", str(out)]) == 0
    assert "| 1 |" in page.read_text(encoding="utf-8") and "stale table" not in page.read_text(encoding="utf-8")
    data = json.loads(out.read_text(encoding="utf-8"))
    assert [t["id"] for t in data["targets"]] == [1, 2, 3, 3, 4, 5, 7]
    assert data["command"] == "python bench/perf.py --quick --doc " + str(page) + " --json " + str(out)


def test_cells_prints_goal_1s_cells_at_the_given_sizes_and_writes_nothing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    """``perf.py --cells 30,40``: both budgets x both forms at those sizes, LangChain in the same process, a table."""
    def no_write(*args: object) -> None:
        raise AssertionError("--cells must write nothing")

    monkeypatch.setattr(perf, "write_section", no_write)
    before = perf.JSON_OUT.stat().st_mtime_ns if perf.JSON_OUT.exists() else None
    assert perf.main(["--cells", "30,40"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if re.match(r"\| \d", line)]
    assert [row.split(" | ")[:3] for row in rows] == [
        [f"| {n}", f"{b:,}", form] for b in (8_000, 128_000) for n in (30, 40) for form in ("dict", "Message")
    ]
    assert all(re.search(r"\| \d+\.\d\dx \|$", row) for row in rows)
    assert (perf.JSON_OUT.stat().st_mtime_ns if perf.JSON_OUT.exists() else None) == before
    with pytest.raises(SystemExit):
        perf.main(["--cells", "0"])


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


@pytest.mark.parametrize("budget", [2_000, 8_000])
def test_the_floor_keeps_langchains_window(budget: int) -> None:
    """bench/floor.py's floor does the job it is the floor of: LangChain's window, message for message, in budget."""
    import floor

    dicts = coding_agent_transcript(120, seed=0)
    extra = perf.growth(3, 0)
    encoding = perf.encoding_of(perf.make_pipeline(budget).builder().counter)
    _, kept = perf.langchain_next_turn(dicts, extra, budget, MemoizedCl100kCounter(encoding))
    for form in perf.FORMS:
        _, window = floor.floor_next_turn(dicts, extra, budget, form, perf.make_pipeline(budget).builder().counter)
        floor.check_floor_window(window, encoding, budget)
        assert [m.text for m in window] == [m.content for m in kept]
    assert floor.main(["--messages", "60", "--budgets", "2000", "--forms", "dict", "--reps", "2", "--cold", "300"]) == 0
    with pytest.raises(TypeError):
        floor.plain_pass([{"role": "user", "content": ["parts"]}])


def test_input_forms_times_every_form(capsys: pytest.CaptureFixture[str]) -> None:
    """bench/input_forms.py builds the same small history in each input form and prints one line per form."""
    import input_forms

    out = input_forms.main(["60", "--cold", "1", "--turns", "1"])
    assert sorted(out) == ["anthropic", "chat", "parts", "responses"]
    assert all(items > 0 and cold > 0 and turn > 0 for items, cold, turn in out.values())
    assert len(capsys.readouterr().out.splitlines()) == 4
