"""Tests for the report's record of reductions: the compressed fate, tokens before and after."""

from __future__ import annotations

from ctxcore.engine.budget import CachedCounter
from ctxcore.engine.counting import MessageCounter
from ctxcore.engine.report import BuildReport, Compression
from ctxcore.model.messages import human


class Chars(MessageCounter):
    name = "chars"

    def count_text(self, text: str) -> int:
        return len(text)


def _report() -> BuildReport:
    return BuildReport(budget=1000, _counter=CachedCounter(Chars()))


class TestRecordCompression:
    def test_originals_become_compressed(self) -> None:
        """Messages a filter replaced and recorded are 'compressed', naming the replacement and stage."""
        a, b, summary = human("a" * 50), human("b" * 50), human("summary")
        report = _report()
        report.record_dropped([a, b], by="compaction")
        report.record_compression("compaction", [a.id, b.id], summary, 120, 20, "summarize")
        report.record_output([summary], [20], added_ids={summary.id})
        assert [r.fate for r in report.records] == ["added", "compressed", "compressed"]
        assert {r.into for r in report.compressed} == {summary.id}
        assert {r.stage for r in report.compressed} == {"summarize"}
        assert report.dropped == [] and [r.id for r in report.kept] == [summary.id]
        assert report.compressions == [Compression("compaction", "summarize", (a.id, b.id), summary.id, 120, 20)]

    def test_trim_originals_stay_dropped(self) -> None:
        """A reduction recorded with stage 'trim' keeps its originals 'dropped' but lists it with its tokens."""
        a, marker = human("a" * 50), human("[1 earlier message removed]")
        report = _report()
        report.record_dropped([a], by="compaction")
        report.record_compression("compaction", [a.id], marker, 60, 30, "trim")
        assert report.records[0].fate == "dropped" and report.records[0].stage == "trim"
        assert report.compressions[0].tokens_before == 60

    def test_totals_and_dict_count_compressed(self) -> None:
        """totals_by has compressed counts and to_dict lists the compressions."""
        a, summary = human("a" * 50), human("s")
        report = _report()
        report.record_dropped([a], by="c")
        report.record_compression("c", [a.id], summary, 60, 5, "tool_results")
        report.record_output([summary], [5], added_ids={summary.id})
        zone = report.totals_by("zone")["dynamic"]
        assert zone["compressed"] == 1 and zone["compressed_tokens"] == report.records[1].tokens
        assert zone["kept"] == 1 and zone["dropped"] == 0
        assert report.to_dict()["compressions"][0]["tokens_after"] == 5
