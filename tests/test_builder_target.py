"""The builder's request rules: sanitize before the filters, legal start and validation after, the full budget."""

from __future__ import annotations

import pytest
from ctxcore_counters import ApproximateCounter
from ctxcore_filters import MaxMessages, TokenBudget

from ctxcore.engine.budget import CachedCounter, ModelBudget
from ctxcore.engine.builder import BuiltContext, ContextBuilder
from ctxcore.engine.reference import reference_build
from ctxcore.errors import ConfigError, InvalidHistory
from ctxcore.model.messages import Message, ai, human, system, tool
from ctxcore.pipeline.spec import Pipeline
from ctxcore.render import validate_request
from ctxcore.render.target import TargetSpec


class Fixed:
    """A provider returning the same messages every build."""

    def __init__(self, messages: list[Message]) -> None:
        self.messages = messages

    def get_messages(self, state, runtime):
        return self.messages


def call(*ids: str) -> Message:
    return ai(tool_calls=[{"id": i, "name": "read_file", "arguments": {}} for i in ids])


def build(messages, filters=(), **kw):
    return ContextBuilder([Fixed(messages)], list(filters), ApproximateCounter(), **kw).build()


class TestSeedThroughBuild:
    def test_max_messages_then_legal_start(self) -> None:
        """The seed's [sys1, sys2, u1, a1, u2, a2, u3, a3] with max 5: transform keeps a1, a full build advances past it."""
        msgs = [system("s1"), system("s2"), human("u1"), ai("a1"), human("u2"), ai("a2"), human("u3"), ai("a3")]
        b = ContextBuilder([Fixed(msgs)], [MaxMessages(5)], ApproximateCounter())
        assert [m.text for m in b.transform(msgs)] == ["s1", "s2", "a1", "u2", "a2", "u3", "a3"]
        built = b.build()
        assert [m.text for m in built.messages] == ["s1", "s2", "u2", "a2", "u3", "a3"]
        [dropped] = [r for r in built.report.dropped if r.by == "legal_start"]
        assert dropped.preview == "a1"

    def test_legal_start_can_be_turned_off(self) -> None:
        """target.legal_start=False leaves the window as the filters cut it."""
        msgs = [human("u1"), ai("a1"), human("u2")]
        built = build(msgs, [MaxMessages(2)], target=TargetSpec(legal_start=False))
        assert [m.text for m in built.messages] == ["a1", "u2"]

    def test_recover_user_when_it_fits(self) -> None:
        """recover_user puts the nearest earlier user message back instead of dropping the assistant turn."""
        msgs = [system("s"), human("u1"), ai("a1"), ai("a2"), human("u2")]
        built = build(msgs, [MaxMessages(3)], target=TargetSpec(recover_user=True))
        assert [m.text for m in built.messages] == ["s", "u1", "a1", "a2", "u2"]
        assert any("recovered" in n for n in built.report.notes)
        assert [r.preview for r in built.report.dropped] == []

    def test_recovery_needs_room(self) -> None:
        """When the earlier user message does not fit the budget, the window advances."""
        msgs = [system("s"), human("u1 " * 200), ai("a1"), human("u2")]
        built = build(msgs, [TokenBudget()], budget=ModelBudget(60), target=TargetSpec(recover_user=True))
        assert [m.text for m in built.messages] == ["s", "u2"]


