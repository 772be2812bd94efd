"""``anthropic_count`` and ``openai_count`` against the stub servers' count endpoints, through the official SDK clients."""

from __future__ import annotations

from typing import Any

import pytest
from anthropic import Anthropic
from ctxcore_counters.provider_counts import (
    AnthropicCountCounter,
    OpenAICountCounter,
    ProviderCountConfig,
    ProviderCountError,
    anthropic_client,
)
from openai import OpenAI

from ctxcore import ai, human, system, tool
from ctxcore.kit import ToolCall
from ctxcore.testing.harness.anthropic_server import MessagesServer
from ctxcore.testing.harness.openai_server import ChatServer

MESSAGES = [
    system("You are terse."),
    human("What is the weather in Oslo? " * 5),
    ai("", tool_calls=[ToolCall(id="toolu_1", name="weather", arguments='{"city": "Oslo"}')]),
    tool("cold and clear", tool_call_id="toolu_1"),
    ai("It is cold."),
]


class TestAnthropicCount:
    def test_counts_come_from_count_tokens_and_are_cached(self) -> None:
        """Each message is counted by the endpoint once; longer text counts more; a second pass makes no request."""
        with MessagesServer(reply=lambda b: "ok") as server:
            counter = AnthropicCountCounter("claude-sonnet-4-6", client=Anthropic(base_url=server.base_url, api_key="k"))
            counts = [counter.count_message(m) for m in MESSAGES]
            sent = len(server.requests)
            assert [counter.count_message(m) for m in MESSAGES] == counts and len(server.requests) == sent
            assert counter.count_text("word " * 100) > counter.count_text("word") > 0
            assert counter.count_messages(MESSAGES) == sum(counts)
        assert all(c > 0 for c in counts)
        assert all(r.get("model") == "claude-sonnet-4-6" for r in server.requests)

    def test_offline_error_names_the_counter_and_the_fix(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """With no server to reach, the error names anthropic_count and the offline counters to use instead."""
        monkeypatch.setenv("CTXCORE_TEST_KEY", "k")
        counter = AnthropicCountCounter("claude-sonnet-4-6", make_client=anthropic_client(ProviderCountConfig(
            model="claude-sonnet-4-6", base_url="http://127.0.0.1:9", api_key_env="CTXCORE_TEST_KEY", max_retries=0, timeout=2)))
        with pytest.raises(ProviderCountError, match=r"'anthropic_count'.*APIConnectionError.*'tiktoken' or 'approximate'"):
            counter.count_text("hello")

    def test_a_missing_key_variable_is_named(self) -> None:
        """api_key_env naming an unset variable fails at the first count, saying which variable."""
        counter = AnthropicCountCounter("m", make_client=anthropic_client(
            ProviderCountConfig(model="m", api_key_env="CTXCORE_TEST_UNSET_KEY")))
        with pytest.raises(ProviderCountError, match="CTXCORE_TEST_UNSET_KEY"):
            counter.count_text("hello")


def test_openai_count_uses_input_tokens_count() -> None:
    """openai_count calls responses.input_tokens.count; tool results are counted inside a legal call pair."""
    with ChatServer(reply=lambda b: "ok") as server:
        counter = OpenAICountCounter("gpt-5", client=OpenAI(base_url=server.base_url, api_key="k"))
        counts = [counter.count_message(m) for m in MESSAGES]
        assert counter.count_tools([{"type": "function", "function": {"name": "weather", "parameters": {}}}]) > 0
    assert all(c > 0 for c in counts)
    assert any(item.get("type") == "function_call_output" for r in server.requests for item in r["input"])


def test_registered_without_network_at_construction() -> None:
    """Both counters are registered and build from config without a request (the client is made at the first count)."""
    from ctxcore_counters import plugin

    offered: dict[str, tuple[Any, Any]] = {}
    plugin.register_token_counters(lambda name, factory, config, description: offered.update({name: (factory, config)}))
    for name in ("anthropic_count", "openai_count"):
        factory, config = offered[name]
        counter = factory(config(model="m", base_url="http://127.0.0.1:9"))
        assert counter.name == f"{name}:m" and counter._client is None
