"""Provider blocks: every block and item type today's APIs send is ingested, built, counted and re-sent unchanged.

Histories are generated with every Anthropic block type (server tools and
their results, MCP, container uploads, search results, citations, compaction,
thinking, documents, images, a future type) and every Responses item type
(reasoning with encrypted content, hosted tool calls, MCP items, compaction,
developer messages, a future type). Each must come back from the renderer
byte-exact, be legal for the stub servers (which enforce the providers'
rules), be counted by its JSON, and be refused with a clear error by a
renderer for another API.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxcore import ContextBuilder, InvalidHistory, Message, validate_request
from ctxcore.engine.counting import MessageCounter
from ctxcore.model.anthropic_io import messages_from_anthropic
from ctxcore.model.blocks import (
    ProviderBlock,
    before_compaction,
    compaction_boundary,
    compaction_boundary_of,
    compaction_fold,
    without_provider_blocks,
)
from ctxcore.model.responses_io import assistant_from_output, messages_from_responses
from ctxcore.render import to_anthropic, to_openai_responses
from ctxcore.render.target import TargetSpec
from ctxcore.testing.harness.anthropic_server import compaction_block, sign, web_search_blocks, wire_problem
from ctxcore.testing.harness.responses_rules import compaction_item, reasoning_item, responses_input_problem

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
words = st.text(alphabet="abcdefghij klmnop", min_size=1, max_size=30).map(lambda s: f"w{s.strip()}")
ids = st.integers(0, 10**6).map(lambda n: f"id_{n}")


class _Fixed:
    def __init__(self, messages: list[Message]) -> None:
        self.messages = messages

    def get_messages(self, state: Any, runtime: Any) -> list[Message]:
        return list(self.messages)


class CharCounter(MessageCounter):
    """Counts one token per character, so a count can be compared with the JSON a block sends."""

    name = "chars"

    def count_text(self, text: str) -> int:
        return len(text)


# ------------------------------------------------------------------ Anthropic
def _server_pair(call_id: str, kind: str, query: str) -> list[dict[str, Any]]:
    if kind == "web_search":
        return web_search_blocks(call_id, query, [(f"https://example.org/{query}", query.title())])
    if kind == "mcp":
        return [{"type": "mcp_tool_use", "id": call_id, "name": "lookup", "server_name": "docs", "input": {"q": query}},
                {"type": "mcp_tool_result", "tool_use_id": call_id, "is_error": False,
                 "content": [{"type": "text", "text": query}]}]
    results = {
        "web_fetch": {"type": "web_fetch_result", "url": "https://example.org", "retrieved_at": "2026-01-01",
                      "content": {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": query}}},
        "code_execution": {"type": "code_execution_result", "stdout": query, "stderr": "", "return_code": 0, "content": []},
        "bash_code_execution": {"type": "bash_code_execution_result", "stdout": query, "stderr": "", "return_code": 0,
                                "content": []},
        "text_editor_code_execution": {"type": "text_editor_code_execution_view_result", "content": query,
                                       "file_type": "text", "num_lines": 1, "start_line": 1, "total_lines": 1},
        "tool_search": {"type": "tool_search_tool_search_result",
                        "tool_references": [{"type": "tool_reference", "tool_name": query}]},
        "advisor": {"type": "advisor_result", "text": query, "stop_reason": "end_turn"},
    }
    name = "tool_search_tool_regex" if kind == "tool_search" else kind
    return [{"type": "server_tool_use", "id": call_id, "name": name, "input": {"command": query}},
            {"type": f"{kind}_tool_result", "tool_use_id": call_id, "content": results[kind]}]


SERVER_KINDS = ["web_search", "web_fetch", "code_execution", "bash_code_execution", "text_editor_code_execution",
                "tool_search", "advisor", "mcp"]


@st.composite
def assistant_turn(draw: Any, n: int) -> dict[str, Any]:
    """An assistant turn mixing text (with citations), server tool pairs, compaction and a future block type."""
    blocks: list[dict[str, Any]] = []
    for k in range(draw(st.integers(1, 4))):
        choice = draw(st.sampled_from(["text", "cited", "server", "compaction", "future", "thinking", "redacted"]))
        text = draw(words)
        if choice == "text":
            blocks.append({"type": "text", "text": text})
        elif choice == "cited":
            blocks.append({"type": "text", "text": text, "citations": [
                {"type": "web_search_result_location", "url": "https://example.org", "title": "T",
                 "encrypted_index": "ZW5j", "cited_text": text}]})
        elif choice == "server":
            blocks.extend(_server_pair(f"srvtoolu_{n}_{k}", draw(st.sampled_from(SERVER_KINDS)), text))
        elif choice == "compaction":
            blocks.append(compaction_block(text))
        elif choice == "thinking":
            blocks.insert(0, {"type": "thinking", "thinking": text, "signature": sign(text)})
        elif choice == "redacted":
            blocks.insert(0, {"type": "redacted_thinking", "data": "ZW5jcnlwdGVk"})
        else:
            blocks.append({"type": "hologram_2031", "payload": {"text": text, "n": k}})
    if blocks[-1]["type"] == "text":
        blocks[-1] = {**blocks[-1], "text": blocks[-1]["text"].rstrip() or "w"}
    return {"role": "assistant", "content": blocks}


@st.composite
def user_turn(draw: Any) -> dict[str, Any]:
    """A user turn with text and any of: a search result, a container upload, a text document, an image."""
    blocks: list[dict[str, Any]] = [{"type": "text", "text": draw(words)}]
    for extra in draw(st.lists(st.sampled_from(["search", "upload", "document", "image"]), max_size=3, unique=True)):
        if extra == "search":
            blocks.append({"type": "search_result", "source": "kb://1", "title": "Doc", "citations": {"enabled": True},
                           "content": [{"type": "text", "text": draw(words)}]})
        elif extra == "upload":
            blocks.append({"type": "container_upload", "file_id": "file_011"})
        elif extra == "document":
            blocks.append({"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": draw(words)},
                           "citations": {"enabled": True}, "title": "notes"})
        else:
            blocks.append({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}})
    return {"role": "user", "content": blocks}


@st.composite
def anthropic_history(draw: Any) -> list[dict[str, Any]]:
    """Turns of every block type; the last user turn may carry the caller's cache mark (kept byte-exact)."""
    turns: list[dict[str, Any]] = []
    for n in range(draw(st.integers(1, 5))):
        turns.append(draw(user_turn()))
        turns.append(draw(assistant_turn(n)))
    last = draw(user_turn())
    control = draw(st.sampled_from([None, {"type": "ephemeral"}, {"type": "ephemeral", "ttl": "1h"}]))
    if control is not None:
        last["content"][0] = {**last["content"][0], "cache_control": control}
    turns.append(last)
    return turns


