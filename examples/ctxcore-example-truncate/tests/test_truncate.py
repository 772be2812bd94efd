"""The ``truncate_tool_results`` filter: ctxcore's filter contract, the cut itself, and its registration."""

from __future__ import annotations

from typing import Any

import pytest
from ctxcore_example_truncate import plugin
from ctxcore_example_truncate.truncate import DEFAULT_MARKER, META, TruncateToolResults
from pydantic import ValidationError

from ctxcore import ContextBuilder, Message, MessageCounter, ai, check_tool_pairing, human, system, tool
from ctxcore.testing import fresh_host
from ctxcore.testing.contracts import FilterContract, sample_histories


# --8<-- [start:contract]
class TestTruncateContract(FilterContract):
    """Every check ctxcore runs on its own filters; the copies have new ids, so the output is no subsequence."""

    compresses = True

    def make_filter(self) -> TruncateToolResults:
        return TruncateToolResults(max_chars=200)
# --8<-- [end:contract]


class TestTinyLimitContract(FilterContract):
    """The contract again with every tool result of the sample histories cut (even a two-character one)."""

    compresses = True

    def make_filter(self) -> TruncateToolResults:
        return TruncateToolResults(max_chars=1, marker="…")


def _apply(f: TruncateToolResults, messages: list[Message]) -> list[Message]:
    return f.apply(messages, FilterContract().context(None))


def _round(result: str) -> list[Message]:
    return [
        human("run the tests"),
        ai(tool_calls=[{"id": "c1", "name": "run_tests", "arguments": {}}]),
        tool(result, tool_call_id="c1"),
        ai("done"),
    ]


class TestTruncateToolResults:
    def test_the_contract_samples_are_cut(self) -> None:
        """The contract's histories hold results over 200 characters, so its checks above see real replacements."""
        out = _apply(TruncateToolResults(max_chars=200), sample_histories()["tool_rounds"])
        assert sum(META in m.metadata for m in out) >= 2

    def test_a_long_result_is_cut_and_marked(self) -> None:
        """A result over max_chars becomes its first max_chars characters plus the marker, with a new id."""
        history = _round("x" * 500)
        out = _apply(TruncateToolResults(max_chars=10), history)
        assert out[2].content == "x" * 10 + DEFAULT_MARKER
        assert out[2].id != history[2].id
        assert out[2].metadata[META] == {"original_id": history[2].id, "original_chars": 500}
        assert out[2].trust == "untrusted"

    def test_short_results_and_other_messages_are_the_same_objects(self) -> None:
        """Results within max_chars, and every message that is not a tool result, are returned untouched."""
        history = [human("y" * 500), ai("z" * 500), *_round("x" * 10)]
        out = _apply(TruncateToolResults(max_chars=10), history)
        assert all(a is b for a, b in zip(out, history, strict=True))

    def test_tool_call_pairing_is_kept(self) -> None:
        """The copy answers the same call, so every call keeps its result (parallel calls included)."""
        history = [
            human("read both"),
            ai(tool_calls=[{"id": "a", "name": "read", "arguments": {}}, {"id": "b", "name": "read", "arguments": {}}]),
            tool("b" * 300, tool_call_id="b"),
            tool("a" * 300, tool_call_id="a"),
        ]
        out = _apply(TruncateToolResults(max_chars=20), history)
        assert [m.tool_call_id for m in out[2:]] == ["b", "a"]
        check_tool_pairing(out)

    def test_the_replacement_is_deterministic(self) -> None:
        """The same message and settings give the same copy id every time; other settings another id."""
        history = _round("x" * 500)
        first = _apply(TruncateToolResults(max_chars=10), history)[2]
        again = _apply(TruncateToolResults(max_chars=10), history)[2]
        other = _apply(TruncateToolResults(max_chars=20), history)[2]
        assert first.id == again.id != other.id

    def test_a_shortened_result_is_left_alone(self) -> None:
        """Applied to its own output the filter changes nothing, though the copy exceeds max_chars by the marker."""
        f = TruncateToolResults(max_chars=10)
        once = _apply(f, _round("x" * 500))
        assert len(once[2].content) > f.max_chars
        assert all(a is b for a, b in zip(_apply(f, once), once, strict=True))

    def test_protected_and_block_results_are_never_rewritten(self) -> None:
        """A protected tool result and one made of content blocks pass through unchanged."""
        protected = tool("x" * 500, tool_call_id="c1", zone="protected")
        blocks = tool([{"type": "text", "text": "x" * 500}], tool_call_id="c2")
        out = _apply(TruncateToolResults(max_chars=10), [protected, blocks])
        assert out[0] is protected and out[1] is blocks

    def test_a_limit_below_one_is_refused(self) -> None:
        """max_chars must be positive, whether from a pipeline or from Python."""
        with pytest.raises(ValueError, match="max_chars must be positive"):
            TruncateToolResults(max_chars=0)


class _Chars(MessageCounter):
    """One token per character: enough for tests, no tokenizer needed."""

    name = "chars"

    def count_text(self, text: str) -> int:
        return len(text)


class _Fixed:
    """A provider returning the same messages every time."""

    def __init__(self, messages: list[Message]) -> None:
        self.messages = messages

    def get_messages(self, state: Any, runtime: Any) -> list[Message]:
        return self.messages


class TestPlugin:
    @pytest.fixture
    def host(self) -> Any:
        """A fresh host holding only this plugin."""
        return fresh_host(("ctxcore-example-truncate", plugin))

    def test_registers_the_filter_with_its_config(self, host: Any) -> None:
        """The plugin offers truncate_tool_results, configured by TruncateConfig."""
        component = host.registry.get("filter", "truncate_tool_results")
        assert component.plugin == "ctxcore-example-truncate"
        assert component.config.__name__ == "TruncateConfig"
        assert component.description == "Shorten tool results longer than max_chars."

    def test_rejects_unknown_options(self, host: Any) -> None:
        """The config model forbids keys it does not declare (ctxcore makes sure of it)."""
        with pytest.raises(ValidationError, match="max_char"):
            host.registry.get("filter", "truncate_tool_results").create({"max_char": 10})

    def test_in_a_build_the_original_is_compressed_into_its_copy(self, host: Any) -> None:
        """The report lists the copy as added and the original as compressed by the step, with tokens saved."""
        truncate = host.registry.get("filter", "truncate_tool_results").create({"max_chars": 10})
        history = [system("You are terse."), *_round("x" * 50)]
        built = ContextBuilder([_Fixed(history)], [truncate], _Chars()).build()
        assert built.messages[3].content == "x" * 10 + DEFAULT_MARKER
        fates = {r.id: (r.fate, r.by, r.into) for r in built.report.records}
        step = built.report.compressions[0].step_id
        assert fates[history[3].id] == ("compressed", step, built.messages[3].id)
        assert fates[built.messages[3].id] == ("added", None, None)
        (c,) = built.report.compressions
        assert c.stage == "truncate" and c.original_ids == (history[3].id,) and c.tokens_after < c.tokens_before
