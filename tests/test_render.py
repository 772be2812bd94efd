"""Tests for ctxcore.render: to_anthropic and validate_request for both providers."""

from __future__ import annotations

import pytest

from ctxcore.engine.builder import BuiltContext
from ctxcore.engine.report import BuildReport
from ctxcore.errors import InvalidHistory
from ctxcore.model.messages import (
    ImageBlock,
    Message,
    TextBlock,
    ToolCall,
    ai,
    human,
    system,
    tool,
)
from ctxcore.render import to_anthropic, to_openai, validate_request


def call(*ids: str, text: str | None = None) -> Message:
    return ai(text, tool_calls=[{"id": i, "name": "read_file", "arguments": {"path": i}} for i in ids])


class TestToAnthropic:
    def test_system_separated_and_tools_as_blocks(self) -> None:
        """System text goes to 'system'; calls become tool_use and results tool_result blocks in a user turn."""
        msgs = [system("persona"), human("fix it"), call("a", "b", text="Reading."),
                tool("B", tool_call_id="b"), tool("A", tool_call_id="a"), ai("done")]
        body = to_anthropic(msgs)
        assert body["system"] == [{"type": "text", "text": "persona"}]
        assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user", "assistant"]
        assistant = body["messages"][1]["content"]
        assert assistant[0] == {"type": "text", "text": "Reading."}
        assert assistant[1] == {"type": "tool_use", "id": "a", "name": "read_file", "input": {"path": "a"}}
        results = body["messages"][2]["content"]
        assert [(b["type"], b["tool_use_id"]) for b in results] == [("tool_result", "b"), ("tool_result", "a")]
        assert results[0]["content"] == [{"type": "text", "text": "B"}]

    def test_consecutive_same_role_merged(self) -> None:
        """Two user messages in a row become one user turn (strict alternation); tool results come first."""
        msgs = [human("q"), call("a"), tool("r", tool_call_id="a"), human("and also"), human("this")]
        body = to_anthropic(msgs)
        assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
        assert [b["type"] for b in body["messages"][2]["content"]] == ["tool_result", "text", "text"]

    def test_images_and_no_system_key_without_system(self) -> None:
        """A data-URL image becomes a base64 source, a URL a url source; no system key when there is none."""
        msgs = [human([TextBlock(text="look"), ImageBlock(url="data:image/png;base64,AAAA"), ImageBlock(url="https://x/y.png")])]
        body = to_anthropic(msgs)
        assert "system" not in body
        blocks = body["messages"][0]["content"]
        assert blocks[1]["source"] == {"type": "base64", "media_type": "image/png", "data": "AAAA"}
        assert blocks[2]["source"] == {"type": "url", "url": "https://x/y.png"}

    def test_blank_assistant_is_omitted(self) -> None:
        """An assistant message with no text and no calls carries nothing and is left out."""
        body = to_anthropic([human("a"), ai(""), human("b")])
        assert [m["role"] for m in body["messages"]] == ["user"]

    def test_built_context_renders_both(self) -> None:
        """BuiltContext offers to_openai() and to_anthropic()."""
        built = BuiltContext(messages=(system("s"), human("hi")), report=BuildReport())
        assert built.to_openai() == to_openai(built.messages)
        assert built.to_anthropic()["messages"] == [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]