class TestAgentToolRound:
    """An agent's newest tool round fills the budget: the question that asked for it is older and does not fit."""

    MESSAGES = [system("You are an agent."), human("Which of these files define the parser? " * 8),
                call("c1"), tool("def parse(): ... " * 50, tool_call_id="c1"),
                call("c2"), tool("def lex(): ... " * 20, tool_call_id="c2")]

    def _build(self, *, reference: bool = False, **target: bool) -> BuiltContext:
        builder = ContextBuilder([Fixed(self.MESSAGES)], [TokenBudget()], ApproximateCounter(), budget=ModelBudget(250),
                                 target=TargetSpec(**target))
        return reference_build(builder, {}) if reference else builder.build()

    @pytest.mark.parametrize("reference", [False, True], ids=["fast", "reference"])
    def test_a_request_left_with_system_messages_only_says_so_and_names_the_fix(self, reference: bool) -> None:
        """legal_start drops the round; the report warns that the question is lost and names recover_user and the budget."""
        built = self._build(reference=reference)
        assert [m.role for m in built.messages] == ["system"]
        [warning] = built.report.warnings
        assert "holds only system messages" in warning
        assert "target.recover_user: true" in warning and "larger budget" in warning
        assert [r.by for r in built.report.dropped].count("legal_start") == 2

    @pytest.mark.parametrize("reference", [False, True], ids=["fast", "reference"])
    def test_recover_user_keeps_the_question_in_front_of_the_round(self, reference: bool) -> None:
        """With target.recover_user the question comes back before the newest round, and nothing is warned."""
        built = self._build(reference=reference, recover_user=True)
        assert [m.role for m in built.messages] == ["system", "user", "assistant", "tool"]
        assert built.messages[1].id == self.MESSAGES[1].id
        assert built.report.warnings == []

    def test_a_legal_start_that_leaves_a_user_message_warns_nothing(self) -> None:
        """Dropping a leading assistant turn before a user message is routine: no warning."""
        built = build([system("s"), human("u1"), ai("a1"), human("u2")], [MaxMessages(2)])
        assert [m.text for m in built.messages] == ["s", "u2"] and built.report.warnings == []


class TestSanitizeInBuild:
    def test_broken_past_removed_and_reported(self) -> None:
        """A broken past transaction is dropped by 'sanitize' with a warning."""
        msgs = [human("q"), call("a"), human("next"), ai("ok")]
        built = build(msgs)
        assert [m.text for m in built.messages] == ["q", "next", "ok"]
        assert [r.by for r in built.report.dropped] == ["sanitize"]
        assert any("never answered" in w for w in built.report.warnings)

    def test_backfill_mode(self) -> None:
        """sanitize: backfill adds a placeholder result recorded as 'added'."""
        msgs = [human("q"), call("a"), human("next")]
        built = build(msgs, target=TargetSpec(sanitize="backfill"))
        assert [m.role for m in built.messages] == ["user", "assistant", "tool", "user"]
        assert [r.fate for r in built.report.kept] == ["kept", "kept", "added", "kept"]

    def test_broken_tail_raises(self) -> None:
        """An unanswered call at the end fails the build with InvalidHistory."""
        with pytest.raises(InvalidHistory, match="current turn"):
            build([human("q"), call("a")])

    def test_sanitize_off_then_validation_refuses(self) -> None:
        """With sanitize off a broken history is refused by validation, never sent."""
        with pytest.raises(InvalidHistory):
            build([human("q"), call("a"), human("next")], target=TargetSpec(sanitize="off"))


class TestValidationPerProvider:
    def test_anthropic_target_refuses_system_only(self) -> None:
        """An Anthropic request needs a user message; an OpenAI one may be system-only."""
        msgs = [system("s"), ai("hello")]
        assert [m.role for m in build(msgs).messages] == ["system"]
        with pytest.raises(InvalidHistory, match="at least one user message"):
            build(msgs, target=TargetSpec(provider="anthropic"))

    def test_anthropic_output_renders(self) -> None:
        """A build for Anthropic passes validate_request and renders with the user first."""
        msgs = [system("s"), ai("stale"), human("q"), call("a"), tool("r", tool_call_id="a"), ai("done")]
        built = build(msgs, target=TargetSpec(provider="anthropic"))
        validate_request(built.messages, "anthropic")
        assert built.to_anthropic()["messages"][0]["role"] == "user"


