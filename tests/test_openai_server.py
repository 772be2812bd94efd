"""Tests for ctxcore.testing.harness.openai_server: the stub speaks the wire protocol the official openai client expects."""

from __future__ import annotations

import json

import openai
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctxcore.testing.harness.openai_server import ChatServer
from ctxcore.testing.harness.openai_sse import chat_chunks, response_events


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


def _without_clock(dumped: dict) -> dict:
    """A dumped response or completion without its creation time (two requests may straddle a second)."""
    return {k: v for k, v in dumped.items() if k not in ("created_at", "created")}


_CALLING = {"content": "Checking the archive now.", "tool_calls": [
    {"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": json.dumps({"topic": "ünïcode tópic"})}},
    {"id": "call_2", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}]}


class TestStreaming:
    """``"stream": true``: the same answer as the real API's server-sent events, parsed by the official client."""

    def test_responses_stream_events_parse_and_complete_to_the_unstreamed_response(self) -> None:
        """create(stream=True): typed events in the API's order, deltas join to the text, response.completed == unstreamed."""
        from openai.types.responses import (
            ResponseCompletedEvent,
            ResponseCreatedEvent,
            ResponseFunctionCallArgumentsDeltaEvent,
            ResponseOutputItemAddedEvent,
            ResponseOutputItemDoneEvent,
            ResponseTextDeltaEvent,
        )

        with ChatServer(reply=lambda body: _CALLING) as server:
            events = list(_client(server).responses.create(model="m", input="q", stream=True))
        with ChatServer(reply=lambda body: _CALLING) as plain_server:
            plain = _client(plain_server).responses.create(model="m", input="q")
        assert server.requests == [{"model": "m", "input": "q", "stream": True}]
        assert [e.sequence_number for e in events] == list(range(len(events)))
        assert isinstance(events[0], ResponseCreatedEvent) and events[0].response.status == "in_progress"
        assert events[0].response.output == [] and events[0].response.id == plain.id
        added = [e for e in events if isinstance(e, ResponseOutputItemAddedEvent)]
        done = [e for e in events if isinstance(e, ResponseOutputItemDoneEvent)]
        assert [e.item.type for e in added] == [e.item.type for e in done] == ["message", "function_call", "function_call"]
        assert [e.output_index for e in added] == [e.output_index for e in done] == [0, 1, 2]
        assert [e.item for e in done] == plain.output
        deltas = [e.delta for e in events if isinstance(e, ResponseTextDeltaEvent)]
        assert len(deltas) == 4 and "".join(deltas) == "Checking the archive now."
        arguments = [e.delta for e in events if isinstance(e, ResponseFunctionCallArgumentsDeltaEvent) and e.output_index == 1]
        assert len(arguments) > 1 and "".join(arguments) == _CALLING["tool_calls"][0]["function"]["arguments"]
        assert isinstance(events[-1], ResponseCompletedEvent)
        assert _without_clock(events[-1].response.model_dump()) == _without_clock(plain.model_dump())

    def test_the_clients_stream_helper_accumulates_the_same_response(self) -> None:
        """client.responses.stream(): the helper's snapshot checks pass and get_final_response() is the unstreamed answer."""
        with ChatServer(reply=lambda body: _CALLING) as server:
            with _client(server).responses.stream(model="m", input="q") as stream:
                kinds = [event.type for event in stream]
                final = stream.get_final_response()
        with ChatServer(reply=lambda body: _CALLING) as plain_server:
            plain = _client(plain_server).responses.create(model="m", input="q")
        assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
        assert "response.output_text.done" in kinds and "response.function_call_arguments.done" in kinds
        assert final.id == plain.id and final.output_text == plain.output_text == "Checking the archive now."

        def items(output: list) -> list:
            return [(o.type, o.id, o.status, getattr(o, "call_id", None), getattr(o, "arguments", None)) for o in output]

        assert items(final.output) == items(plain.output) and len(final.output) == 3
        assert server.requests[0]["stream"] is True and server.requests[0]["input"] == plain_server.requests[0]["input"]

    def test_a_refused_streamed_request_is_the_json_error(self) -> None:
        """A stream that the API would refuse is the same HTTP 400 JSON error, raised before any event."""
        with ChatServer() as server, pytest.raises(openai.BadRequestError, match="No tool call found"):
            _client(server).responses.create(model="m", stream=True, input=[
                {"role": "user", "content": "q"}, {"type": "function_call_output", "call_id": "call_9", "output": "x"}])
        assert len(server.requests) == 1

    def test_chat_completion_chunks_join_to_the_unstreamed_message(self) -> None:
        """chat.completions stream: chunks end at [DONE], join to the same message; include_usage adds the usage chunk."""
        messages = [{"role": "user", "content": "q"}]
        with ChatServer(reply=lambda body: _CALLING) as server:
            client = _client(server)
            plain = client.chat.completions.create(model="m", messages=messages)
            chunks = list(client.chat.completions.create(model="m", messages=messages, stream=True,
                                                         stream_options={"include_usage": True}))
            with client.chat.completions.stream(model="m", messages=messages) as stream:
                for _ in stream:
                    pass
                final = stream.get_final_completion()
        assert all(c.object == "chat.completion.chunk" and c.id == chunks[0].id for c in chunks)
        assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == plain.choices[0].message.content
        assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "tool_calls"
        assert chunks[-1].choices == [] and chunks[-1].usage == plain.usage
        message = final.choices[0].message
        assert message.content == plain.choices[0].message.content and final.choices[0].finish_reason == "tool_calls"
        assert [(c.id, c.function.name, c.function.arguments) for c in message.tool_calls or []] == [
            (c.id, c.function.name, c.function.arguments) for c in plain.choices[0].message.tool_calls or []]


@given(text=st.text(min_size=1), arguments=st.text())
def test_stream_pieces_join_back_to_the_answer(text: str, arguments: str) -> None:
    """For any text and arguments, the deltas of both stream forms join back to the whole answer, in order."""
    response = {"id": "r", "object": "response", "output": [
        {"type": "message", "id": "m", "role": "assistant", "status": "completed",
         "content": [{"type": "output_text", "text": text, "annotations": []}]},
        {"type": "function_call", "id": "f", "call_id": "c", "name": "n", "arguments": arguments, "status": "completed"}]}
    events = response_events(response)
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    assert "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta") == text
    assert "".join(e["delta"] for e in events if e["type"] == "response.function_call_arguments.delta") == arguments
    assert events[-1] == {"type": "response.completed", "sequence_number": len(events) - 1, "response": response}
    completion = {"id": "c", "created": 0, "model": "m", "usage": {}, "choices": [{"index": 0, "finish_reason": "stop", "message": {
        "role": "assistant", "content": text,
        "tool_calls": [{"id": "c", "type": "function", "function": {"name": "n", "arguments": arguments}}]}}]}
    deltas = [c["choices"][0]["delta"] for c in chat_chunks(completion)]
    assert "".join(d.get("content") or "" for d in deltas) == text
    assert "".join(d["tool_calls"][0]["function"]["arguments"] for d in deltas if "tool_calls" in d) == arguments