def _ingest(turns: list[dict[str, Any]]) -> list[Message]:
    return [m for t in turns for m in messages_from_anthropic(t)]


class TestAnthropicRoundTrip:
    @SETTINGS
    @given(anthropic_history())
    def test_every_block_type_comes_back_byte_exact(self, turns: list[dict[str, Any]]) -> None:
        """Ingest -> render gives the turns back exactly, in JSON, for every block type (signed ones included)."""
        body = to_anthropic(_ingest(turns))
        assert json.dumps(body["messages"], sort_keys=True) == json.dumps(turns, sort_keys=True)

    @SETTINGS
    @given(anthropic_history())
    def test_the_stub_accepts_the_rendered_history(self, turns: list[dict[str, Any]]) -> None:
        """The rendered request is legal for the stub (which checks pairs and signatures, as Anthropic does)."""
        messages = _ingest(turns)
        validate_request(messages, "anthropic")
        assert wire_problem({**to_anthropic(messages), "max_tokens": 64}) is None

    @SETTINGS
    @given(anthropic_history())
    def test_provider_blocks_are_counted_by_their_json(self, turns: list[dict[str, Any]]) -> None:
        """A message's count includes the exact JSON text of each of its provider blocks."""
        counter = CharCounter()
        for m in _ingest(turns):
            blocks = [b for b in (m.content if isinstance(m.content, tuple) else ()) if isinstance(b, ProviderBlock)]
            if blocks:
                plain = m.model_copy(update={"content": tuple(b for b in m.content if not isinstance(b, ProviderBlock))})
                extra = counter.count_message(m) - counter.count_message(plain)
                assert extra == sum(len(json.dumps(b.raw, ensure_ascii=False, separators=(",", ":"))) for b in blocks)

    def test_a_server_tool_history_refused_for_openai_chat_naming_the_block(self) -> None:
        """Rendering a web-search turn for OpenAI chat raises an error naming the block and the fix."""
        messages = _ingest([{"role": "user", "content": "q"},
                            {"role": "assistant", "content": [*web_search_blocks("srvtoolu_1", "q", [("u", "t")]),
                                                              {"type": "text", "text": "a"}]},
                            {"role": "user", "content": "more"}])
        with pytest.raises(InvalidHistory, match=r"message 1: a 'server_tool_use' block from the Anthropic Messages API "
                                                 r"cannot be sent to OpenAI.*without_provider_blocks"):
            validate_request(messages, "openai")
        with pytest.raises(ValueError, match="'server_tool_use' block"):
            messages[1].to_openai()
        with pytest.raises(InvalidHistory, match="cannot be sent to the OpenAI Responses API"):
            to_openai_responses(messages)
        stripped = without_provider_blocks(messages)
        validate_request(stripped, "openai")
        assert stripped[1].to_openai() == {"role": "assistant", "content": [{"type": "text", "text": "a"}]}

    def test_a_server_tool_call_without_its_result_is_refused(self) -> None:
        """An assistant turn with a server_tool_use but no result fails validation, as the API's 400 does."""
        turns = [{"role": "user", "content": "q"},
                 {"role": "assistant", "content": [web_search_blocks("srvtoolu_1", "q", [])[0], {"type": "text", "text": "a"}]},
                 {"role": "user", "content": "more"}]
        with pytest.raises(InvalidHistory, match="server tool call 'srvtoolu_1' has no result block"):
            validate_request(_ingest(turns), "anthropic")
        assert "without a corresponding result block" in str(wire_problem({"max_tokens": 5, "messages": turns}))

    def test_a_changed_signed_block_is_refused_by_the_stub(self) -> None:
        """The stub refuses a compaction block or search result whose signed bytes changed."""
        block = compaction_block("summary")
        turns = [{"role": "user", "content": "q"}, {"role": "assistant", "content": [{**block, "content": "summary!"}]},
                 {"role": "user", "content": "go"}]
        assert "Invalid `signature` in `compaction` block" in str(wire_problem({"max_tokens": 5, "messages": turns}))

    def test_an_edited_turn_renders_its_blocks_from_the_fields(self) -> None:
        """A turn changed by a filter loses the verbatim copy but still sends its provider blocks in order."""
        turn = {"role": "assistant", "content": [{"type": "text", "text": "Looking.", "citations": []},
                                                 *web_search_blocks("srvtoolu_1", "q", [("u", "t")]),
                                                 {"type": "text", "text": "Found."}]}
        m = messages_from_anthropic(turn)[0]
        edited = m.model_copy(update={"content": (*m.content[:-1], m.content[-1].model_copy(update={"text": "Found it."}))})
        sent = to_anthropic([Message(role="user", content="q"), edited])["messages"][1]["content"]
        assert [b["type"] for b in sent] == ["text", "server_tool_use", "web_search_tool_result", "text"]
        assert sent[-1]["text"] == "Found it." and sent[1:3] == turn["content"][1:3]