class TestWholeRequestBudget:
    def test_tools_and_margin_come_out_of_the_budget(self) -> None:
        """Tool schemas from the state and the safety margin shrink what filters may keep."""
        counter = CachedCounter(ApproximateCounter())
        msgs = [human(f"message {i} " + "x" * 36) for i in range(20)]
        tools = [{"type": "function", "function": {"name": "read_file", "description": "Read a file. " * 20,
                                                    "parameters": {"type": "object"}}}]
        budget = ModelBudget(context_window=400, reserve_output_tokens=50, safety_margin=30)
        b = ContextBuilder([Fixed(msgs)], [TokenBudget()], counter, budget=budget)
        plain = b.build({})
        with_tools = b.build({"tools": tools})
        tool_tokens = counter.count_tools(tools)
        assert with_tools.report.tool_tokens == tool_tokens > 0
        assert plain.report.budget == 320
        assert len(with_tools.messages) < len(plain.messages)
        assert with_tools.report.total_tokens == counter.count_messages(list(with_tools.messages)) + tool_tokens
        assert with_tools.report.total_tokens <= 320

    def test_over_budget_is_never_silent(self) -> None:
        """Without a budget filter an oversized request is returned with a warning."""
        built = build([human("hello world " * 100)], budget=ModelBudget(50))
        assert any("over the 50-token input budget" in w for w in built.report.warnings)

    def test_bad_state_tools(self) -> None:
        """state['tools'] must be a list of objects."""
        with pytest.raises(ValueError, match="tools"):
            ContextBuilder([Fixed([human("q")])], [], ApproximateCounter()).build({"tools": "read_file"})


class TestPipelineTarget:
    def test_target_section_configures_the_builder(self, host) -> None:
        """The YAML target: section reaches the builder; model.safety_margin reaches the budget."""
        p = Pipeline.from_string(
            "version: 1\nmodel: {context_window: 1000, reserve_output_tokens: 100, safety_margin: 50}\n"
            "target: {provider: anthropic, recover_user: true, sanitize: backfill, validate: false}\n",
            host=host,
        )
        target = p.builder().target
        assert (target.provider, target.recover_user, target.sanitize, target.validate_request) == ("anthropic", True, "backfill", False)
        assert p.builder().budget.max_input_tokens == 850

    def test_target_typo_is_located(self, host) -> None:
        """An unknown key under target: names the line and the closest key."""
        with pytest.raises(ConfigError) as info:
            Pipeline.from_string("version: 1\ntarget:\n  provdier: openai\n", host=host, file="p.yaml")
        assert "p.yaml:3:3" in str(info.value) and "did you mean 'provider'" in str(info.value)

    def test_margin_must_leave_room(self, host) -> None:
        """reserve plus margin must be smaller than the window."""
        with pytest.raises(ConfigError, match="safety_margin"):
            Pipeline.from_string("version: 1\nmodel: {context_window: 100, reserve_output_tokens: 50, safety_margin: 50}\n", host=host)

    def test_new_filters_from_yaml(self, host) -> None:
        """merge_same_role and budget_hint are registered by name and configurable from YAML."""
        p = Pipeline.from_string(
            "version: 1\nmodel: {context_window: 2000}\nproviders:\n  - {type: static_prompt, text: Be brief.}\n  - history\n"
            "filters:\n  - merge_same_role\n  - token_budget\n  - {type: budget_hint, template: 'used {used}/{total}'}\n",
            host=host,
        )
        built = p.build({"messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]})
        assert [m.role for m in built.messages] == ["system", "user", "user"]
        assert built.messages[1].text == "a\n\nb"
        assert built.messages[2].text == f"used {built.report.total_tokens}/2000"



class TestValidationAcrossBuilds:
    def test_a_message_validated_before_is_not_a_pass_for_a_new_one(self) -> None:
        """The builder remembers which output messages passed OpenAI's rules; a new bad message still fails,
        with the index validate_request gives."""
        msgs = [system("s"), human("u1"), ai("a1")]
        b = ContextBuilder([Fixed(msgs)], [], ApproximateCounter())
        assert len(b.build().messages) == 3
        bad = Message(role="user", content="hi", name="two words")
        msgs.append(bad)
        with pytest.raises(InvalidHistory) as raised:
            b.build()
        with pytest.raises(InvalidHistory) as direct:
            validate_request(msgs, "openai")
        assert raised.value.index == direct.value.index == 3 and str(raised.value) == str(direct.value)

    def test_a_new_provider_checks_every_message_again(self) -> None:
        """Messages that passed OpenAI's rules are checked by Anthropic's when the target changes."""
        msgs = [system("s"), ai("a1"), human("u1")]
        b = ContextBuilder([Fixed(msgs)], [], ApproximateCounter(), target=TargetSpec(legal_start=False))
        b.build()
        b.target = TargetSpec(provider="anthropic", legal_start=False)
        with pytest.raises(InvalidHistory, match="first message after the system prompt"):
            b.build()
