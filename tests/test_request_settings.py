"""The target's request-level settings: server-side context management and OpenAI prompt-cache keys.

Bodies are sent through the official SDK clients to the stub servers, so a key
the SDK does not take would fail here as it would for a user.
"""

from __future__ import annotations

from typing import Any

import pytest
from anthropic import Anthropic
from ctxcore_counters import ApproximateCounter
from openai import OpenAI
from pydantic import ValidationError

from ctxcore import ContextBuilder, Message, TargetSpec, human, system
from ctxcore.pipeline.spec import PipelineSpec
from ctxcore.render.request import accepts_cache_breakpoints
from ctxcore.testing.harness.anthropic_server import MessagesServer
from ctxcore.testing.harness.openai_server import ChatServer

EDITS = {"edits": [
    {"type": "clear_tool_uses_20250919", "trigger": 30000, "keep": 3, "clear_at_least": 5000,
     "exclude_tools": ["web_search"], "clear_tool_inputs": False},
    {"type": "clear_thinking_20251015", "keep": "all"},
    {"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": 150000}, "instructions": "Keep file paths.",
     "pause_after_compaction": False},
]}


class _History:
    def get_messages(self, state: Any, runtime: Any) -> list[Message]:
        return [system("You are terse."), *state.get("messages", [])]


def build(runtime: dict[str, Any] | None = None, **target: Any) -> Any:
    return ContextBuilder([_History()], counter=ApproximateCounter(), target=TargetSpec(**target)).build(
        {"messages": [human("hello")]}, runtime or {})


class TestAnthropicContextManagement:
    def test_edits_render_in_the_api_shape_with_their_betas(self) -> None:
        """Shorthand thresholds become the API's {type, value} objects; the body names the betas it needs."""
        body = build(provider="anthropic", context_management=EDITS).to_anthropic()
        assert body["context_management"]["edits"][0] == {
            "type": "clear_tool_uses_20250919", "trigger": {"type": "input_tokens", "value": 30000},
            "keep": {"type": "tool_uses", "value": 3}, "clear_at_least": {"type": "input_tokens", "value": 5000},
            "exclude_tools": ["web_search"], "clear_tool_inputs": False}
        assert body["context_management"]["edits"][1] == {"type": "clear_thinking_20251015", "keep": "all"}
        assert body["betas"] == ["compact-2026-01-12", "context-management-2025-06-27"]

    def test_the_beta_client_sends_it(self) -> None:
        """client.beta.messages.create(**body) sends context_management and the anthropic-beta header."""
        body = build(provider="anthropic", context_management=EDITS).to_anthropic()
        with MessagesServer(reply=lambda b: "ok") as server:
            client = Anthropic(base_url=server.base_url, api_key="unused", max_retries=0)
            client.beta.messages.create(model="claude-sonnet-4-6", max_tokens=16, **body)
        assert server.requests[0]["context_management"] == body["context_management"]
        assert "context-management-2025-06-27" in server.headers[0].get("anthropic-beta", "")

    def test_report_says_what_the_server_will_do(self) -> None:
        """The build report names each edit: what, from which threshold."""
        notes = build(provider="anthropic", context_management=EDITS).report.notes
        assert "server: Anthropic will clear tool uses past 30,000 input tokens, keeping the last 3 (never web_search);" \
               " cleared results become placeholders" in notes
        assert any("compact the conversation past 150,000 input tokens" in n for n in notes)

    def test_report_says_when_this_request_reaches_a_trigger(self) -> None:
        """A trigger the request's input tokens reach is named as acting on this call; one it does not reach is not."""
        edits = {"edits": [{"type": "clear_tool_uses_20250919", "trigger": 1},
                           {"type": "compact_20260112", "trigger": 150000}]}
        notes = [n for n in build(provider="anthropic", context_management=edits).report.notes if n.startswith("server:")]
        assert "reaches the trigger, so it applies to this call" in notes[0]
        assert "reaches the trigger" not in notes[1]

    @pytest.mark.parametrize("edit, field", [
        ({"type": "clear_tool_uses_20250919", "trigger": -1}, "value"),
        ({"type": "clear_tool_uses_20250919", "keeep": 3}, "keeep"),
        ({"type": "clear_everything"}, "type"),
    ])
    def test_bad_edits_fail_at_load_naming_the_field(self, edit: dict[str, Any], field: str) -> None:
        """A typo or a bad value is a pydantic error naming the field, not a 400 at run time."""
        with pytest.raises(ValidationError, match=field):
            TargetSpec(provider="anthropic", context_management={"edits": [edit]})

    def test_edits_need_the_anthropic_provider(self) -> None:
        """Anthropic edits on an OpenAI target are refused with the fix."""
        with pytest.raises(ValidationError, match="set provider: anthropic"):
            TargetSpec(provider="openai", context_management=EDITS)