# ------------------------------------------------------------ OpenAI Responses
HOSTED = {
    "web_search_call": lambda n: {"type": "web_search_call", "id": f"ws_{n}", "status": "completed",
                                  "action": {"type": "search", "query": "q"}},
    "file_search_call": lambda n: {"type": "file_search_call", "id": f"fs_{n}", "status": "completed", "queries": ["q"],
                                   "results": None},
    "code_interpreter_call": lambda n: {"type": "code_interpreter_call", "id": f"ci_{n}", "status": "completed",
                                        "code": "print(1)", "container_id": "cntr_1", "outputs": [{"type": "logs", "logs": "1"}]},
    "image_generation_call": lambda n: {"type": "image_generation_call", "id": f"ig_{n}", "status": "completed",
                                        "result": "iVBORw0KGgo="},
    "mcp_call": lambda n: {"type": "mcp_call", "id": f"mcp_{n}", "server_label": "docs", "name": "lookup",
                           "arguments": "{}", "output": "ok"},
    "mcp_list_tools": lambda n: {"type": "mcp_list_tools", "id": f"mcpl_{n}", "server_label": "docs", "tools": []},
    "compaction": lambda n: compaction_item(f"cmp_{n}"),
    "future": lambda n: {"type": "teleport_call", "id": f"tp_{n}", "coordinates": [n, 0]},
}


