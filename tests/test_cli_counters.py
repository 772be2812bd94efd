"""Tests for `ctx count` and `ctx counters compare`, run as real subprocesses."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest
from ctxcore_counters import ApproximateCounter, TiktokenCounter
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxcore.cli.counters import chunks, resolve_counter
from ctxcore.testing import fresh_host

ROOT = pathlib.Path(__file__).resolve().parents[1]
CHINESE = ROOT / "bench" / "corpora" / "chinese_prose.txt"
ENGLISH = ROOT / "bench" / "corpora" / "english_prose.txt"

pytestmark = pytest.mark.integration


def ctx(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run `ctx` in a clean environment (autoload on, no CTXCORE_* overrides)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CTXCORE_")}
    return subprocess.run([sys.executable, "-m", "ctxcore", *args], capture_output=True, text=True,
                          env=env, input=stdin, timeout=120, cwd=ROOT)


class TestCount:
    def test_counter_with_argument(self) -> None:
        """--counter NAME:ARG sets the encoding of tiktoken and the family of approximate."""
        text = CHINESE.read_text(encoding="utf-8")
        exact = json.loads(ctx("count", "--counter", "tiktoken:o200k_base", str(CHINESE), "--json").stdout)
        approx = json.loads(ctx("count", "--counter", "approximate:o200k", str(CHINESE), "--json").stdout)
        assert exact == {"counter": "tiktoken:o200k_base", "files": {str(CHINESE): TiktokenCounter("o200k_base").count_text(text)},
                         "total": TiktokenCounter("o200k_base").count_text(text)}
        assert approx["counter"] == "approximate:o200k"
        assert approx["total"] == ApproximateCounter("o200k").count_text(text)

    def test_bad_argument_names_the_option(self) -> None:
        """An ARG the counter's config refuses fails with the counter named."""
        result = ctx("count", "--counter", "tiktoken:p50k_base", stdin="x")
        assert result.returncode == 1 and "counter 'tiktoken:p50k_base' could not be created" in result.stderr

    def test_unknown_counter_with_argument_suggests(self) -> None:
        """A misspelled NAME:ARG still suggests the right counter."""
        result = ctx("count", "--counter", "tiktokn:o200k_base", stdin="x")
        assert result.returncode == 1 and "did you mean" in result.stderr

    def test_progress_bar_does_not_change_counts(self, tmp_path: pathlib.Path) -> None:
        """A large file counted with the progress bar forced on gives the same total, and stdout stays clean."""
        big = tmp_path / "big.txt"
        big.write_text((ENGLISH.read_text(encoding="utf-8") + "\n") * 200, encoding="utf-8")
        plain = ctx("count", "--counter", "tiktoken:o200k_base", str(big), "--json", "--no-progress")
        shown = ctx("count", "--counter", "tiktoken:o200k_base", str(big), "--json", "--progress")
        assert plain.returncode == shown.returncode == 0, shown.stderr
        assert json.loads(shown.stdout) == json.loads(plain.stdout)
        assert json.loads(plain.stdout)["total"] == TiktokenCounter("o200k_base").count_text(big.read_text(encoding="utf-8"))


class TestCompare:
    def test_every_installed_counter_against_reference(self) -> None:
        """Without --counter, every installed counter variant is compared; counters needing options are listed."""
        result = ctx("counters", "compare", str(CHINESE), "--reference", "tiktoken:o200k_base", "--json")
        assert result.returncode == 0, result.stderr
        data = json.loads(result.stdout)
        rows = {r["counter"]: r for r in data["counters"]}
        assert {"approximate:cl100k", "approximate:o200k", "tiktoken:cl100k_base", "tiktoken:o200k_base"} <= set(rows)
        assert data["reference"] == "tiktoken:o200k_base"
        assert rows["tiktoken:o200k_base"]["error_percent"] == 0
        assert -5 <= rows["approximate:o200k"]["error_percent"] <= 12
        expected = 100 * (rows["tiktoken:cl100k_base"]["tokens"] - data["reference_tokens"]) / data["reference_tokens"]
        assert rows["tiktoken:cl100k_base"]["error_percent"] == round(expected, 2)
        assert any(u["counter"] == "huggingface" and "path" in u["error"] for u in data["unavailable"])

    def test_table_output(self) -> None:
        """The table names the reference and each chosen counter's error."""
        result = ctx("counters", "compare", str(ENGLISH), str(CHINESE), "--counter", "approximate:cl100k")
        assert result.returncode == 0, result.stderr
        assert "vs tiktoken:cl100k_base" in result.stdout and "approximate:cl100k" in result.stdout and "%" in result.stdout


class TestResolve:
    def test_qualified_name_with_argument(self) -> None:
        """plugin:name:ARG resolves the plugin-qualified counter and sets its first option."""
        import ctxcore_counters.plugin as plugin

        registry = fresh_host(("ctxcore-counters", plugin)).registry
        choice = resolve_counter(registry, "ctxcore-counters:tiktoken:o200k_base")
        assert choice.component.name == "tiktoken" and choice.options == {"encoding": "o200k_base"}
        assert resolve_counter(registry, "ctxcore-counters:approximate").options == {}


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(["word ", "词语", "\n", "\n\n", "  indented", "x = 1\n", "{\"k\": 2}\n", "\t", "é"]), max_size=400),
       st.integers(min_value=1, max_value=64))
def test_chunked_counts_equal_whole_counts(parts: list[str], size: int) -> None:
    """Chunked counts equal whole counts for tiktoken; approximate rounds up per chunk, so at most +1 per extra chunk."""
    text = "".join(parts)
    pieces = list(chunks(text, size))
    assert "".join(pieces) == text
    for encoding in ("cl100k_base", "o200k_base"):
        counter = TiktokenCounter(encoding)
        assert sum(counter.count_text(p) for p in pieces) == counter.count_text(text)
    approx = ApproximateCounter("o200k")
    whole = approx.count_text(text)
    assert whole <= sum(approx.count_text(p) for p in pieces) <= whole + max(len(pieces) - 1, 0)
