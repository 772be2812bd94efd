"""Property tests of the budgeting engine through full builds.

Generated histories hold users (some with images, some protected), assistants,
parallel tool calls answered in any order, orphan results, calls never (or
partly) answered, and system messages anywhere; budgets run from nothing to
120% of the whole request. Every build goes sanitize -> max_messages ->
token_budget -> legal start -> validation, and must give a request both
providers accept, with every protected message, within budget (or raise
BudgetExceeded), as a subsequence of its input, idempotently and monotonically
in the budget.

Every property runs against both implementations of ``token_budget``: the
fast one (tail-first walk, memos across builds) and its ``reference()`` twin
(``fast=False``: every message counted, every unit visited), as CPython's json
tests run against the C and the Python module.

Examples per property: 500 (the ``ci`` profile). Run more locally with
``CTXCORE_PROPERTY_PROFILE=thorough`` (5,000).
"""

from __future__ import annotations

import os

import pytest
from ctxcore_counters import ApproximateCounter
from ctxcore_filters import MaxMessages, TokenBudget
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxcore.engine.budget import CachedCounter, ModelBudget
from ctxcore.engine.builder import BuiltContext, ContextBuilder
from ctxcore.errors import BudgetExceeded, InvalidHistory
from ctxcore.model.messages import (
    ImageBlock,
    Message,
    TextBlock,
    ai,
    human,
    system,
    tool,
)
from ctxcore.model.transactions import sanitize_tool_call_history
from ctxcore.render import validate_request
from ctxcore.render.target import TargetSpec