@st.composite
def responses_turn(draw: Any, n: int) -> list[dict[str, Any]]:
    """One model turn as input items: reasoning, hosted calls, text, function calls with outputs, approvals."""
    items: list[dict[str, Any]] = [reasoning_item(f"rs_{n}")] if draw(st.booleans()) else []
    for kind in draw(st.lists(st.sampled_from(sorted(HOSTED)), max_size=3)):
        items.append(HOSTED[kind](f"{n}_{len(items)}"))
    if draw(st.booleans()):
        items.append({"type": "mcp_approval_request", "id": f"mcpr_{n}", "server_label": "docs", "name": "delete",
                      "arguments": "{}"})
        items.append({"type": "mcp_approval_response", "approval_request_id": f"mcpr_{n}", "approve": True})
    if items and all(i["type"] == "reasoning" for i in items):  # reasoning always leads to something
        items.append({"type": "message", "id": f"msg_{n}", "role": "assistant", "status": "completed",
                      "content": [{"type": "output_text", "text": draw(words), "annotations": []}]})
    calls = draw(st.integers(0, 2))
    items.extend({"type": "function_call", "call_id": f"call_{n}_{k}", "name": "lookup", "arguments": "{}"}
                 for k in range(calls))
    items.extend({"type": "function_call_output", "call_id": f"call_{n}_{k}", "output": draw(words)} for k in range(calls))
    if not items:  # a plain turn: an assistant text item in the form ctxcore renders it
        items.append({"role": "assistant", "content": draw(words)})
    return items


@st.composite
def responses_history(draw: Any) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = [{"role": "developer", "content": "Be brief."}]
    for n in range(draw(st.integers(1, 4))):
        items.append({"role": "user", "content": draw(words)})
        items.extend(draw(responses_turn(n)))
    items.append({"role": "user", "content": draw(words)})
    return items


