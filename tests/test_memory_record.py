"""``memory: record:``: a thread records its saved turns into the pipeline's long-term memory store, when asked."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxcore import ConfigError, Pipeline

BASE = """
version: 1
model: {context_window: 8000}
providers: [history]
filters: [token_budget]
threads: {type: sqlite, path: %(dir)s/threads.db}
memory:
  type: sqlite
  path: %(dir)s/memory.db
%(record)s
"""


@pytest.fixture
def host():
    """A fresh host with the workspace plugins a thread with offload and memory needs, registered in-process."""
    import ctxcore_checkpointers.plugin
    import ctxcore_counters.plugin
    import ctxcore_filters.plugin
    import ctxcore_memory.plugin
    import ctxcore_providers.plugin

    from ctxcore.testing import fresh_host

    return fresh_host(("ctxcore-providers", ctxcore_providers.plugin), ("ctxcore-filters", ctxcore_filters.plugin),
                      ("ctxcore-counters", ctxcore_counters.plugin), ("ctxcore-checkpointers", ctxcore_checkpointers.plugin),
                      ("ctxcore-memory", ctxcore_memory.plugin))


def _pipeline(tmp_path: Path, host, record: str = "") -> Pipeline:
    return Pipeline.from_string(BASE % {"dir": tmp_path, "record": record}, host=host)


def _turn(thread, fact: str) -> None:
    thread.add_user(fact)
    thread.add_response({"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}]})
    thread.add_tool_result("call_1", "The staging database lives on host pg-staging-3.")
    thread.add_response({"role": "assistant", "content": "Noted."})
    thread.save()


def test_nothing_is_recorded_by_default(tmp_path: Path, host) -> None:
    """Without ``record:`` a thread writes nothing to the memory store."""
    pipeline = _pipeline(tmp_path, host)
    assert pipeline.memory_record is None
    _turn(pipeline.thread("t"), "My cat is called Miso.")
    assert pipeline.memory.retrieve("cat Miso") == []


def test_user_turns_and_tool_results_outlive_the_thread(tmp_path: Path, host) -> None:
    """With user_turns and tool_results on, a fact said in one thread is found from memory after it, with its provenance."""
    record = "  record: {user_turns: true, tool_results: true, namespace: priya}"
    pipeline = _pipeline(tmp_path, host, record)
    _turn(pipeline.thread("t1"), "My cat is called Miso.")
    fresh = _pipeline(tmp_path, host, record)  # another process: only the files are shared
    cat = fresh.memory.retrieve("what is my cat called", namespace="priya")
    assert cat[0].content == "My cat is called Miso."
    assert cat[0].metadata == {"source": "thread", "kind": "user_turn", "thread_id": "t1",
                               "message_id": cat[0].metadata["message_id"], "trust": "trusted"}
    host = fresh.memory.retrieve("staging database host", namespace="priya")
    assert host[0].metadata["kind"] == "tool_result" and host[0].metadata["trust"] == "untrusted"
    assert fresh.memory.retrieve("Noted", namespace="priya") == []  # assistant replies are not recorded
    assert fresh.memory.count("priya") == 2


def test_only_the_selected_kinds_are_recorded_and_each_once(tmp_path: Path, host) -> None:
    """user_turns alone records user messages only, and a later save does not record them again."""
    pipeline = _pipeline(tmp_path, host, "  record: {user_turns: true}")
    thread = pipeline.thread("t")
    _turn(thread, "I deploy only on Tuesdays.")
    thread.add_user("And never on Fridays.")
    thread.add_response({"role": "assistant", "content": "Understood."})
    thread.save()
    assert pipeline.memory.count("default") == 2


def test_long_text_is_cut_to_max_chars(tmp_path: Path, host) -> None:
    """A memory is at most max_chars characters."""
    pipeline = _pipeline(tmp_path, host, "  record: {user_turns: true, max_chars: 50}")
    _turn(pipeline.thread("t"), "remember " * 100)
    [item] = pipeline.memory.retrieve("remember")
    assert len(item.content) == 50 and item.content.endswith("…")


def test_summaries_are_recorded_once(tmp_path: Path, host) -> None:
    """A compaction summary made in a turn's build is recorded when the turn is saved, and not again when replayed."""
    text = (BASE % {"dir": tmp_path, "record": "  record: {summaries: true}"}).replace(
        "filters: [token_budget]",
        "filters:\n  - {type: compaction, strategy: continuity, trigger_ratio: 0.3, target_ratio: 0.2}\n  - token_budget")
    pipeline = Pipeline.from_string(text.replace("context_window: 8000", "context_window: 600"), host=host)
    thread = pipeline.thread("t")
    for i in range(12):
        thread.add_user(f"Turn {i}: the deployment checklist item number {i} is about the migrations.")
        thread.add_response({"role": "assistant", "content": f"Done with item {i}."})
        built = thread.build()
        thread.save()
    assert any((m.metadata.get("ctxcore.compaction") or {}).get("stage") in ("summarize", "consolidate") for m in built.messages)
    items = pipeline.memory.retrieve("deployment checklist migrations", limit=50)
    assert items and all(i.metadata["kind"] == "summary" for i in items)
    assert len({i.metadata["message_id"] for i in items}) == len(items)


def test_record_options_are_validated_with_their_line(tmp_path: Path, host) -> None:
    """A misspelt record option is a pipeline error naming the key; ``record`` on another step is refused too."""
    with pytest.raises(ConfigError) as err:
        _pipeline(tmp_path, host, "  record: {user_turn: true}")
    assert str(err.value) == "<string>:10:12 memory.record.user_turn: unknown key 'user_turn' — did you mean 'user_turns'?"
    with pytest.raises(ConfigError, match="record"):
        Pipeline.from_string("version: 1\nproviders: [history]\nfilters:\n  - {type: token_budget, record: {user_turns: true}}\n", host=host)


def test_a_store_error_says_the_turn_was_saved(tmp_path: Path, host) -> None:
    """When the store refuses a memory the error is raised, with a note that the step itself was saved."""
    pipeline = _pipeline(tmp_path, host, "  record: {user_turns: true}")
    thread = pipeline.thread("t")

    def broken(*args, **kwargs):
        raise RuntimeError("disk full")

    pipeline.memory.record = broken
    thread.add_user("hello")
    with pytest.raises(RuntimeError, match="disk full") as err:
        thread.save()
    assert "step 0 was saved" in "".join(err.value.__notes__)
    assert pipeline.thread("t").messages[-1].text == "hello"