class TestValidateBoth:
    @pytest.mark.parametrize("provider", ["openai", "anthropic"])
    def test_legal_request_passes(self, provider: str) -> None:
        """A legal conversation with parallel calls answered in any order passes."""
        validate_request([system("s"), human("q"), call("a", "b"), tool("2", tool_call_id="b"),
                          tool("1", tool_call_id="a"), ai("ok")], provider)

    @pytest.mark.parametrize("provider", ["openai", "anthropic"])
    def test_leading_tool_result(self, provider: str) -> None:
        """A tool result with no call before it is rejected at its index."""
        with pytest.raises(InvalidHistory) as info:
            validate_request([system("s"), tool("r", tool_call_id="a"), human("q")], provider)
        assert info.value.index == 1

    @pytest.mark.parametrize("provider", ["openai", "anthropic"])
    def test_unanswered_call(self, provider: str) -> None:
        """A call not answered before the next message is rejected at the call's index."""
        with pytest.raises(InvalidHistory, match="not answered") as info:
            validate_request([human("q"), call("a"), human("next")], provider)
        assert info.value.index == 1

    @pytest.mark.parametrize("provider", ["openai", "anthropic"])
    def test_duplicate_ids(self, provider: str) -> None:
        """Repeated call ids in one message are rejected."""
        msg = Message(role="assistant", tool_calls=(ToolCall(id="a", name="f"), ToolCall(id="a", name="g")))
        with pytest.raises(InvalidHistory, match="repeat"):
            validate_request([human("q"), msg, tool("r", tool_call_id="a")], provider)

    def test_accepts_openai_dicts(self) -> None:
        """OpenAI dicts are validated like messages; a malformed one is named by index."""
        validate_request([{"role": "user", "content": "hi"}])
        with pytest.raises(InvalidHistory) as info:
            validate_request([{"role": "user", "content": "hi"}, {"content": "no role"}])
        assert info.value.index == 1

    def test_unknown_provider(self) -> None:
        """Only the two known providers are accepted."""
        with pytest.raises(ValueError, match="unknown provider"):
            validate_request([human("q")], "gemini")


class TestValidateOpenAI:
    def test_assistant_first_is_allowed(self) -> None:
        """OpenAI does not require the user to speak first."""
        validate_request([system("s"), ai("hello"), human("hi")], "openai")

    def test_image_outside_user_rejected(self) -> None:
        """Images are only accepted in user messages."""
        with pytest.raises(InvalidHistory, match="only in user") as info:
            validate_request([human("q"), call("a"), tool([ImageBlock(url="https://x")], tool_call_id="a")], "openai")
        assert info.value.index == 2

    def test_assistant_needs_content_or_calls(self) -> None:
        """An assistant message with neither content nor calls is rejected."""
        with pytest.raises(InvalidHistory, match="content or tool calls"):
            validate_request([human("q"), ai(None)], "openai")


class TestValidateAnthropic:
    def test_first_message_must_be_user(self) -> None:
        """After the system prompt the first message must come from the user."""
        with pytest.raises(InvalidHistory, match="first message") as info:
            validate_request([system("s"), ai("hello"), human("hi")], "anthropic")
        assert info.value.index == 1

    def test_needs_a_message(self) -> None:
        """A request with only system messages is rejected."""
        with pytest.raises(InvalidHistory, match="at least one user message"):
            validate_request([system("s")], "anthropic")

    def test_empty_user_message(self) -> None:
        """A blank user message is rejected (Anthropic refuses empty text)."""
        with pytest.raises(InvalidHistory, match="empty") as info:
            validate_request([human("q"), ai("a"), human("  ")], "anthropic")
        assert info.value.index == 2

    def test_arguments_must_be_an_object(self) -> None:
        """tool_use input must be a JSON object."""
        msg = Message(role="assistant", tool_calls=(ToolCall(id="a", name="f", arguments="[1, 2]"),))
        with pytest.raises(InvalidHistory, match="JSON object"):
            validate_request([human("q"), msg, tool("r", tool_call_id="a")], "anthropic")

    def test_id_pattern(self) -> None:
        """Call ids must match Anthropic's pattern."""
        with pytest.raises(InvalidHistory, match="does not match"):
            validate_request([human("q"), call("call.1"), tool("r", tool_call_id="call.1")], "anthropic")

    def test_image_in_tool_result_allowed(self) -> None:
        """Anthropic accepts images inside tool results."""
        validate_request([human("q"), call("a"), tool([ImageBlock(url="https://x")], tool_call_id="a")], "anthropic")