class TestResponsesRoundTrip:
    @SETTINGS
    @given(responses_history())
    def test_every_item_type_comes_back_byte_exact(self, items: list[dict[str, Any]]) -> None:
        """Ingest -> render gives the input items back exactly (reasoning's encrypted_content included)."""
        assert to_openai_responses(messages_from_responses(items))["input"] == items

    @SETTINGS
    @given(responses_history())
    def test_the_rendered_input_is_legal_and_pairs_stay_together(self, items: list[dict[str, Any]]) -> None:
        """The stub's rules hold, and reasoning and an approval request share a message with what follows them."""
        messages = messages_from_responses(items)
        validate_request(messages, "openai-responses")
        assert responses_input_problem(to_openai_responses(messages)["input"], {}) is None
        for m in messages:
            kinds = [b.kind for b in m.content if isinstance(b, ProviderBlock)] if isinstance(m.content, tuple) else []
            if "mcp_approval_request" in kinds:
                assert "mcp_approval_response" in kinds

    def test_reasoning_is_refused_for_anthropic_naming_the_item(self) -> None:
        """A Responses reasoning item cannot be sent to Anthropic: the error names it and the fix."""
        messages = messages_from_responses([{"role": "user", "content": "q"}, reasoning_item("rs_1"),
                                            {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"},
                                            {"type": "function_call_output", "call_id": "c", "output": "r"}])
        with pytest.raises(InvalidHistory, match="'reasoning' block from the OpenAI Responses API cannot be sent to "
                                                 "the Anthropic Messages API"):
            validate_request(messages, "anthropic")
        with pytest.raises(InvalidHistory, match="'reasoning'"):
            to_anthropic(messages)

    def test_a_reply_keeps_reasoning_before_its_function_call(self) -> None:
        """add_response's conversion keeps the reasoning item, then the call, as one message re-sent item for item."""
        output = [reasoning_item("rs_1"), {"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "f",
                                           "arguments": "{}", "status": "completed"}]
        m = assistant_from_output(output)
        assert m.tool_call_ids == ("c1",) and isinstance(m.content, tuple) and m.content[0].kind == "reasoning"
        assert to_openai_responses([Message(role="user", content="q"), m])["input"][1:] == output

    def test_an_unknown_item_on_its_own_is_kept(self) -> None:
        """An item type ctxcore has never seen is kept as a provider block and sent back unchanged."""
        items = [{"role": "user", "content": "q"}, {"type": "item_reference", "id": "msg_0"}]
        assert to_openai_responses(messages_from_responses(items))["input"] == items


# ------------------------------------------------------------ compaction
class TestCompactionBoundary:
    def test_nothing_before_the_newest_compaction_is_kept_but_system(self) -> None:
        """before_compaction keeps system messages and everything from the user turn the newest compaction answers."""
        history = [Message(role="system", content="s"), Message(role="user", content="old")]
        history += messages_from_anthropic({"role": "assistant", "content": [compaction_block("first")]})
        history += [Message(role="user", content="mid")]
        history += messages_from_anthropic({"role": "assistant", "content": [compaction_block("second"),
                                                                              {"type": "text", "text": "hi"}]})
        history += [Message(role="user", content="new")]
        kept, dropped = before_compaction(history)
        assert [m.id for m in kept] == [history[0].id, history[3].id, history[4].id, history[5].id]
        assert [m.id for m in dropped] == [m.id for m in history[1:3]]

    def test_a_responses_compaction_item_opens_what_is_kept(self) -> None:
        """A Responses compaction item is the first item kept: OpenAI reads nothing before it."""
        history = messages_from_responses([{"role": "user", "content": "old"}, {"role": "assistant", "content": "a"},
                                           {"role": "user", "content": "mid"}, compaction_item("cmp_1"),
                                           {"role": "user", "content": "new"}])
        kept, dropped = before_compaction(history)
        assert [m.id for m in kept] == [m.id for m in history[3:]] and len(dropped) == 3

    @SETTINGS
    @given(kinds=st.lists(st.sampled_from(["user", "assistant", "system", "anthropic", "responses"]), max_size=14),
           cuts=st.lists(st.integers(0, 14), max_size=4))
    def test_the_resumable_fold_finds_the_scans_boundary(self, kinds: list[str], cuts: list[int]) -> None:
        """compaction_fold over any split of a history into legs finds the boundary the backward scan finds."""
        made = {
            "user": lambda: [Message(role="user", content="u")],
            "assistant": lambda: [Message(role="assistant", content="a")],
            "system": lambda: [Message(role="system", content="s")],
            "anthropic": lambda: messages_from_anthropic({"role": "assistant", "content": [compaction_block("c")]}),
            "responses": lambda: messages_from_responses([compaction_item("cmp_1")]),
        }
        history = [m for kind in kinds for m in made[kind]()]
        state: Any = None
        for start, stop in itertools.pairwise([0, *sorted(c for c in cuts if c <= len(history)), len(history)]):
            state = compaction_fold(state, history[start:stop])
        assert compaction_boundary_of(state, history) == compaction_boundary(history)

    def test_the_build_neither_counts_nor_sends_what_compaction_replaced(self) -> None:
        """A build drops the messages before the compaction (reported by 'compaction') and counts only the rest."""
        old = [Message(role="user", content="x" * 500), Message(role="assistant", content="y" * 500)]
        compacted = messages_from_anthropic({"role": "assistant", "content": [compaction_block("summary")]})
        history = [*old, Message(role="user", content="continue"), *compacted, Message(role="user", content="next")]
        built = ContextBuilder([_Fixed(history)], counter=CharCounter(), target=TargetSpec(provider="anthropic")).build()
        assert [m.id for m in built.messages] == [m.id for m in history[2:]]
        assert {r.id for r in built.report.dropped if r.by == "compaction"} == {m.id for m in history[:2]}
        assert wire_problem({**built.to_anthropic(), "max_tokens": 5}) is None
        assert built.report.total_tokens < 500


# ------------------------------------------------------------ the command line
PIPELINE = """
version: 1
model: {{context_window: 8000, reserve_output_tokens: 300}}
target: {{provider: {provider}}}
providers:
  - {{type: static_prompt, text: You are a careful research assistant.}}
  - {{type: history}}
filters:
  - {{type: token_budget}}
"""


class TestCtxBuild:
    def test_anthropic_blocks_in_the_state_come_back_from_ctx_build(self, tmp_path: Any) -> None:
        """`ctx build --format anthropic` sends a web-search turn of the state back byte-exact."""
        from tests.test_cli import ctx

        turn = {"role": "assistant", "content": [*web_search_blocks("srvtoolu_1", "q", [("https://e.org", "E")]),
                                                 {"type": "text", "text": "Found it."}]}
        state = tmp_path / "state.json"
        state.write_text(json.dumps({"messages": [{"role": "user", "content": "q"}, turn,
                                                  {"role": "user", "content": "thanks"}]}))
        (tmp_path / "a.yaml").write_text(PIPELINE.format(provider="anthropic"))
        result = ctx("build", str(tmp_path / "a.yaml"), "--state", str(state), "--format", "anthropic")
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout)["messages"][1] == turn
        refused = ctx("build", str(tmp_path / "a.yaml"), "--state", str(state), "--format", "openai")
        assert refused.returncode == 1 and "Traceback" not in refused.stderr
        assert "'server_tool_use' block from the Anthropic Messages API cannot be sent" in refused.stderr

    def test_responses_items_in_the_state_come_back_from_ctx_build(self, tmp_path: Any) -> None:
        """`ctx build --format openai-responses` re-sends reasoning and its function call item for item."""
        from tests.test_cli import ctx

        turn = [reasoning_item("rs_1"), {"type": "function_call", "call_id": "c1", "name": "lookup", "arguments": "{}"}]
        items = [{"role": "user", "content": "q"}, *turn, {"type": "function_call_output", "call_id": "c1", "output": "r"}]
        state = tmp_path / "state.json"
        state.write_text(json.dumps({"messages": items}))
        (tmp_path / "r.yaml").write_text(PIPELINE.format(provider="openai-responses"))
        result = ctx("build", str(tmp_path / "r.yaml"), "--state", str(state), "--format", "openai-responses")
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout)["input"][-3:] == items[1:]


