"""Anthropic, completely: ``Message.from_anthropic``, tools in ``to_anthropic``, and the real SDK accepting both.

Requests are checked three ways: against the ``anthropic`` SDK's typed params
(validated with pydantic, every key kept, so an unknown or missing key fails),
against the wire rules of the local Messages API stub, and by sending them with
``client.messages.create`` to that stub. ``to_openai_responses`` is checked
against the ``openai`` SDK's ``responses.create`` params the same way.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from anthropic import Anthropic
from anthropic.types import Message as AnthropicMessage
from anthropic.types.message_create_params import MessageCreateParamsNonStreaming
from ctxcore_counters import ApproximateCounter
from hypothesis import HealthCheck, given, settings
from openai.types.responses.response_create_params import ResponseCreateParamsNonStreaming
from pydantic import TypeAdapter

from ctxcore import BuiltContext, ContextBuilder, FileBlock, ImageBlock, Message, TextBlock, ai, human, system, tool
from ctxcore.errors import InvalidHistory
from ctxcore.model.anthropic_io import ANTHROPIC_CONTENT_KEY, messages_from_anthropic
from ctxcore.render import anthropic_tools, to_anthropic, to_openai_responses, validate_request
from ctxcore.testing.harness.anthropic_server import MessagesServer, sign, wire_problem
from tests.test_render_wire import histories

_ANTHROPIC = TypeAdapter(MessageCreateParamsNonStreaming)
_RESPONSES = TypeAdapter(ResponseCreateParamsNonStreaming)

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}


def _force(value: Any) -> Any:
    """Consume pydantic's lazy iterable validators so every item is really checked."""
    if isinstance(value, dict):
        return {k: _force(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_force(v) for v in value]
    if hasattr(value, "__next__"):
        return [_force(v) for v in value]
    return value


def sdk_accepts(adapter: TypeAdapter[Any], body: dict[str, Any]) -> None:
    """The SDK's typed params accept ``body`` and keep every key of it (TypedDicts ignore unknown keys)."""
    checked = _force(adapter.validate_python(body))
    assert checked == json.loads(json.dumps(body)), "a key the SDK's types do not know was dropped"


def anthropic_body(built_or_body: BuiltContext | dict[str, Any]) -> dict[str, Any]:
    body = built_or_body.to_anthropic() if isinstance(built_or_body, BuiltContext) else built_or_body
    return {"model": "claude-test", "max_tokens": 256, **body}


THINKING = {"type": "thinking", "thinking": "The user wants weather; call the tool.\n  ✓", "signature": "EqQBCkYIARgCKkD+/=="}
REDACTED = {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"}


class TestFromAnthropic:
    def test_text_and_image_and_document_user_turn(self) -> None:
        """A user turn's text, base64/url images and base64/file documents map to ctxcore blocks."""
        m = Message.from_anthropic({"role": "user", "content": [
            {"type": "text", "text": "Look"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}},
            {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}},
            {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBE"}},
            {"type": "document", "source": {"type": "file", "file_id": "file_1"}},
        ]})
        assert m.role == "user"
        assert m.content == (
            TextBlock(text="Look"),
            ImageBlock(url="data:image/png;base64,AAAA"),
            ImageBlock(url="https://example.com/a.png"),
            FileBlock(file_data="data:application/pdf;base64,JVBE"),
            FileBlock(file_id="file_1"),
        )
        rendered = to_anthropic([m])["messages"][0]["content"]
        assert rendered[1]["source"] == {"type": "base64", "media_type": "image/png", "data": "AAAA"}
        assert rendered[3]["source"] == {"type": "base64", "media_type": "application/pdf", "data": "JVBE"}
        assert rendered[4]["source"] == {"type": "file", "file_id": "file_1"}

    def test_tool_use_becomes_tool_calls(self) -> None:
        """An assistant's tool_use blocks become ToolCalls with the input as JSON text."""
        m = Message.from_anthropic({"role": "assistant", "content": [
            {"type": "text", "text": "Checking."},
            {"type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": {"city": "Paris"}},
        ]})
        assert m.text == "Checking."
        assert [(c.id, c.name, c.parsed_arguments()) for c in m.tool_calls] == [("toolu_01", "get_weather", {"city": "Paris"})]
        assert ANTHROPIC_CONTENT_KEY not in m.metadata  # nothing to keep verbatim without thinking

    def test_tool_results_become_tool_messages_with_is_error(self) -> None:
        """A user turn's tool_result blocks become untrusted tool messages; is_error survives the round trip."""
        made = messages_from_anthropic({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_01", "content": "18C", "is_error": False},
            {"type": "tool_result", "tool_use_id": "toolu_02", "content": [{"type": "text", "text": "no such city"}], "is_error": True},
            {"type": "text", "text": "And tomorrow?"},
        ]})
        assert [m.role for m in made] == ["tool", "tool", "user"]
        assert all(m.trust == "untrusted" for m in made[:2])
        history = [human("q"), ai(None, tool_calls=[{"id": "toolu_01", "name": "w", "arguments": {}},
                                                     {"id": "toolu_02", "name": "w", "arguments": {}}]), *made]
        validate_request(history, "anthropic")
        user = to_anthropic(history)["messages"][2]["content"]
        assert user[1] == {"type": "tool_result", "tool_use_id": "toolu_02",
                           "content": [{"type": "text", "text": "no such city"}], "is_error": True}
        with pytest.raises(ValueError, match="messages_from_anthropic"):
            Message.from_anthropic({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "a", "content": "x"}, {"type": "text", "text": "y"}]})

    def test_thinking_is_kept_byte_exact_and_sent_back_unchanged(self) -> None:
        """thinking and redacted_thinking blocks come back in the next request exactly as received, in order."""
        original = [THINKING, REDACTED, {"type": "text", "text": "Let me check."},
                    {"type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": {"city": "Paris"}}]
        reply = Message.from_anthropic({"role": "assistant", "content": json.loads(json.dumps(original))})
        history = [human("Weather in Paris?"), reply, tool("18C", tool_call_id="toolu_01")]
        sent = to_anthropic(history)["messages"][1]["content"]
        assert json.dumps(sent) == json.dumps(original)
        stored = Message.model_validate_json(reply.model_dump_json())  # as a checkpoint stores it
        assert json.dumps(to_anthropic([history[0], stored, history[2]])["messages"][1]["content"]) == json.dumps(original)
        assert "thinking" not in json.dumps(reply.to_openai())  # OpenAI never sees Anthropic's thinking

    def test_a_changed_message_is_rendered_from_its_fields(self) -> None:
        """Once a filter rewrites the message, the stale original blocks are not sent."""
        reply = Message.from_anthropic({"role": "assistant", "content": [THINKING, {"type": "text", "text": "long answer"}]})
        shorter = reply.model_copy(update={"content": "short"})
        assert to_anthropic([human("q"), shorter])["messages"][1]["content"] == [{"type": "text", "text": "short"}]

    def test_sdk_message_object_is_accepted(self) -> None:
        """An anthropic.types.Message (the client's return value) is read like its dict."""
        sdk = AnthropicMessage.model_validate({
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
            "content": [THINKING, {"type": "tool_use", "id": "toolu_9", "name": "f", "input": {}}],
            "stop_reason": "tool_use", "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1},
        })
        m = Message.from_anthropic(sdk)
        assert m.tool_call_ids == ("toolu_9",)
        assert m.metadata[ANTHROPIC_CONTENT_KEY][0] == THINKING

    @pytest.mark.parametrize(("data", "match"), [
        ({"role": "system", "content": "x"}, "role 'user' or 'assistant'"),
        ({"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "tool_result", "tool_use_id": "t"}]},
         r"content\[1\]: tool_result blocks must come before"),
        ({"role": "user", "content": [{"type": "image", "source": "f"}]}, r"content\[0\]: an image block needs a 'source' object"),
        ({"role": "user", "content": 3}, "'content' must be a string or a list"),
    ])
    def test_unrepresentable_input_is_refused_naming_the_block(self, data: dict[str, Any], match: str) -> None:
        """Anything ctxcore cannot represent raises ValueError naming the block index and the supported kinds."""
        with pytest.raises(ValueError, match=match):
            messages_from_anthropic(data)


class TestAnthropicTools:
    def test_openai_function_tools_become_anthropic_tools(self) -> None:
        """name, description and input_schema (from parameters); a parameterless tool gets the empty object schema."""
        tools = anthropic_tools([WEATHER, {"type": "function", "function": {"name": "now"}}])
        assert tools == [
            {"name": "get_weather", "description": "Current weather for a city.",
             "input_schema": WEATHER["function"]["parameters"]},  # type: ignore[index]
            {"name": "now", "input_schema": {"type": "object", "properties": {}}},
        ]
        with pytest.raises(ValueError, match=r"tools\[0\]: a tool needs a 'name'"):
            anthropic_tools([{"type": "function", "function": {}}])

    def test_built_context_carries_tools_into_both_renderings(self) -> None:
        """A build with tools renders them for Anthropic and for the Responses API; the SDK types accept both."""
        builder = ContextBuilder([_Fixed([system("Be brief."), human("Weather in Paris?")])], counter=ApproximateCounter(), tools=[WEATHER])
        built = builder.build()
        assert built.tools == (WEATHER,)
        body = anthropic_body(built)
        assert body["tools"][0]["input_schema"]["required"] == ["city"]
        sdk_accepts(_ANTHROPIC, body)
        assert wire_problem(body) is None
        responses = {"model": "gpt-test", **built.to_openai_responses()}
        assert responses["tools"][0] == {"type": "function", "name": "get_weather", "description": "Current weather for a city.",
                                         "parameters": WEATHER["function"]["parameters"], "strict": False}  # type: ignore[index]
        sdk_accepts(_RESPONSES, responses)

    def test_build_without_tools_has_no_tools_key(self) -> None:
        """No tools, no ``tools`` key (the API rejects an empty list for some models)."""
        built = ContextBuilder([_Fixed([human("hi")])], counter=ApproximateCounter()).build()
        assert "tools" not in built.to_anthropic()
        assert "tools" not in built.to_openai_responses()


class TestAgainstTheStub:
    def test_tool_loop_with_thinking_through_the_official_client(self) -> None:
        """Two turns through client.messages.create: tools accepted, thinking re-sent with a valid signature."""
        def reply(body: dict[str, Any]) -> Any:
            last = body["messages"][-1]["content"]
            if isinstance(last, list) and last[0]["type"] == "tool_result":
                return "It is 18C in Paris."
            return [{"type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": {"city": "Paris"}}]

        builder = ContextBuilder([_Fixed([system("Be brief.")]), _State()], counter=ApproximateCounter(), tools=[WEATHER])
        history: list[Message] = [human("Weather in Paris?")]
        with MessagesServer(reply=reply, thinking=True) as server:
            client = Anthropic(base_url=server.base_url, api_key="unused", max_retries=0)
            first = client.messages.create(**anthropic_body(builder.build({"messages": history})))
            history.append(Message.from_anthropic(first))
            history.append(tool("18C", tool_call_id=history[-1].tool_calls[0].id))
            second = client.messages.create(**anthropic_body(builder.build({"messages": history})))
        assert second.content[-1].type == "text"
        resent = server.requests[1]["messages"][1]["content"]
        assert resent[0]["type"] == "thinking" and resent[0]["signature"] == sign(resent[0]["thinking"])
        assert server.requests[0]["tools"][0]["name"] == "get_weather"

    def test_a_streamed_answer_is_the_answer(self) -> None:
        """stream=True gets server-sent events the official client accumulates into the message a plain request gets."""
        from ctxcore.testing.harness.anthropic_server import compaction_block, web_search_blocks

        blocks = [*web_search_blocks("srvtoolu_1", "weather paris", [("https://example.org/p", "Paris")]),
                  compaction_block("We discussed Paris."), {"type": "text", "text": "It is sunny, 18C in Paris."},
                  {"type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": {"city": "Paris", "days": [1, 2]}}]
        body = {"model": "claude-test", "max_tokens": 64, "messages": [{"role": "user", "content": "Weather?"}],
                "tools": [{"type": "web_search_20250305", "name": "web_search"},
                          {"name": "get_weather", "input_schema": {"type": "object"}}]}
        with MessagesServer(reply=lambda b: blocks, thinking=True) as server:
            client = Anthropic(base_url=server.base_url, api_key="unused", max_retries=0).beta  # compaction is beta
            plain = client.messages.create(**body)
            with client.messages.stream(**body) as stream:
                streamed = stream.get_final_message()
            events = [e.type for e in client.messages.create(**body, stream=True)]
        # the same blocks (the stub's thinking names the request it answers)
        assert [b.to_dict() for b in streamed.content[1:]] == [b.to_dict() for b in plain.content[1:]]
        assert streamed.content[0].signature == sign(streamed.content[0].thinking)
        assert (streamed.stop_reason, streamed.usage.output_tokens) == (plain.stop_reason, plain.usage.output_tokens)
        assert streamed.content[0].type == "thinking" and streamed.stop_reason == "tool_use"
        assert events[0] == "message_start" and events[-2:] == ["message_delta", "message_stop"]
        assert events.count("content_block_start") == events.count("content_block_stop") == 6

    def test_stub_refuses_a_tampered_thinking_block(self) -> None:
        """The stub, like Anthropic, rejects a thinking block whose text changed (so the test above can fail)."""
        body = anthropic_body({"messages": [
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": [{"type": "thinking", "thinking": "x!", "signature": sign("x")}]},
            {"role": "user", "content": "more"},
        ]})
        assert "signature" in str(wire_problem(body))

    def test_stub_refuses_five_cache_breakpoints(self) -> None:
        """More than 4 cache_control blocks is a 400, as in the API."""
        block = {"type": "text", "text": "x", "cache_control": {"type": "ephemeral"}}
        body = anthropic_body({"messages": [{"role": "user", "content": [block] * 5}]})
        assert "maximum of 4" in str(wire_problem(body))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories())
