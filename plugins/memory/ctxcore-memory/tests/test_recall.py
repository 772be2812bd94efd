"""Retrieval quality on the labelled set shipped in ctxcore.testing.harness.memory_recall."""

from __future__ import annotations

from pathlib import Path

from ctxcore_memory import JsonMemoryStore, SqliteMemoryStore

from ctxcore.testing.harness.memory_recall import (
    RECALL_MEMORIES,
    RECALL_QUERIES,
    recall_at_k,
)


def test_the_set_is_labelled_consistently() -> None:
    """Forty memories, twenty questions, and every label a question expects exists."""
    assert len(RECALL_MEMORIES) == 40 and len(RECALL_QUERIES) == 20
    assert all(label in RECALL_MEMORIES for _, expected in RECALL_QUERIES for label in expected)


def test_sqlite_recall_at_5_beats_json(tmp_path: Path) -> None:
    """BM25 with stemming finds at least what keyword overlap finds, and most of the set."""
    json_recall = recall_at_k(JsonMemoryStore(tmp_path / "m.json"), k=5).recall
    sqlite_recall = recall_at_k(SqliteMemoryStore(tmp_path / "m.db"), k=5).recall
    assert sqlite_recall >= json_recall
    assert sqlite_recall >= 0.9
    assert json_recall >= 0.6


def test_sqlite_ranks_the_answer_first_mostly(tmp_path: Path) -> None:
    """At k=1 the sqlite store still answers most questions (ranking, not just matching)."""
    assert recall_at_k(SqliteMemoryStore(tmp_path / "m.db"), k=1).recall >= 0.8