# ------------------------------------------------------------ 30-turn loops with the official clients
@pytest.fixture
def loop_host() -> Any:
    import ctxcore_checkpointers.plugin
    import ctxcore_counters.plugin
    import ctxcore_filters.plugin
    import ctxcore_providers.plugin

    from ctxcore.testing import fresh_host

    return fresh_host(("ctxcore-providers", ctxcore_providers.plugin), ("ctxcore-filters", ctxcore_filters.plugin),
                      ("ctxcore-counters", ctxcore_counters.plugin), ("ctxcore-checkpointers", ctxcore_checkpointers.plugin))


class TestThreadLoops:
    def test_thirty_turns_of_anthropic_web_search_and_compaction(self, loop_host: Any) -> None:
        """30 turns through Thread and the official anthropic client with server-side compaction set in the target.

        The stub compacts as the API does (a compaction block first in the reply
        once what it reads passes the trigger); every request is legal and
        sends only the newest compaction and what follows it.
        """
        from anthropic import Anthropic

        from ctxcore import Pipeline
        from ctxcore.testing.harness.anthropic_server import MessagesServer

        def model(body: dict[str, Any]) -> list[dict[str, Any]]:
            turn = sum(1 for m in body["messages"] if m["role"] == "user")
            return [*web_search_blocks(f"srvtoolu_{len(body['messages'])}_{turn}", "news",
                                       [("https://example.org/a", "A")]), {"type": "text", "text": "Here."}]

        yaml = PIPELINE.format(provider="anthropic").replace(
            "target: {provider: anthropic}",
            "target: {provider: anthropic, context_management: {edits: [{type: compact_20260112, trigger: 1500}]}}")
        thread = Pipeline.from_string(yaml, host=loop_host).thread("a")
        with MessagesServer(reply=model) as server:
            client = Anthropic(base_url=server.base_url, api_key="unused", max_retries=0)
            for turn in range(30):
                thread.add_user(f"Question {turn}?")
                body = thread.build().to_anthropic()
                reply = client.beta.messages.create(model="claude-test", max_tokens=64, **body)
                thread.add_response(reply)
        assert len(server.requests) == 30
        assert server.requests[0]["context_management"] == {"edits": [
            {"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": 1500}}]}
        compactions = [sum(b["type"] == "compaction" for m in r["messages"] if isinstance(m["content"], list)
                           for b in m["content"]) for r in server.requests]
        sizes = [len(r["messages"]) for r in server.requests]
        assert max(compactions) == 1  # only the newest compaction is sent
        assert sum(b < a for a, b in zip(sizes, sizes[1:], strict=False)) >= 2  # the server compacted twice, the thread followed
        last = server.requests[-1]["messages"]
        assert len(last) < 20 and [b["type"] for b in last[1]["content"]][0] == "compaction"
        assert sum(1 for m in thread.messages if m.role == "assistant") == 30

    def test_thirty_turns_of_openai_reasoning_and_compaction(self, loop_host: Any) -> None:
        """30 turns through Thread and the official openai client with server compaction set in the target.

        Reasoning is re-sent with its item (store=False), the stub compacts as
        the API does once the input passes ``compact_threshold``, and the thread
        sends only the newest compaction and what follows it.
        """
        from openai import OpenAI

        from ctxcore import Pipeline
        from ctxcore.testing.harness.openai_server import ChatServer

        calls = itertools.count()

        def model(body: dict[str, Any]) -> dict[str, Any]:
            return {"content": "Here.", "output": [{"type": "web_search_call", "id": f"ws_{next(calls)}",
                                                    "status": "completed", "action": {"type": "search", "query": "news"}}]}

        yaml = PIPELINE.format(provider="openai-responses").replace(
            "target: {provider: openai-responses}",
            "target: {provider: openai-responses, context_management: {compaction: {compact_threshold: 1000}}}")
        thread = Pipeline.from_string(yaml, host=loop_host).thread("o")
        with ChatServer(reply=model, reasoning=True) as server:
            client = OpenAI(base_url=server.base_url, api_key="unused", max_retries=0)
            for turn in range(30):
                thread.add_user(f"Question {turn}?")
                body = thread.build().to_openai_responses()
                thread.add_response(client.responses.create(model="gpt-test", store=False, **body))
        assert len(server.requests) == 30
        assert server.requests[0]["context_management"] == [{"type": "compaction", "compact_threshold": 1000}]
        sizes = [len(r["input"]) for r in server.requests]
        assert sum(b < a for a, b in zip(sizes, sizes[1:], strict=False)) >= 2  # the server compacted twice, the thread followed
        kinds = [i.get("type", "message") for i in server.requests[-1]["input"]]
        assert kinds.count("compaction") == 1 and len(kinds) < 45
        assert kinds.count("reasoning") == kinds.count("web_search_call") > 1  # each re-sent with its item


