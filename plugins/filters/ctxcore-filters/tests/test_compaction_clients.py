"""The user's own clients behind ChatSummarizer and ChatSelector, and the stdlib endpoint's retries.

Real parts: the official ``openai`` and ``anthropic`` SDK clients, pointed with ``base_url`` at the local stub
servers of ctxcore.testing.harness (which speak the real wire protocols and record every request).
"""

from __future__ import annotations

import asyncio
from typing import Any

import anthropic
import openai
import pytest
from ctxcore_counters import ApproximateCounter
from ctxcore_filters import ChatEndpoint, ChatSelector, ChatSummarizer, Compaction, SummarizerError
from ctxcore_filters.compaction_stages import stage_of
from ctxcore_filters.compaction_summarizers import _retry_after

from ctxcore import BuildReport, CachedCounter, FilterContext, Message, ai, human
from ctxcore.testing.harness.anthropic_server import MessagesServer


def conversation(n: int) -> list[Message]:
    out: list[Message] = []
    for i in range(n):
        out += [human(f"question {i} " + "detail " * 30), ai(f"answer {i} " + "explanation " * 30)]
    return out


def _ctx() -> FilterContext:
    return FilterContext(counter=CachedCounter(ApproximateCounter()), budget=None, runtime={}, report=BuildReport())


def _compact(summarizer: Any) -> tuple[list[Message], FilterContext]:
    msgs, c = conversation(4), _ctx()
    total = sum(c.counter.count_message(m) for m in msgs)
    f = Compaction(steps=[{"kind": "summarize"}], max_tokens=total, trigger_ratio=0.5, target_ratio=0.3,
                   on_error="raise", summarizer=summarizer)
    return list(f.apply(msgs, c)), c


class TestOpenAIClients:
    def test_an_openai_client_is_used_as_configured(self, chat_server: Any) -> None:
        """A summarizer given ``openai.OpenAI`` sends through it: its base URL, its key, the model named."""
        client = openai.OpenAI(base_url=chat_server.base_url, api_key="sk-users-own", max_retries=0)
        out, _ = _compact(ChatSummarizer(client, model="small"))
        assert len(chat_server.requests) == 1
        assert chat_server.requests[0]["model"] == "small"
        assert {k.lower(): v for k, v in chat_server.headers[0].items()}["authorization"] == "Bearer sk-users-own"
        summary = next(m for m in out if stage_of(m) == "summarize")
        assert "found the bug" in summary.text

    def test_an_async_client_works_from_the_sync_filter(self, chat_server: Any) -> None:
        """``AsyncOpenAI`` works too, for several summaries in a row (its calls run on one private loop)."""
        client = openai.AsyncOpenAI(base_url=chat_server.base_url, api_key="k", max_retries=0)
        summarizer = ChatSummarizer(client, model="small")
        for _ in range(2):
            _compact(summarizer)
        assert len(chat_server.requests) == 2

    def test_an_async_client_from_inside_a_running_loop(self, chat_server: Any) -> None:
        """A build inside the user's event loop (an async agent) can still use an async client."""
        client = openai.AsyncOpenAI(base_url=chat_server.base_url, api_key="k", max_retries=0)

        async def agent() -> list[Message]:
            return _compact(ChatSummarizer(client, model="small"))[0]

        assert any(stage_of(m) == "summarize" for m in asyncio.run(agent()))

    def test_the_clients_own_retries_handle_a_429(self, chat_server: Any) -> None:
        """A 429 then success: the SDK client's retry policy (honouring Retry-After) gets the summary."""
        chat_server.fail_next(429, retry_after="0")
        client = openai.OpenAI(base_url=chat_server.base_url, api_key="k", max_retries=2)
        out, _ = _compact(ChatSummarizer(client, model="small"))
        assert len(chat_server.requests) == 2
        assert any(stage_of(m) == "summarize" for m in out)

    def test_a_client_error_names_the_endpoint(self, chat_server: Any) -> None:
        """An SDK error becomes a SummarizerError naming the URL and the status."""
        chat_server.status = 503
        client = openai.OpenAI(base_url=chat_server.base_url, api_key="k", max_retries=0)
        with pytest.raises(SummarizerError, match=rf"{chat_server.base_url}/chat/completions answered HTTP 503"):
            ChatSummarizer(client, model="small").summarize(conversation(1), 50)

    def test_a_selector_takes_a_client(self, chat_server: Any) -> None:
        """``ChatSelector`` asks the user's client and parses the step ids from its answer."""
        chat_server.reply = lambda body: '["summarize", "trim"]'
        client = openai.OpenAI(base_url=chat_server.base_url, api_key="k", max_retries=0)
        assert ChatSelector(client, model="small").select([{"id": "summarize"}], {"level": 2}) == ["summarize", "trim"]

    def test_a_client_needs_a_model_and_a_stranger_is_refused(self) -> None:
        """An SDK client without ``model`` and an object that is no client are refused with what to pass."""
        with pytest.raises(TypeError, match="needs model="):
            ChatSummarizer(openai.OpenAI(base_url="http://127.0.0.1:9/v1", api_key="k"))
        with pytest.raises(TypeError, match="is not a chat client"):
            ChatSummarizer(object(), model="m")


