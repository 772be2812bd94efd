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


def test_table_covers_every_corpus_and_both_families() -> None:
    """The table has the prose, code and JSON corpora and the held-out JSON ones, for both families."""
    from counter_corpora import CORPORA, HELD_OUT

    assert {c for c, _ in CELLS} == set(CORPORA) | set(HELD_OUT)
    assert {"english", "chinese", "mixed", "python", "json"} <= set(CORPORA)
    assert len([c for c in CORPORA if c.startswith("json_")]) == 8 and len(HELD_OUT) == 3
    assert {f for _, f in CELLS} == {"cl100k", "o200k"}


def test_held_out_corpora_are_not_fitted_on() -> None:
    """The calibration loads only the fitted corpora, so the held-out rows measure text the rates never saw."""
    from counter_corpora import HELD_OUT, load_corpora

    assert not set(load_corpora()) & set(HELD_OUT)


def test_generated_corpora_are_the_same_every_run() -> None:
    """The JSON corpora come from fixed seeds: generating them again gives the same text (the table stays current)."""
    from json_corpora import FITTED, HELD_OUT, json_corpus

    for name in FITTED + HELD_OUT:
        assert json_corpus(name) == json_corpus(name)


def test_docs_table_is_current() -> None:
    """docs/counters.md shows the rows the bench prints now (python rows depend on the interpreter's stdlib)."""
    docs = (BENCH.parent / "docs" / "counters.md").read_text(encoding="utf-8")
    for line in bench.table(list(CELLS.values())).splitlines():
        if not line.startswith("| python |"):
            assert line in docs
