"""Accuracy of the ``approximate`` counter against the real tokenizers.

Usage: ``make bench-counters`` (or ``.venv/bin/python bench/counter_accuracy.py [--held-out]``).

For each corpus of bench/counter_corpora.py (the fitted ones, then the
held-out ``heldout_*`` ones the rates never saw) and each family (cl100k,
o200k) it prints the real count (tiktoken, loaded offline), the
``approximate`` estimate, its error, and the error of the old characters / 4
rule, as the Markdown table kept in docs/counters.md. Exits 1 when a cell
leaves the accepted band (-5% ... +12%). ``--held-out`` also prints the errors
on other texts (standard-library modules, this repository's docs), for
information only. Run by ``make bench``, it also writes the table into the
``bench:counter-accuracy`` section of docs/counters.md.
"""

from __future__ import annotations

import math
import os
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_rows import report_row  # noqa: E402
from counter_corpora import load_corpora  # noqa: E402
from ctxcore_counters.approximate import ApproximateCounter  # noqa: E402
from ctxcore_counters.tiktoken_counter import TiktokenCounter  # noqa: E402
from report_table import write_section  # noqa: E402

FAMILIES = {"cl100k": "cl100k_base", "o200k": "o200k_base"}
LOW, HIGH = -5.0, 12.0
DOC = Path(__file__).resolve().parents[1] / "docs" / "counters.md"
SECTION = "counter-accuracy"


@dataclass(frozen=True)
class Cell:
    """One corpus measured against one family."""

    corpus: str
    family: str
    chars: int
    real: int
    approximate: int
    chars_over_4: int

    @property
    def error(self) -> float:
        """Error of ``approximate`` in percent of the real count."""
        return 100.0 * (self.approximate - self.real) / self.real

    @property
    def chars_error(self) -> float:
        """Error of characters / 4 in percent of the real count."""
        return 100.0 * (self.chars_over_4 - self.real) / self.real


def measure() -> list[Cell]:
    """Every (corpus, family) cell."""
    corpora = load_corpora(held_out=True)
    cells = []
    for family, encoding in FAMILIES.items():
        real_counter = TiktokenCounter(encoding)
        approx = ApproximateCounter(family)  # type: ignore[arg-type]
        for name, text in corpora.items():
            cells.append(Cell(name, family, len(text), real_counter.count_text(text), approx.count_text(text), math.ceil(len(text) / 4)))
    return cells


def table(cells: list[Cell]) -> str:
    """The Markdown accuracy table."""
    lines = [
        "| corpus | family | characters | real tokens | approximate | error | chars/4 error |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for c in cells:
        lines.append(f"| {c.corpus} | {c.family} | {c.chars} | {c.real} | {c.approximate} | {c.error:+.1f}% | {c.chars_error:+.1f}% |")
    return "\n".join(lines)


HELD_OUT_STDLIB = ("argparse.py", "ast.py", "typing.py", "enum.py")
HELD_OUT_DOCS = ("architecture.md", "pipeline.md", "cli.md")


def held_out() -> str:
    """A Markdown table of errors on texts outside the calibration corpora."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    docs = Path(__file__).resolve().parents[1] / "docs"
    paths = [(f"stdlib {n}", stdlib / n) for n in HELD_OUT_STDLIB] + [(f"docs/{n}", docs / n) for n in HELD_OUT_DOCS]
    counters = [(TiktokenCounter(enc), ApproximateCounter(fam)) for fam, enc in FAMILIES.items()]  # type: ignore[arg-type]
    lines = ["| text | cl100k error | o200k error |", "| --- | ---: | ---: |"]
    for label, path in paths:
        text = path.read_text(encoding="utf-8")
        errors = [100.0 * (a.count_text(text) - r.count_text(text)) / r.count_text(text) for r, a in counters]
        lines.append(f"| {label} | " + " | ".join(f"{e:+.1f}%" for e in errors) + " |")
    return "\n".join(lines)


def main() -> int:
    cells = measure()
    print(table(cells))
    if os.environ.get("CTXCORE_BENCH_VIA_MAKE"):
        write_section(DOC, SECTION, table(cells))
    if "--held-out" in sys.argv[1:]:
        print()
        print(held_out())
    bad = [c for c in cells if not LOW <= c.error <= HIGH]
    for c in cells:
        report_row("counter_accuracy.py", f"{c.corpus}/{c.family}", c not in bad, f"{c.error:+.1f}%, band {LOW:+.0f}% ... {HIGH:+.0f}%")
    for c in bad:
        print(f"out of band: {c.corpus}/{c.family} {c.error:+.1f}% (accepted {LOW:+.0f}% ... {HIGH:+.0f}%)", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
