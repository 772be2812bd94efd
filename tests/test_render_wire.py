"""Wire-level rules the providers enforce that ``to_anthropic`` / ``validate_request`` must honour.

Each test names a rejection the real API returns (400 invalid_request_error):

- Anthropic: "`tool_use` ids must be unique" (across the whole request, not per message);
- Anthropic: "final assistant content cannot end with trailing whitespace";
- Anthropic: a document's base64 ``data`` is the bare base64 text, not a ``data:`` URL;
- OpenAI: "Invalid 'messages[i].name': string does not match pattern '^[a-zA-Z0-9_-]+$'";
- OpenAI: "Invalid 'messages[i].content': empty array. Expected an array with minimum length 1".

The property test checks the rendered Anthropic body against an independent
checker of those rules for every history ``validate_request`` accepts.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxcore.errors import InvalidHistory
from ctxcore.model.messages import (
    FileBlock,
    ImageBlock,
    Message,
    TextBlock,
    ai,
    human,
    system,
    tool,
)
from ctxcore.render import to_anthropic, validate_request


def call(*ids: str, text: str | None = None) -> Message:
    return ai(text, tool_calls=[{"id": i, "name": "read_file", "arguments": {"path": i}} for i in ids])


def check_anthropic_body(body: dict[str, Any]) -> None:
    """An independent check of the Messages API rules (raises AssertionError naming the rule)."""
    msgs = body["messages"]
    assert msgs and msgs[0]["role"] == "user", "first message from the user"
    seen: set[str] = set()
    for k, m in enumerate(msgs):
        assert k == 0 or m["role"] != msgs[k - 1]["role"], "roles alternate"
        assert m["content"], "non-empty content"
        kinds = [b["type"] for b in m["content"]]
        n = kinds.count("tool_result")
        assert kinds[:n] == ["tool_result"] * n, "tool_result blocks come first"
        if m["role"] == "user":
            uses = [b["id"] for b in msgs[k - 1]["content"] if b["type"] == "tool_use"] if k else []
            results = [b["tool_use_id"] for b in m["content"] if b["type"] == "tool_result"]
            assert sorted(uses) == sorted(results), "every tool_use answered in the next user message"
        for b in m["content"]:
            if b["type"] == "text":
                assert b["text"].strip(), "text blocks are non-blank"
            if b["type"] == "tool_use":
                assert b["id"] not in seen, "tool_use ids must be unique"
                seen.add(b["id"])
    last = msgs[-1]
    if last["role"] == "assistant" and last["content"][-1]["type"] == "text":
        text = last["content"][-1]["text"]
        assert text == text.rstrip(), "final assistant content cannot end with trailing whitespace"


class TestAnthropicWire:
    def test_tool_use_ids_unique_across_the_request(self) -> None:
        """Two rounds reusing 'call_0' (common with local models) get distinct ids, results renamed alike."""
        msgs = [human("q"), call("call_0"), tool("one", tool_call_id="call_0"), ai("next"),
                human("again"), call("call_0", "call_0_2"), tool("two", tool_call_id="call_0"),
                tool("three", tool_call_id="call_0_2")]
        validate_request(msgs, "anthropic")
        body = to_anthropic(msgs)
        check_anthropic_body(body)
        uses = [b["id"] for m in body["messages"] for b in m["content"] if b["type"] == "tool_use"]
        assert uses[0] == "call_0" and len(set(uses)) == 3
        last = body["messages"][-1]["content"]
        assert [b["tool_use_id"] for b in last] == uses[1:]
        assert last[0]["content"] == [{"type": "text", "text": "two"}]

    def test_final_assistant_trailing_whitespace_stripped(self) -> None:
        """A request ending with an assistant turn (prefill) is sent without trailing whitespace."""
        body = to_anthropic([human("q"), ai("Sure, here it is:\n ")])
        assert body["messages"][-1]["content"] == [{"type": "text", "text": "Sure, here it is:"}]
        # Only the final turn: earlier assistant text is sent as written.
        body = to_anthropic([human("q"), ai("a \n"), human("r")])
        assert body["messages"][1]["content"] == [{"type": "text", "text": "a \n"}]

    def test_file_data_url_becomes_bare_base64(self) -> None:
        """OpenAI's file_data is a data: URL; Anthropic wants the media type and the bare base64."""
        body = to_anthropic([human([TextBlock(text="read"), FileBlock(file_data="data:application/pdf;base64,JVBERi0x",
                                                                      filename="a.pdf")])])
        doc = body["messages"][0]["content"][1]
        assert doc == {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0x"}}


class TestOpenAIWire:
    def test_name_must_match_openai_pattern(self) -> None:
        """A participant name with a space or a dot is refused at its index (OpenAI returns 400)."""
        validate_request([human("hi", name="bob_1-x")], "openai")
        for bad in ("Bob Smith", "a.b"):
            with pytest.raises(InvalidHistory, match="name") as info:
                validate_request([system("s"), human("hi", name=bad)], "openai")
            assert info.value.index == 1

    def test_empty_content_array_rejected(self) -> None:
        """Content given as an empty list of parts is refused (OpenAI needs at least one part)."""
        with pytest.raises(InvalidHistory, match="empty") as info:
            validate_request([human("q"), ai("a"), human([])], "openai")
        assert info.value.index == 2
        with pytest.raises(InvalidHistory, match="empty"):
            validate_request([{"role": "user", "content": []}], "openai")


TEXT = st.text(alphabet="ab \n", max_size=6)


@st.composite
def histories(draw: st.DrawFn) -> list[Message]:
    msgs: list[Message] = [system("s")] if draw(st.booleans()) else []
    for turn in range(draw(st.integers(0, 10))):
        kind = draw(st.sampled_from(["user", "assistant", "tools", "image", "system"]))
        if kind == "user":
            msgs.append(human(draw(TEXT)))
        elif kind == "image":
            msgs.append(human([ImageBlock(url="data:image/png;base64,AAAA")]))
        elif kind == "assistant":
            msgs.append(ai(draw(TEXT)))
        elif kind == "system":
            msgs.append(system(draw(TEXT)))
        else:
            ids = list(dict.fromkeys(draw(st.lists(st.sampled_from(["call_0", "call_1", f"c{turn}"]), min_size=1, max_size=2))))
            msgs.append(call(*ids, text=draw(st.sampled_from([None, "", " ", "x "]))))
            msgs.extend(tool(draw(TEXT), tool_call_id=i) for i in draw(st.permutations(ids)))
    return msgs


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories())
def test_every_validated_request_renders_to_what_anthropic_accepts(msgs: list[Message]) -> None:
    """Whatever validate_request(anthropic) accepts, to_anthropic renders as a body the API accepts."""
    try:
        validate_request(msgs, "anthropic")
    except InvalidHistory:
        return
    check_anthropic_body(to_anthropic(msgs))