def test_every_validated_history_is_accepted_by_the_sdk_types_and_the_stub(msgs: list[Message]) -> None:
    """Whatever validate_request(anthropic) accepts renders to a body the SDK's types and the stub's wire rules accept."""
    try:
        validate_request(msgs, "anthropic")
    except InvalidHistory:
        return
    body = anthropic_body(to_anthropic(msgs, [WEATHER]))
    sdk_accepts(_ANTHROPIC, body)
    assert wire_problem(body) is None
    sdk_accepts(_RESPONSES, {"model": "gpt-test", **to_openai_responses(msgs, [WEATHER])})


class TestOpenAIResponses:
    def test_items_in_order_with_function_calls_and_outputs(self) -> None:
        """Messages, then an assistant's function_call items, then function_call_output items by call_id."""
        msgs = [system("sys"), human([TextBlock(text="see"), ImageBlock(url="https://x/a.png", detail="low")]),
                ai("Reading.", tool_calls=[{"id": "call_1", "name": "read", "arguments": {"p": "a"}}]),
                tool("file text", tool_call_id="call_1"), ai("Done.")]
        body = to_openai_responses(msgs)
        assert body["input"] == [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": [{"type": "input_text", "text": "see"},
                                         {"type": "input_image", "image_url": "https://x/a.png", "detail": "low"}]},
            {"role": "assistant", "content": "Reading."},
            {"type": "function_call", "call_id": "call_1", "name": "read", "arguments": '{"p": "a"}'},
            {"type": "function_call_output", "call_id": "call_1", "output": "file text"},
            {"role": "assistant", "content": "Done."},
        ]
        sdk_accepts(_RESPONSES, {"model": "gpt-test", **body})


class _Fixed:
    def __init__(self, messages: list[Message]) -> None:
        self.messages = messages

    def get_messages(self, state: Any, runtime: Any) -> list[Message]:
        return self.messages


class _State:
    def get_messages(self, state: Any, runtime: Any) -> list[Message]:
        return list(state.get("messages", []))