class TestThreadServerState:
    def test_applied_edits_are_kept_in_step_metadata(self, loop_host: Any) -> None:
        """What Anthropic's server-side context edits cleared is on record in the saved step, and only in that step."""
        from anthropic.types.beta import BetaMessage

        from ctxcore import Pipeline

        edits = [{"type": "clear_tool_uses_20250919", "cleared_tool_uses": 3, "cleared_input_tokens": 1200}]
        reply = BetaMessage.model_validate({
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test", "stop_reason": "end_turn",
            "content": [{"type": "text", "text": "Done."}], "usage": {"input_tokens": 9, "output_tokens": 2},
            "context_management": {"applied_edits": edits}})
        thread = Pipeline.from_string(PIPELINE.format(provider="anthropic"), host=loop_host).thread("edits")
        thread.add_user("Go on.")
        thread.add_response(reply)
        first = thread.save()
        thread.add_user("And then?")
        thread.add_response({"type": "message", "role": "assistant", "stop_reason": "end_turn",
                             "content": [{"type": "text", "text": "Then this."}]})
        second = thread.save()
        meta = {r.step: r.metadata for r in thread.steps()}
        assert meta[first]["applied_edits"] == edits and "applied_edits" not in meta[second]

    def test_compact_endpoint_output_is_refused(self, loop_host: Any) -> None:
        """responses.compact() output replaces a conversation; add_response refuses it, naming server-side compaction."""
        from openai.types.responses import CompactedResponse

        from ctxcore import Pipeline

        output = [{"type": "message", "id": "msg_1", "role": "user", "status": "completed",
                   "content": [{"type": "input_text", "text": "Plan a trip."}]}, compaction_item("cmp_1")]
        # the SDK's own type (built without validation: the stub items are dicts, as the API's JSON is)
        compacted = CompactedResponse.model_construct(id="resp_1", object="response.compaction", created_at=0,
                                                      output=output)
        thread = Pipeline.from_string(PIPELINE.format(provider="openai-responses"), host=loop_host).thread("c")
        thread.add_user("Plan a trip.")
        with pytest.raises(ValueError, match=r"responses\.compact\(\).*context_management="):
            thread.add_response(compacted)
        with pytest.raises(ValueError, match="server-side compaction"):
            thread.add_response({"id": "resp_1", "object": "response.compaction", "output": output})
        assert len(thread.messages) == 1