class TestOpenAIRequest:
    def test_cache_key_defaults_to_the_thread(self) -> None:
        """prompt_cache_key is the thread id unless the target sets one."""
        assert build({"thread_id": "t-42"}).to_openai_responses()["prompt_cache_key"] == "t-42"
        assert build({"thread_id": "t-42"}, prompt_cache_key="app").to_openai_responses()["prompt_cache_key"] == "app"
        assert "prompt_cache_key" not in build().to_openai_responses()

    def test_options_compaction_and_breakpoints_reach_the_server(self) -> None:
        """client.responses.create(**body) sends prompt_cache_options, context_management and the breakpoints."""
        built = build({"thread_id": "t"}, model="gpt-5.6", prompt_cache_options={"mode": "explicit", "ttl": "12h"},
                      context_management={"compaction": {"compact_threshold": 200000}})
        body = built.to_openai_responses()
        with ChatServer(reply=lambda b: "ok") as server:
            OpenAI(base_url=server.base_url, api_key="unused", max_retries=0).responses.create(model="gpt-5.6", **body)
        sent = server.requests[0]
        assert sent["prompt_cache_options"] == {"mode": "explicit", "ttl": "12h"}
        assert sent["context_management"] == [{"type": "compaction", "compact_threshold": 200000}]
        marks = [b for item in sent["input"] for b in (item["content"] if isinstance(item["content"], list) else [])
                 if "prompt_cache_breakpoint" in b]
        assert len(marks) == 2 and marks[0]["prompt_cache_breakpoint"] == {"mode": "explicit"}
        assert "server: OpenAI will compact the conversation past 200,000 tokens" in built.report.notes

    def test_breakpoints_only_for_models_that_take_them(self) -> None:
        """gpt-5.6 and later take prompt_cache_breakpoint; older and unknown models get none."""
        assert accepts_cache_breakpoints("gpt-5.6") and accepts_cache_breakpoints("gpt-6")
        assert not accepts_cache_breakpoints("gpt-5.5") and not accepts_cache_breakpoints("gpt-4o")
        assert not accepts_cache_breakpoints(None)
        body = build(model="gpt-4o").to_openai_responses()
        assert all(isinstance(item["content"], str) for item in body["input"])

    def test_compaction_is_openai_only(self) -> None:
        """OpenAI compaction on an Anthropic target is refused, pointing at compact_20260112."""
        with pytest.raises(ValidationError, match="compact_20260112"):
            TargetSpec(provider="anthropic", context_management={"compaction": {"compact_threshold": 1000}})


def test_pipeline_yaml_takes_the_settings() -> None:
    """The YAML target section accepts every new key and a build carries them."""
    spec = PipelineSpec.model_validate({
        "version": 1, "providers": [{"type": "history"}],
        "target": {"provider": "anthropic", "cache": "top_level", "cache_ttl": "1h", "cache_prefix_ttl": "1h",
                   "context_management": EDITS},
    })
    assert spec.target.cache == "top_level" and spec.target.context_management is not None
