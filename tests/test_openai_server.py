"""Tests for ctxcore.testing.harness.openai_server: the stub speaks the wire protocol the official openai client expects."""

from __future__ import annotations

import json

import openai
import pytest

from ctxcore.testing.harness.openai_server import ChatServer


def _client(server: ChatServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="sk-unused", max_retries=0, timeout=10)


class TestChatServer:
    def test_text_reply_parses_with_the_official_client(self) -> None:
        """A text reply comes back as a ChatCompletion; the request body is recorded as sent."""
        with ChatServer(reply=lambda body: f"echo {body['messages'][-1]['content']}") as server:
            done = _client(server).chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        assert done.choices[0].message.content == "echo hi"
        assert done.choices[0].finish_reason == "stop"
        assert server.requests == [{"model": "m", "messages": [{"role": "user", "content": "hi"}]}]
        assert {k.lower(): v for k, v in server.headers[0].items()}["authorization"] == "Bearer sk-unused"

    def test_tool_call_reply(self) -> None:
        """A reply dict with tool_calls reaches the client as tool calls with finish_reason tool_calls."""
        call = {"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": json.dumps({"path": "a"})}}
        with ChatServer(reply=lambda body: {"tool_calls": [call]}) as server:
            done = _client(server).chat.completions.create(model="m", messages=[{"role": "user", "content": "read a"}])
        choice = done.choices[0]
        assert choice.finish_reason == "tool_calls"
        assert choice.message.tool_calls is not None
        assert choice.message.tool_calls[0].function.name == "read_file"
        assert choice.message.content is None

    def test_validate_refuses_an_orphan_tool_result_like_openai(self) -> None:
        """With validate=True a tool result without its call is a 400 BadRequestError naming the message."""
        messages = [{"role": "system", "content": "s"}, {"role": "tool", "tool_call_id": "c1", "content": "x"},
                    {"role": "user", "content": "u"}]
        with ChatServer(validate=True) as server, pytest.raises(openai.BadRequestError) as err:
            _client(server).chat.completions.create(model="m", messages=messages)
        assert err.value.status_code == 400
        assert "Invalid parameter" in str(err.value) and "message 1" in str(err.value)

    def test_context_window_refuses_a_long_prompt(self) -> None:
        """A prompt longer than context_window is refused with code context_length_exceeded."""
        def count(body: dict) -> int:
            return sum(len(m["content"]) for m in body["messages"])

        with ChatServer(context_window=10, count=count) as server:
            client = _client(server)
            ok = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "short"}])
            with pytest.raises(openai.BadRequestError) as err:
                client.chat.completions.create(model="m", messages=[{"role": "user", "content": "far too long"}])
        assert ok.usage is not None and ok.usage.prompt_tokens == 5
        assert err.value.code == "context_length_exceeded"
        assert "maximum context length is 10 tokens" in str(err.value)

    def test_unknown_route_is_404(self) -> None:
        """Only /v1/chat/completions is served; another path is an HTTP 404 the client raises."""
        with ChatServer() as server, pytest.raises(openai.NotFoundError):
            _client(server).embeddings.create(model="m", input="x")

    def test_context_window_needs_a_counter(self) -> None:
        """context_window without count is refused up front, naming the missing argument."""
        with pytest.raises(ValueError, match="needs count"):
            ChatServer(context_window=10)


class TestResponsesRoute:
    def test_a_reply_becomes_output_items_the_client_parses(self) -> None:
        """POST /v1/responses answers with message and function_call output items the SDK's Response parses."""
        reply = {"content": "Checking.", "tool_calls": [{"id": "call_1", "type": "function",
                                                          "function": {"name": "lookup", "arguments": "{}"}}]}
        with ChatServer(reply=lambda body: reply) as server:
            response = _client(server).responses.create(model="m", input=[{"role": "user", "content": "q"}])
        assert [o.type for o in response.output] == ["message", "function_call"]
        assert response.output[1].call_id == "call_1"

    def test_an_output_without_its_call_is_refused(self) -> None:
        """A function_call_output whose call_id no function_call has gets the API's 400."""
        with ChatServer() as server, pytest.raises(openai.BadRequestError, match="No tool call found"):
            _client(server).responses.create(model="m", input=[
                {"role": "user", "content": "q"}, {"type": "function_call_output", "call_id": "call_9", "output": "x"}])
