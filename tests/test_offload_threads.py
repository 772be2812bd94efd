"""Offload in threads: a tool result bigger than the whole budget never blocks a thread, and the model can read it back."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ctxcore import Pipeline, context_retrieve_tool, to_anthropic
from ctxcore.kit import OFFLOAD_META, RETRIEVE_TOOL_NAME

PIPELINE = """
version: 1
model: {context_window: 8000, reserve_output_tokens: 500}
providers:
  - {type: static_prompt, text: You are a coding agent.}
  - {type: history}
filters:
  - {type: offload}
  - {type: token_budget}
threads: {type: sqlite, path: %s}
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


def _pipeline(tmp_path: Path, host, text: str = PIPELINE) -> Pipeline:
    return Pipeline.from_string(text % (tmp_path / "threads.db"), host=host)


def _tool_turn(thread, result: str, call_id: str = "call_1") -> None:
    thread.add_user("Dump the log.")
    thread.add_response({"role": "assistant", "content": None, "tool_calls": [
        {"id": call_id, "type": "function", "function": {"name": "read_log", "arguments": "{}"}}]})
    thread.add_tool_result(call_id, result)


def _handle(built) -> str:
    return next(m.metadata[OFFLOAD_META]["handle"] for m in built.messages if OFFLOAD_META in m.metadata)


class TestTooBigToolResult:
    def test_sixty_megabytes_in_the_newest_turn_build_within_budget(self, tmp_path: Path, host) -> None:
        """A 60 MB tool result in the newest turn: the build succeeds within budget with preview + handle, resolve gives it back."""
        pipeline = _pipeline(tmp_path, host)
        thread = pipeline.thread("big")
        result = ("0123456789abcdef" * 64 + "\n") * 58_500  # 60 MB: 59,962,500 characters
        assert len(result) > 59_900_000
        _tool_turn(thread, result)
        built = thread.build()
        assert built.report.total_tokens <= pipeline.budget.max_input_tokens
        last = built.messages[-1]
        assert last.role == "tool" and "too big to show" in last.text and len(last.text) < 2000
        handle = _handle(built)
        assert thread.resolve(handle) == result
        thread.save()
        reopened = pipeline.thread("big")
        assert reopened.resolve(handle) == result
        assert reopened.build().messages[-1].text == last.text  # the same bytes after a restart

    def test_without_offload_the_same_turn_overflows(self, tmp_path: Path, host) -> None:
        """The failure offload removes: without the step, the newest turn alone is over budget."""
        from ctxcore import BudgetExceeded

        pipeline = _pipeline(tmp_path, host, PIPELINE.replace("  - {type: offload}\n", ""))
        thread = pipeline.thread("stuck")
        _tool_turn(thread, "word " * 20_000)
        with pytest.raises(BudgetExceeded):
            thread.build()

    def test_build_memory_stays_bounded(self, tmp_path: Path, host) -> None:
        """Building a thread holding a 60 MB result allocates a few MB at most (the result is never tokenized or copied)."""
        script = textwrap.dedent(f"""
            import json, tracemalloc
            from ctxcore import Pipeline
            pipeline = Pipeline.from_string({PIPELINE % (tmp_path / "m.db")!r})
            thread = pipeline.thread("m")
            thread.add_user("Dump the log.")
            thread.add_response({{"role": "assistant", "content": None, "tool_calls": [
                {{"id": "c1", "type": "function", "function": {{"name": "read_log", "arguments": "{{}}"}}}}]}})
            thread.add_tool_result("c1", "x" * 60_000_000)
            tracemalloc.start()
            built = thread.build()
            records = built.report.records
            print(json.dumps({{"peak": tracemalloc.get_traced_memory()[1], "tokens": built.report.total_tokens}}))
        """)
        env = {k: v for k, v in os.environ.items() if k != "CTXCORE_DISABLE_PLUGIN_AUTOLOAD"}
        out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=600, env=env)
        measured = json.loads(out.stdout.strip().splitlines()[-1])
        assert measured["peak"] < 20_000_000, measured
        assert measured["tokens"] <= 7500