class TestAnthropicClient:
    def test_an_anthropic_client_summarizes(self) -> None:
        """An ``anthropic.Anthropic`` client gets the instructions as ``system`` and the transcript as the user turn."""
        with MessagesServer(reply=lambda body: "Summary from Claude.") as server:
            client = anthropic.Anthropic(base_url=server.base_url, api_key="k", max_retries=0)
            out, _ = _compact(ChatSummarizer(client, model="claude-small"))
        body = server.requests[0]
        assert body["model"] == "claude-small" and "condense" in body["system"]
        assert [m["role"] for m in body["messages"]] == ["user"]
        assert any(m.text.endswith("Summary from Claude.") for m in out if stage_of(m) == "summarize")


class TestStdlibRetries:
    def _endpoint(self, server: Any, **kw: Any) -> ChatEndpoint:
        endpoint = ChatEndpoint(server.base_url, "small", timeout=5, **kw)
        endpoint.sleep = self.waits.append  # record the waits instead of sleeping (no wall clock in tests)
        return endpoint

    def setup_method(self) -> None:
        self.waits: list[float] = []

    def test_429_then_success_honours_retry_after(self, chat_server: Any) -> None:
        """A 429 with Retry-After: 3 is retried after 3 seconds, and the summary arrives."""
        chat_server.fail_next(429, retry_after="3")
        text = ChatSummarizer(self._endpoint(chat_server)).summarize(conversation(1), 50)
        assert "found the bug" in text
        assert self.waits == [3.0] and len(chat_server.requests) == 2

    def test_5xx_backs_off_exponentially_within_the_cap(self, chat_server: Any) -> None:
        """Two 503s without Retry-After wait backoff, then twice it; a huge Retry-After is capped."""
        chat_server.fail_next(503, times=2)
        self._endpoint(chat_server, backoff=0.25).complete([{"role": "user", "content": "hi"}], 10)
        assert self.waits == [0.25, 0.5]
        chat_server.fail_next(429, retry_after="3600")
        self._endpoint(chat_server, max_retry_wait=4).complete([{"role": "user", "content": "hi"}], 10)
        assert self.waits[-1] == 4

    def test_retries_are_bounded_and_the_error_names_the_endpoint(self, chat_server: Any) -> None:
        """A server that keeps answering 429 is asked 1 + retries times, then the error names URL and attempts."""
        chat_server.fail_next(429, times=10, retry_after="1")
        with pytest.raises(SummarizerError, match=rf"{chat_server.base_url}/chat/completions answered HTTP 429 after 3 attempts"):
            self._endpoint(chat_server, retries=2).complete([{"role": "user", "content": "hi"}], 10)
        assert len(chat_server.requests) == 3 and self.waits == [1.0, 1.0]

    def test_client_errors_are_not_retried(self, chat_server: Any) -> None:
        """A 400 is the caller's mistake: one request, no wait."""
        chat_server.fail_next(400)
        with pytest.raises(SummarizerError, match="HTTP 400"):
            self._endpoint(chat_server).complete([{"role": "user", "content": "hi"}], 10)
        assert len(chat_server.requests) == 1 and self.waits == []

    def test_retry_after_forms(self) -> None:
        """Retry-After is read as seconds or as an HTTP date; garbage is ignored."""
        assert _retry_after("2.5") == 2.5
        assert _retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # a date in the past: no wait
        assert _retry_after("soon") is None and _retry_after(None) is None

    def test_yaml_keys_configure_the_retries(self, chat_server: Any) -> None:
        """``retries`` and ``max_retry_wait`` in the summarizer config reach the endpoint."""
        f = Compaction(steps=[{"kind": "summarize"}], summarizer={
            "type": "openai_chat", "base_url": chat_server.base_url, "model": "m", "retries": 0, "max_retry_wait": 1.5})
        assert (f.summarizer.endpoint.retries, f.summarizer.endpoint.max_retry_wait) == (0, 1.5)