settings.register_profile(
    "ci", max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
settings.register_profile(
    "thorough", max_examples=5000, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
PROFILE = settings.get_profile(os.environ.get("CTXCORE_PROPERTY_PROFILE", "ci"))
#: Each property below runs on both token_budget implementations (the fast path and the reference).
PATHS = pytest.mark.parametrize("fast", [True, False], ids=["fast", "reference"])

WORDS = st.text(alphabet="abcdefghij klmnop", min_size=0, max_size=160)
SHORT = st.text(alphabet="abcdefghij klmnop", min_size=0, max_size=30)
TOOLS = [{"type": "function", "function": {"name": "read_file", "description": "Read a file from the workspace.",
                                           "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}]


def _call(ids: list[str]) -> Message:
    return ai(tool_calls=[{"id": i, "name": "read_file", "arguments": {"path": i}} for i in ids])


@st.composite
def histories(draw: st.DrawFn) -> list[Message]:
    """Histories with every kind of message a real agent produces, legal or not."""
    msgs = [system("system " + draw(SHORT)) for _ in range(draw(st.integers(0, 2)))]
    for turn in range(draw(st.integers(0, 14))):
        kind = draw(st.sampled_from(
            ["user", "user", "assistant", "tools", "tools", "image", "protected", "system", "orphan", "unanswered"]
        ))
        text = draw(WORDS)
        if kind == "user":
            msgs.append(human("u " + text, priority=draw(st.integers(-1, 1))))
        elif kind == "image":
            msgs.append(human([TextBlock(text="see " + text), ImageBlock(url="https://example.com/i.png")]))
        elif kind == "protected":
            msgs.append(human("rule " + draw(SHORT), zone="protected"))
        elif kind == "system":
            msgs.append(system("note " + draw(SHORT)))
        elif kind == "assistant":
            msgs.append(ai(text, priority=draw(st.integers(-1, 1))))
        elif kind == "orphan":
            msgs.append(tool(text, tool_call_id=f"orphan{turn}"))
        else:
            ids = [f"c{turn}_{k}" for k in range(draw(st.integers(1, 3)))]
            answered = draw(st.permutations(ids))
            if kind == "unanswered":
                answered = answered[: draw(st.integers(0, len(ids) - 1))]
            msgs.append(_call(ids))
            msgs.extend(tool(text, tool_call_id=i) for i in answered)
    if draw(st.booleans()):
        msgs.append(human("current question " + draw(WORDS)))
    return msgs


class Fixed:
    """A provider returning the given messages."""

    def __init__(self, messages: list[Message]) -> None:
        self.messages = messages

    def get_messages(self, state, runtime):
        return self.messages


def make_builder(msgs: list[Message], counter: CachedCounter, window: int, reserve: int, margin: int,
                 limit: int | None, target: TargetSpec, fast: bool = True) -> ContextBuilder:
    filters: list = [MaxMessages(limit)] if limit is not None else []
    filters.append(TokenBudget(fast=fast))
    budget = ModelBudget(context_window=window, reserve_output_tokens=reserve, safety_margin=margin)
    return ContextBuilder([Fixed(msgs)], filters, counter, budget=budget, target=target)


@st.composite
def scenarios(draw: st.DrawFn):
    """A history, a budget between 0 and 120% of everything it would send, and a build configuration."""
    msgs = draw(histories())
    counter = CachedCounter(ApproximateCounter())
    tools = draw(st.sampled_from([[], [], TOOLS]))
    whole = counter.count_messages(msgs) + counter.count_tools(tools)
    # Uniform over 0..120%, with extra weight on the upper half where trimming
    # (rather than BudgetExceeded) happens.
    share = draw(st.one_of(st.floats(0.0, 1.2), st.floats(0.5, 1.2), st.floats(0.8, 1.2)))
    reserve, margin = draw(st.integers(0, 50)), draw(st.integers(0, 20))
    window = reserve + margin + max(1, int(share * whole))
    limit = draw(st.one_of(st.none(), st.integers(0, 12)))
    target = TargetSpec(provider=draw(st.sampled_from(["openai", "anthropic"])),
                        sanitize=draw(st.sampled_from(["drop", "backfill"])),
                        recover_user=draw(st.booleans()))
    return msgs, counter, tools, window, reserve, margin, limit, target


def _build(msgs, counter, tools, window, reserve, margin, limit, target, fast: bool = True) -> BuiltContext | Exception:
    try:
        return make_builder(msgs, counter, window, reserve, margin, limit, target, fast).build({"tools": tools})
    except (BudgetExceeded, InvalidHistory) as exc:
        return exc


def _is_subsequence(out: list[str], source: list[str]) -> bool:
    it = iter(source)
    return all(x in it for x in out)


def _tail_is_broken(msgs: list[Message]) -> bool:
    try:
        sanitize_tool_call_history(msgs)
    except InvalidHistory:
        return True
    return False


@PATHS
@PROFILE
@given(scenarios())
def test_full_build_invariants(fast: bool, scenario) -> None:
    """Any history at any budget: a legal request for both providers, protected kept, within budget, a subsequence."""
    msgs, counter, tools, window, reserve, margin, limit, target = scenario
    result = _build(*scenario, fast=fast)
    if isinstance(result, InvalidHistory):
        # Only two reasons: the current turn is a broken transaction, or an
        # Anthropic request would have no user message at all.
        assert _tail_is_broken(msgs) or (target.provider == "anthropic" and "at least one user message" in str(result)), result
        return
    if isinstance(result, BudgetExceeded):
        # Raised only when needed: with exactly the required budget the build
        # fits, or finds a shortfall further on (tool schemas are checked first).
        assert result.required > result.budget and result.report is not None
        enough = _build(msgs, counter, tools, window + result.required - result.budget, reserve, margin, limit, target,
                        fast=fast)
        if isinstance(enough, BudgetExceeded):
            assert "tool schemas" in str(result) and "tool schemas" not in str(enough), enough
        return
    out = list(result.messages)
    report = result.report
    # Provider-legal: for both providers (Anthropic additionally needs a user message).
    validate_request(out, "openai")
    if any(m.role != "system" for m in out):
        validate_request(out, "anthropic")
        first = next(m for m in out if m.role != "system")
        assert first.role == "user", "legal start"
    # Every protected message of the (sanitized) input is present.
    sanitized = sanitize_tool_call_history(msgs, backfill=target.sanitize == "backfill").messages
    out_ids = {m.id for m in out}
    assert all(m.id in out_ids for m in sanitized if m.zone == "protected")
    # Within budget, counting messages, tool schemas and priming.
    budget = window - reserve - margin
    assert report.budget == budget
    assert report.total_tokens == counter.count_messages(out) + counter.count_tools(tools) <= budget
    # A subsequence of the input; anything new is a recorded backfill.
    assert _is_subsequence([m.id for m in out], [m.id for m in sanitized])
    source_ids = {m.id for m in msgs}
    added = {r.id for r in report.kept if r.fate == "added"}
    assert {m.id for m in out if m.id not in source_ids} == added
    assert all(m.metadata.get("ctxcore") == "backfill" for m in out if m.id in added)
    # Idempotent: building the output again changes nothing.
    again = _build(out, counter, tools, window, reserve, margin, limit, target, fast=fast)
    assert isinstance(again, BuiltContext) and [m.id for m in again.messages] == [m.id for m in out]


@PATHS
@PROFILE
@given(scenarios(), st.integers(0, 400))
def test_monotone_in_the_budget(fast: bool, scenario, extra) -> None:
    """A bigger budget keeps everything a smaller one keeps (and never fails where the smaller one succeeded).

    Without ``recover_user``: a recovered message depends on the room left, so
    recovery is deliberately not monotone.
    """
    msgs, counter, tools, window, reserve, margin, limit, target = scenario
    target = target.model_copy(update={"recover_user": False})
    scenario = (msgs, counter, tools, window, reserve, margin, limit, target)
    small = _build(*scenario, fast=fast)
    big = _build(msgs, counter, tools, window + extra, reserve, margin, limit, target, fast=fast)
    if not isinstance(small, BuiltContext):
        return
    assert isinstance(big, BuiltContext), big
    assert {m.id for m in small.messages} <= {m.id for m in big.messages}


@PATHS
@PROFILE
@given(scenarios())
def test_enough_budget_keeps_everything_legal(fast: bool, scenario) -> None:
    """With the budget at 100% or more and no message limit, nothing is trimmed but illegal parts."""
    msgs, counter, tools, _, reserve, margin, _, target = scenario
    if _tail_is_broken(msgs):
        return
    backfilled = sanitize_tool_call_history(msgs, backfill=True).backfilled
    whole = counter.count_messages(msgs) + counter.count_messages(backfilled) + counter.count_tools(tools)
    result = _build(msgs, counter, tools, reserve + margin + max(1, whole), reserve, margin, None, target, fast=fast)
    if isinstance(result, InvalidHistory):
        assert target.provider == "anthropic" and "at least one user message" in str(result)
        return
    assert isinstance(result, BuiltContext), result
    dropped_by = {r.by for r in result.report.dropped}
    assert dropped_by <= {"sanitize", "legal_start"}


def test_profile_runs_at_least_500_examples() -> None:
    """CI runs every property above with at least 500 examples."""
    assert PROFILE.max_examples >= 500


@PATHS
@pytest.mark.parametrize("share", [0.0, 0.3, 0.7, 1.2])
def test_seeded_shares_with_tool_rounds(fast: bool, share: float) -> None:
    """A fixed coding-agent history at several budget shares obeys the same invariants (readable failures)."""
    msgs = [system("persona"), human("fix the test"), _call(["a", "b"]), tool("B" * 200, tool_call_id="b"),
            tool("A" * 200, tool_call_id="a"), ai("found it"), human("now add a test"), _call(["c"]), tool("ok", tool_call_id="c")]
    counter = CachedCounter(ApproximateCounter())
    window = 1 + int(share * counter.count_messages(msgs))
    result = _build(msgs, counter, [], window, 0, 0, None, TargetSpec(provider="anthropic"), fast=fast)
    if isinstance(result, BudgetExceeded):
        assert share < 0.5
        return
    if isinstance(result, InvalidHistory):
        # A window too small for any user message leaves only the system prompt: Anthropic refuses that.
        assert share < 0.5 and "at least one user message" in str(result)
        return
    assert isinstance(result, BuiltContext)
    validate_request(result.messages, "anthropic")
    assert result.report.total_tokens <= window


@PATHS
@PROFILE
@given(scenarios(), st.sampled_from(["ladder", "recent", "continuity"]))
def test_full_build_with_compaction_is_provider_legal(fast: bool, scenario, strategy: str) -> None:
    """Compaction (then token_budget) in a full build: every reduction still gives a request both providers accept.

    The ladder's placeholders, trim markers and summaries are new messages, so the
    subsequence property does not apply; legality, protected content and the budget do.
    """
    from ctxcore_filters import Compaction, CompactionConfig

    msgs, counter, tools, window, reserve, margin, limit, target = scenario
    budget = ModelBudget(context_window=window, reserve_output_tokens=reserve, safety_margin=margin)
    compaction = Compaction(CompactionConfig.model_validate({"strategy": strategy, "on_overflow": "warn"}))
    builder = ContextBuilder([Fixed(msgs)], [compaction, TokenBudget(fast=fast)], counter, budget=budget,
                             target=target)
    try:
        result = builder.build({"tools": tools})
    except InvalidHistory as exc:
        assert _tail_is_broken(msgs) or (target.provider == "anthropic" and "at least one user message" in str(exc)), exc
        return
    except BudgetExceeded:
        return
    for provider in ("openai", "anthropic"):
        if provider == "anthropic" and not any(m.role == "user" for m in result.messages):
            continue  # an OpenAI request may be system-only; Anthropic's renderer refuses it (tested above)
        validate_request(list(result.messages), provider)
    kept = {m.id for m in result.messages}
    for m in msgs:
        if m.zone == "protected" and m.role != "tool" and not _tail_is_broken(msgs):
            assert m.id in kept or any(r.id == m.id and r.by == "sanitize" for r in result.report.dropped), m
    assert result.report.total_tokens <= budget.max_input_tokens