class TestRetrieveTool:
    def test_tool_definitions_agree_between_providers(self) -> None:
        """The OpenAI definition rendered for Anthropic is the Anthropic definition."""
        rendered = to_anthropic([], tools=[context_retrieve_tool("openai")])["tools"][0]
        assert rendered == context_retrieve_tool("anthropic")
        assert context_retrieve_tool("responses")["name"] == RETRIEVE_TOOL_NAME
        with pytest.raises(ValueError, match="unknown provider"):
            context_retrieve_tool("gemini")

    def test_executor_pages_through_the_result(self, tmp_path: Path, host) -> None:
        """context_retrieve returns chunks with a note naming the next offset; the chunks join to the original."""
        thread = _pipeline(tmp_path, host).thread("pages")
        result = "".join(f"line {i}\n" for i in range(5000))
        _tool_turn(thread, result)
        handle = _handle(thread.build())
        parts, offset = [], 0
        while True:
            text = thread.context_retrieve(json.dumps({"handle": handle, "offset": offset}), max_chars=10_000)
            body, _, note = text.rpartition("\n[characters ")
            parts.append(body)
            if "the end" in note:
                break
            offset = int(note.rsplit("offset ", 1)[1].split()[0])
        assert "".join(parts) == result

    def test_executor_reports_wrong_arguments_to_the_model(self, tmp_path: Path, host) -> None:
        """Unknown handles, bad JSON and bad numbers come back as error text, never an exception."""
        thread = _pipeline(tmp_path, host).thread("errors")
        assert thread.context_retrieve('{"handle": "ctx-000"}').startswith("error: no tool result")
        assert thread.context_retrieve("{not json").startswith("error:")
        assert thread.context_retrieve({"handle": "ctx-1", "offset": -1}).startswith("error:")
        assert thread.context_retrieve({"handle": "ctx-1", "page": 2}).startswith("error:")

    def test_a_handle_never_resolves_in_another_thread(self, tmp_path: Path, host) -> None:
        """A handle seen in one thread names nothing in another thread of the same pipeline."""
        pipeline = _pipeline(tmp_path, host)
        alice, bob = pipeline.thread("alice"), pipeline.thread("bob")
        _tool_turn(alice, "secret " * 10_000)
        _tool_turn(bob, "secret " * 10_000)
        handle = _handle(alice.build())
        assert handle != _handle(bob.build())
        with pytest.raises(KeyError):
            bob.resolve(handle)
        assert bob.context_retrieve({"handle": handle}).startswith("error:")


def test_agent_preset_offloads_by_default(tmp_path: Path, host) -> None:
    """The agent preset offloads before its budget: a tool result over the whole 128k window still builds, within it."""
    from ctxcore.pipeline.presets import preset_pipeline

    pipeline = preset_pipeline("agent", host=host, env={"CTX_WORKSPACE": str(tmp_path), "CTX_SKILLS_DIR": str(tmp_path / "skills")})
    assert [s.type for s in pipeline.spec.filters] == ["offload", "token_budget", "recall"]
    thread = pipeline.thread("agent")
    _tool_turn(thread, "0123456789 " * 200_000)
    built = thread.build()
    assert built.report.total_tokens <= pipeline.budget.max_input_tokens
    assert thread.resolve(_handle(built)) == "0123456789 " * 200_000


def test_offload_keeps_the_history_lazy_for_the_budget() -> None:
    """With no result to offload, the filter after offload still gets the lazy history (so its fast path stays on)."""
    from ctxcore_counters import ApproximateCounter
    from ctxcore_filters import Offload, TokenBudget
    from ctxcore_providers import History

    from ctxcore import ContextBuilder, ModelBudget
    from ctxcore.kit import is_lazy

    seen = []

    class Spy:
        accepts_lazy = True

        def apply(self, messages, ctx):
            seen.append(is_lazy(messages))
            return messages

    history = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i}"} for i in range(400)]
    builder = ContextBuilder([History()], [Offload(), Spy(), TokenBudget()], ApproximateCounter(), budget=ModelBudget(8000))
    builder.build({"messages": history})
    history.append({"role": "user", "content": "next"})
    builder.build({"messages": history})
    assert seen == [True, True]