class TestBlankUserMessages:
    """A blank user message in the past (e.g. "" sent after tool results) must not poison every later build."""

    def _history(self):
        from ctxcore.model.messages import ai, human, system, tool

        call = ai(tool_calls=[{"id": "c1", "name": "read_file", "arguments": {"path": "a.py"}}])
        return [system("s"), human("read a.py"), call, tool("print(1)", tool_call_id="c1"), human(""),
                ai("It prints 1."), human("thanks, now b.py?")]

    def test_a_past_blank_user_message_is_left_out_for_anthropic(self) -> None:
        from ctxcore.render import to_anthropic, validate_request

        msgs = self._history()
        validate_request(msgs, "anthropic")
        body = to_anthropic(msgs)
        roles = [m["role"] for m in body["messages"]]
        assert roles == ["user", "assistant", "user", "assistant", "user"]
        for m in body["messages"]:
            for block in m["content"]:
                assert block["type"] != "text" or block["text"].strip(), "Anthropic rejects empty text blocks"

    def test_a_blank_current_user_message_is_still_refused(self) -> None:
        from ctxcore.errors import InvalidHistory
        from ctxcore.model.messages import human
        from ctxcore.render import validate_request

        msgs = self._history()[:-1] + [human("   ")]
        with pytest.raises(InvalidHistory, match="empty content") as info:
            validate_request(msgs, "anthropic")
        assert info.value.index == len(msgs) - 1


class TestAnthropicImageTypes:
    """Anthropic takes base64 images as image/jpeg, image/png, image/gif or image/webp only."""

    def _with_image(self, url: str):
        from ctxcore.model.messages import ImageBlock, TextBlock, human

        return [human([TextBlock(text="what is this?"), ImageBlock(url=url)])]

    def test_jpg_alias_is_sent_as_jpeg(self) -> None:
        from ctxcore.render import to_anthropic, validate_request

        msgs = self._with_image("data:image/jpg;base64,AAAA")
        validate_request(msgs, "anthropic")
        block = to_anthropic(msgs)["messages"][0]["content"][1]
        assert block["source"] == {"type": "base64", "media_type": "image/jpeg", "data": "AAAA"}

    def test_unsupported_type_is_refused_with_the_index(self) -> None:
        from ctxcore.errors import InvalidHistory
        from ctxcore.render import validate_request

        with pytest.raises(InvalidHistory, match="image/bmp") as info:
            validate_request(self._with_image("data:image/bmp;base64,AAAA"), "anthropic")
        assert info.value.index == 0

    def test_http_urls_are_passed_as_url_sources(self) -> None:
        from ctxcore.render import to_anthropic, validate_request

        msgs = self._with_image("https://example.com/cat.png")
        validate_request(msgs, "anthropic")
        assert to_anthropic(msgs)["messages"][0]["content"][1]["source"] == {"type": "url", "url": "https://example.com/cat.png"}
