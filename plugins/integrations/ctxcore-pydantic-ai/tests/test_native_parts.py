"""Native (server-side) tool parts and compaction parts: counted as their JSON, given back as the original parts."""

from __future__ import annotations

from typing import Any

from ctxcore_counters.encodings import load_encoding
from ctxcore_pydantic_ai import ContextCapability, from_pydantic_ai, to_pydantic_ai
from ctxcore_pydantic_ai.convert import native_text
from pydantic_ai import Agent
from pydantic_ai.messages import (
    CompactionPart,
    ModelRequest,
    ModelResponse,
    NativeToolCallPart,
    NativeToolReturnPart,
    TextPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from ctxcore import Pipeline, TextBlock

PIPELINE = """
version: 1
model: {context_window: 100000, reserve_output_tokens: 100}
counter: {type: tiktoken, encoding: o200k_base}
providers: [{type: history}]
filters: [{type: token_budget}]
"""
ENC = load_encoding("o200k_base")


def search_turn() -> ModelResponse:
    """A web search run by the provider, its results, a compaction and the answer, as pydantic-ai records them."""
    return ModelResponse(parts=[
        NativeToolCallPart(tool_name="web_search", args={"query": "weather paris"}, tool_call_id="srvtoolu_1",
                           provider_name="anthropic"),
        NativeToolReturnPart(tool_name="web_search", tool_call_id="srvtoolu_1", provider_name="anthropic",
                             content=[{"url": "https://example.org/paris", "title": "Paris weather",
                                       "encrypted_content": "EqgfCioIARgB" * 20}]),
        CompactionPart(content="We discussed the weather in Paris.", provider_name="anthropic"),
        TextPart("Sunny in Paris."),
    ])


def history() -> list[Any]:
    return [ModelRequest(parts=[UserPromptPart("Weather in Paris?")]), search_turn(),
            ModelRequest(parts=[UserPromptPart("And tomorrow?")])]


def test_native_parts_are_text_blocks_of_their_json_in_place() -> None:
    """Each native call, return and compaction is one text block of its JSON, where the part is; the answer stays last."""
    _, turn, _ = from_pydantic_ai(history())
    parts = search_turn().parts
    assert turn.content == (*(TextBlock(text=native_text(p)) for p in parts[:3]), TextBlock(text="Sunny in Paris."))
    assert '"encrypted_content":"EqgfCioIARgB' in turn.content[1].text and '"name":"web_search"' in turn.content[0].text


def test_they_are_counted_through_the_agent() -> None:
    """Through a real Agent, the build counts the native parts' JSON on top of the answer's text, by tiktoken."""
    seen: list[list[Any]] = []

    def model(messages: list[Any], info: AgentInfo) -> ModelResponse:
        seen.append(messages)
        return ModelResponse(parts=[TextPart("Tomorrow too.")])

    reports = []
    turns = (search_turn(), ModelResponse(parts=[TextPart("Sunny in Paris.")]))
    for turn in turns:
        context = ContextCapability(Pipeline.from_string(PIPELINE))
        Agent(FunctionModel(model), capabilities=[context]).run_sync(
            "And tomorrow?", message_history=[ModelRequest(parts=[UserPromptPart("Weather in Paris?")]), turn])
        reports.append(context.last_report.total_tokens)
    natives = sum(len(ENC.encode_ordinary(native_text(p))) for p in search_turn().parts[:3])
    assert 0 <= reports[0] - reports[1] - natives <= 4  # the answer became one of several text blocks
    assert seen[0][1].parts[:3] == turns[0].parts[:3]  # the model got the original parts, not their text


def test_round_trip_gives_back_the_parts_and_never_their_text() -> None:
    """Unchanged: the very objects. A changed answer keeps every native part as it was and sends no JSON as text."""
    messages = history()
    converted = from_pydantic_ai(messages)
    assert all(a is b for a, b in zip(to_pydantic_ai(converted), messages, strict=True))
    shortened = converted[1].model_copy(update={"content": (*converted[1].content[:3], TextBlock(text="Sunny."))})
    (back,) = to_pydantic_ai([shortened])
    assert back.parts[:3] == messages[1].parts[:3] and back.parts[3] == TextPart("Sunny.")
    dropped = converted[1].model_copy(update={"content": "Sunny."})  # a filter that rewrote the whole text
    (back,) = to_pydantic_ai([dropped])
    assert [type(p).__name__ for p in back.parts] == ["NativeToolCallPart", "NativeToolReturnPart", "CompactionPart",
                                                      "TextPart"]
    assert not any(isinstance(p, TextPart) and p.content.startswith("{") for p in back.parts)


def test_anthropic_model_web_search_goes_back_byte_exact() -> None:
    """pydantic-ai's AnthropicModel (it streams) against the Anthropic stub: a signed web search comes back unchanged."""
    from anthropic import AsyncAnthropic
    from pydantic_ai.capabilities import NativeTool
    from pydantic_ai.models.anthropic import AnthropicModel
    from pydantic_ai.native_tools import WebSearchTool
    from pydantic_ai.providers.anthropic import AnthropicProvider

    from ctxcore.testing.harness.anthropic_server import MessagesServer, web_search_blocks

    search = web_search_blocks("srvtoolu_1", "weather paris", [("https://example.org/paris", "Paris weather")])

    def reply(body: dict[str, Any]) -> Any:
        return [*search, {"type": "text", "text": "Sunny."}] if len(body["messages"]) == 1 else "Tomorrow too."

    pipeline = Pipeline.from_string(PIPELINE.replace("providers:", "target: {provider: anthropic}\nproviders:"))
    context = ContextCapability(pipeline)
    with MessagesServer(reply=reply) as server:  # refuses a changed encrypted_content, as Anthropic does
        client = AsyncAnthropic(base_url=server.base_url, api_key="unused", max_retries=0)
        model = AnthropicModel("claude-sonnet-5-5", provider=AnthropicProvider(anthropic_client=client))
        agent = Agent(model, capabilities=[context, NativeTool(WebSearchTool())])
        first = agent.run_sync("Weather in Paris?")
        second = agent.run_sync("And tomorrow?", message_history=first.all_messages())
    assert all(body.get("stream") is True for body in server.requests)
    assert [type(p).__name__ for p in first.all_messages()[1].parts] == [
        "NativeToolCallPart", "NativeToolReturnPart", "TextPart"]
    assert second.output == "Tomorrow too." and server.requests[-1]["messages"][1]["content"][:2] == search
