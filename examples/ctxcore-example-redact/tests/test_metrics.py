"""The build-metrics observer: one JSON line per build, numbers equal to the build report's."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from ctxcore_example_redact import METRICS_ENV, plugin

from ctxcore import (
    ContextBuilder,
    FilterContext,
    Message,
    MessageCounter,
    ai,
    human,
    system,
)
from ctxcore.testing import fresh_host


class Chars(MessageCounter):
    """One token per four characters, rounded up (no tokenizer needed)."""

    name = "chars/4"

    def count_text(self, text: str) -> int:
        return -(-len(text) // 4)


class Static:
    def __init__(self, *messages: Message) -> None:
        self.messages = list(messages)

    def get_messages(self, state: Any, runtime: Any) -> list[Message]:
        return self.messages


class DropSource:
    """Drops every message of one source (each is a unit of its own here)."""

    def __init__(self, source: str) -> None:
        self.source = source

    def apply(self, messages: Sequence[Message], ctx: FilterContext) -> list[Message]:
        return [m for m in messages if m.source != self.source]


def _builder() -> ContextBuilder:
    host = fresh_host(("ctxcore-example-redact", plugin))
    persona = Static(system("You are terse."))
    notes = Static(human("note one " * 10), ai("ok"), human("note two " * 20))
    builder = ContextBuilder([persona, notes], [DropSource("")], Chars(), hooks=host.hook)
    builder.filters[0].component.source = builder.providers[1].id  # messages are stamped with their step id
    return builder


def test_one_line_per_build_with_the_reports_numbers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each build appends one JSON line whose totals and per-source numbers equal the report's."""
    path = tmp_path / "metrics.jsonl"
    monkeypatch.setenv(METRICS_ENV, str(path))
    builder = _builder()
    first = builder.build({})
    builder.build({})
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(lines) == 2
    line = lines[0]
    counter = Chars()
    persona, notes = builder.providers[0].component.messages, builder.providers[1].component.messages
    assert line["total_tokens"] == first.report.total_tokens == counter.count_messages(persona)
    assert line["messages"] == 1 and line["dropped"] == 3 and line["compressed"] == 0
    assert line["dropped_tokens"] == sum(counter.count_message(m) for m in notes)
    step_ids = [s.id for s in builder.providers]
    assert line["by_source"][step_ids[1]]["dropped"] == 3
    assert line["by_source"][step_ids[0]] == {"kept": 1, "kept_tokens": counter.count_message(persona[0]), "dropped": 0,
                                              "dropped_tokens": 0, "compressed": 0, "compressed_tokens": 0}
    assert lines[1]["build"] == line["build"] + 1
    assert {k: v for k, v in lines[1].items() if k not in ("time", "build")} == {
        k: v for k, v in line.items() if k not in ("time", "build")}


def test_nothing_is_written_without_the_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without CTXCORE_METRICS_FILE the observer writes nothing anywhere."""
    monkeypatch.delenv(METRICS_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    _builder().build({})
    assert list(tmp_path.iterdir()) == []


def test_an_unwritable_file_warns_and_the_build_still_returns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A metrics file that cannot be written is a report warning naming it; the build still returns."""
    monkeypatch.setenv(METRICS_ENV, str(tmp_path / "missing-dir" / "metrics.jsonl"))
    built = _builder().build({})
    assert len(built.messages) == 1
    assert any("on_build_complete observer failed" in w and "metrics.jsonl" in w for w in built.report.warnings)
