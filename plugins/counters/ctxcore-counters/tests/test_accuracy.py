"""The approximate counter's accuracy table: every cell inside -5% ... +12% of the real tokenizer."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[4] / "bench"


def _bench_module():
    sys.path.insert(0, str(BENCH))
    spec = importlib.util.spec_from_file_location("counter_accuracy", BENCH / "counter_accuracy.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is created
    spec.loader.exec_module(module)
    return module


bench = _bench_module()
CELLS = {(c.corpus, c.family): c for c in bench.measure()}


@pytest.mark.parametrize("key", sorted(CELLS), ids=lambda k: f"{k[0]}-{k[1]}")
def test_cell_within_band(key: tuple[str, str]) -> None:
    """approximate errs by -5% ... +12% against cl100k_base / o200k_base on each corpus."""
    cell = CELLS[key]
    assert bench.LOW <= cell.error <= bench.HIGH, f"{key}: {cell.error:+.1f}% ({cell.approximate} vs {cell.real})"


def test_table_covers_five_corpora_and_two_families() -> None:
    """The table has the five corpus kinds for both families."""
    assert {c for c, _ in CELLS} == {"english", "chinese", "mixed", "python", "json"}
    assert {f for _, f in CELLS} == {"cl100k", "o200k"}


def test_docs_table_is_current() -> None:
    """docs/counters.md shows the rows the bench prints now (python rows depend on the interpreter's stdlib)."""
    docs = (BENCH.parent / "docs" / "counters.md").read_text(encoding="utf-8")
    for line in bench.table(list(CELLS.values())).splitlines():
        if not line.startswith("| python |"):
            assert line in docs
