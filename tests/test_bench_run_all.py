"""``make bench``'s runner (bench/run_all.py): every script runs, and the missed rows are listed at the end.

The scripts here are tiny stand-ins written to a temporary directory; they report rows through
bench/bench_rows.py exactly as the real bench scripts do.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"


def _load(name: str):
    sys.path.insert(0, str(BENCH))
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is created
    spec.loader.exec_module(module)
    return module


run_all = _load("run_all")
bench_rows = _load("bench_rows")

REPORTS = f"""\
import sys
sys.path.insert(0, {str(BENCH)!r})
from bench_rows import report_row
report_row("rows.py", "fast enough", True, "1.2 <= 2")
report_row("rows.py", "small enough", False, "3.4 <= 2")
"""


def _job(tmp_path: Path, name: str, source: str) -> object:
    script = tmp_path / name
    script.write_text(source)
    return run_all.Job(name, Path(sys.executable), script)


class TestRunAll:
    def test_missed_rows_are_listed_and_fail_the_run(self, tmp_path: Path) -> None:
        """A script's missed row is named at the end with its detail; a met row is counted, not listed."""
        outcome = run_all.run(_job(tmp_path, "rows.py", REPORTS))
        text, ok = run_all.summary([outcome], [])
        assert not ok
        assert "MISSED rows.py: small enough (3.4 <= 2)" in text
        assert "fast enough" not in text and "2 judged rows, 1 missed" in text

    def test_a_failing_script_does_not_stop_the_others(self, tmp_path: Path) -> None:
        """A script that exits non-zero without naming a row is listed as such, and the next script still runs."""
        marker = tmp_path / "second-ran"
        outcomes = [run_all.run(_job(tmp_path, "broken.py", "raise SystemExit(3)\n")),
                    run_all.run(_job(tmp_path, "fine.py", f"open({str(marker)!r}, 'w').close()\n"))]
        text, ok = run_all.summary(outcomes, [])
        assert not ok and marker.exists()
        assert "MISSED broken.py: exited 3 without naming a row" in text
        assert "fine.py" not in text.split("\n", 1)[1]

    def test_all_met_passes_and_notes_skipped_scripts(self, tmp_path: Path) -> None:
        """Only met rows: the run passes; scripts skipped for want of a file or venv are noted, not failed."""
        ok_script = REPORTS.replace('False, "3.4 <= 2"', 'True, "1.0 <= 2"')
        text, ok = run_all.summary([run_all.run(_job(tmp_path, "rows.py", ok_script))], ["x.py: not present, skipped"])
        assert ok and "0 missed" in text and "note: x.py: not present, skipped" in text

    def test_scripts_run_as_make_bench(self, tmp_path: Path) -> None:
        """Each script sees CTXCORE_BENCH_VIA_MAKE=1, so it writes its docs table and names `make bench`."""
        out = tmp_path / "env.txt"
        run_all.run(_job(tmp_path, "env.py", f"import os\nopen({str(out)!r}, 'w').write(os.environ['CTXCORE_BENCH_VIA_MAKE'])\n"))
        assert out.read_text() == "1"

    def test_every_listed_script_exists(self) -> None:
        """The runner's list names real bench scripts (a renamed script would otherwise be skipped silently)."""
        assert all((BENCH / name).exists() for name in run_all.SCRIPTS)
        assert "counter_accuracy.py" in run_all.SCRIPTS and "perf.py" == run_all.SCRIPTS[0]


def test_rows_are_not_written_outside_make_bench(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run by hand (no CTXCORE_BENCH_ROWS), a script's rows go nowhere."""
    monkeypatch.delenv(bench_rows.ROWS_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    bench_rows.report_row("x.py", "row", False)
    assert list(tmp_path.iterdir()) == []