def _sdk_result_kinds() -> set[str]:
    """Every ``*_tool_result`` block type the installed anthropic SDK declares (``type: Literal[...]``)."""
    import pathlib
    import re

    import anthropic

    root = pathlib.Path(anthropic.__file__).parent / "types"
    found = {kind for path in root.rglob("*.py")
             for kind in re.findall(r'type: (?:Required\[)?Literal\["([a-z_]+_tool_result)"\]', path.read_text())}
    return found - {"tool_result"}


def test_every_server_result_type_of_the_sdk_pairs_with_its_call() -> None:
    """Each result type the SDK defines is a known server result, so its ``server_tool_use`` never reads as unpaired."""
    from ctxcore.model.blocks import ANTHROPIC_RESULT_KINDS, answers_server_call, unpaired_server_calls

    kinds = _sdk_result_kinds()
    assert "advisor_tool_result" in kinds and "web_search_tool_result" in kinds
    assert kinds - {"mcp_tool_result"} <= ANTHROPIC_RESULT_KINDS
    for kind in [*kinds, "hologram_tool_result"]:  # and a result type the API adds later
        assert answers_server_call(kind)
        call = {"type": "server_tool_use", "id": "srvtoolu_1", "name": kind.removesuffix("_tool_result"), "input": {}}
        assert unpaired_server_calls([call, {"type": kind, "tool_use_id": "srvtoolu_1", "content": {}}]) == []
    assert not answers_server_call("tool_result")
