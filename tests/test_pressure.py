"""Pressure levels (ChachaAgent's NONE/FROZEN/TRIMMED/SUMMARIZED/CONSOLIDATED) and ``report.pressure_level``."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctxcore import BuildReport, PressureLevel, recommended_level
from ctxcore.engine.report import Compression


class TestRecommendedLevel:
    @pytest.mark.parametrize(("pressure", "level"), [
        (0.0, "none"), (0.49, "none"), (0.5, "frozen"), (0.69, "frozen"), (0.7, "trimmed"), (0.84, "trimmed"),
        (0.85, "summarized"), (0.95, "summarized"), (0.951, "consolidated"), (1.7, "consolidated"),
    ])
    def test_reference_table(self, pressure: float, level: str) -> None:
        """The reference thresholds: < 0.5, 0.5-0.7, 0.7-0.85, 0.85-0.95, > 0.95."""
        assert recommended_level(pressure) is PressureLevel(level)

    @pytest.mark.parametrize("bad", [-0.1, float("nan"), "0.5", True])
    def test_bad_pressure(self, bad: object) -> None:
        """A negative, NaN or non-number pressure is refused."""
        with pytest.raises(ValueError, match="pressure"):
            recommended_level(bad)  # type: ignore[arg-type]

    @given(st.floats(0, 10), st.floats(0, 10))
    def test_monotonic(self, a: float, b: float) -> None:
        """More pressure never recommends a lighter level."""
        lo, hi = sorted((a, b))
        assert recommended_level(lo).rank <= recommended_level(hi).rank


class TestReport:
    def test_without_budget(self) -> None:
        """No budget, no pressure level."""
        assert BuildReport().pressure_level is None

    def test_from_utilization(self) -> None:
        """Without compressions the level is the one the final utilization calls for."""
        assert BuildReport(budget=100, total_tokens=72).pressure_level is PressureLevel.TRIMMED

    def test_applied_stage_wins_when_deeper(self) -> None:
        """A build that summarised reports at least SUMMARIZED, even when the result is now small."""
        report = BuildReport(budget=100, total_tokens=30,
                             compressions=[Compression("compaction", "summarize", ("a", "b"), "s", 80, 10)])
        assert report.pressure_level is PressureLevel.SUMMARIZED

    def test_pipeline(self, host) -> None:
        """A real build through compaction reports the level of the stage it ran."""
        from ctxcore import Pipeline

        pipe = Pipeline.from_dict({"version": 1, "model": {"context_window": 400},
                                   "counter": {"type": "approximate", "chars_per_token": 4},
                                   "providers": ["history"],
                                   "filters": [{"type": "compaction", "strategy": "continuity", "trigger_ratio": 0.9,
                                                "target_ratio": 0.6}]}, host=host)
        turns = [{"role": r, "content": f"{r} {i} " + "detail " * 12} for i in range(12) for r in ("user", "assistant")]
        report = pipe.build({"messages": turns}).report
        assert report.compressions and report.pressure_level is PressureLevel.SUMMARIZED
