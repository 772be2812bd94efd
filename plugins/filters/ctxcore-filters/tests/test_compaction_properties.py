"""Property-based tests of the compaction filter over generated histories and budgets."""

from __future__ import annotations

from ctxcore_counters import ApproximateCounter
from ctxcore_filters import Compaction
from ctxcore_filters.compaction_config import DEFAULT_TRIGGER_RATIO
from ctxcore_filters.compaction_stages import stage_of
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxcore import (
    BudgetExceeded,
    CachedCounter,
    ContextBuilder,
    ImageBlock,
    Message,
    TextBlock,
    ai,
    check_tool_pairing,
    human,
    system,
    tool,
)


class _Given:
    """A provider returning the messages in the state."""

    def get_messages(self, state, runtime):
        return state["messages"]


@st.composite
def histories(draw) -> list[Message]:
    """Legal histories: system prefix, users (some protected, some with images), assistants, parallel tool rounds."""
    alphabet = "abcdefghij {}[]:,\"0123456789\n"
    words = st.text(alphabet=alphabet, max_size=60)
    results = st.text(alphabet=alphabet, min_size=8, max_size=60)
    msgs: list[Message] = [system(draw(st.text(min_size=1, max_size=80))) for _ in range(draw(st.integers(0, 2)))]
    for turn in range(draw(st.integers(0, 24))):
        kind = draw(st.sampled_from(["user", "user", "assistant", "tools", "protected", "image"]))
        text = draw(words) * draw(st.integers(1, 8))
        if kind == "user":
            msgs.append(human(text))
        elif kind == "protected":
            msgs.append(human("rule: " + text, zone="protected"))
        elif kind == "image":
            msgs.append(human([TextBlock(text="look"), ImageBlock(url="https://example.com/a.png")]))
        elif kind == "assistant":
            msgs.append(ai(text))
        else:
            ids = [f"t{turn}_{k}" for k in range(draw(st.integers(1, 3)))]
            msgs.append(ai(tool_calls=[{"id": i, "name": draw(st.sampled_from(["read_file", "grep"])), "arguments": {}} for i in ids]))
            for i in draw(st.permutations(ids)):
                msgs.append(tool(draw(results) * draw(st.integers(1, 120)), tool_call_id=i))
    return msgs


configs = st.sampled_from([
    {},
    {"selection": "auto"},
    {"selection": "fixed", "fixed": "compress"},
    {"selection": "fixed", "fixed": "trim"},
    {"strategy": "recent", "keep_groups": 2},
    {"strategy": "continuity", "keep_groups": 1},
    {"trigger_ratio": 0.7, "target_ratio": 0.3},
])


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories(), st.one_of(st.floats(0.4, 1.2), st.floats(0, 1.2)), configs)
def test_compaction_invariants(msgs: list[Message], fraction: float, options: dict) -> None:
    """Within budget or BudgetExceeded; protected intact; pairing legal; every removal reported; nothing grows."""
    counter = ApproximateCounter()
    budget = max(int(CachedCounter(counter).count_messages(msgs) * fraction), 1)
    builder = ContextBuilder([_Given()], [Compaction(max_tokens=budget, **options)], counter)
    try:
        built = builder.build({"messages": msgs})
    except BudgetExceeded as exc:
        assert exc.required > budget
        return
    out = list(built.messages)
    assert built.report.total_tokens <= budget
    check_tool_pairing(out)
    protected = [m for m in msgs if m.zone == "protected"]
    assert [(m.id, m.fingerprint) for m in out if m.zone == "protected"] == [(m.id, m.fingerprint) for m in protected]
    # the output is a subsequence of the input except for recorded reductions
    originals = iter(m.id for m in msgs)
    assert all(m.id in originals for m in out if stage_of(m) is None)
    recorded = {c.new_id for c in built.report.compressions}
    assert all(m.id in recorded for m in out if stage_of(m) is not None)
    out_ids = {m.id for m in out}
    fates = {r.id: r.fate for r in built.report.records}
    for m in msgs:
        assert m.id in out_ids or fates[m.id] in ("dropped", "compressed")
    for c in built.report.compressions:
        assert c.tokens_after < c.tokens_before, c
    for m in out:
        if stage_of(m) in ("summarize", "consolidate"):
            assert m.role == "user" and m.trust == "untrusted"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories(), st.floats(0.3, 1.2))
def test_second_application_changes_nothing_when_settled(msgs: list[Message], fraction: float) -> None:
    """Once the output is below the trigger, compacting it again returns it unchanged."""
    counter = CachedCounter(ApproximateCounter())
    budget = max(int(counter.count_messages(msgs) * fraction), 1)
    f = Compaction(max_tokens=budget)
    from ctxcore import FilterContext

    try:
        once = f.apply(msgs, FilterContext(counter=counter, budget=None))
    except BudgetExceeded:
        return
    if counter.count_messages(once) <= DEFAULT_TRIGGER_RATIO * budget:
        assert Compaction(max_tokens=budget).apply(once, FilterContext(counter=counter, budget=None)) == once


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories(), st.floats(0.5, 1.2), st.lists(st.sampled_from(["user", "assistant"]), min_size=1, max_size=6))
def test_prefix_stable_between_batches(msgs: list[Message], fraction: float, appended: list[str]) -> None:
    """Appending turns changes nothing before them unless a new batch of reductions ran."""
    counter = ApproximateCounter()
    budget = max(int(CachedCounter(counter).count_messages(msgs) * fraction), 1)
    builder = ContextBuilder([_Given()], [Compaction(max_tokens=budget, on_overflow="warn")], counter)
    previous = builder.build({"messages": msgs})
    for k, role in enumerate(appended):
        msgs = msgs + [human(f"turn {k}") if role == "user" else ai(f"reply {k}")]
        built = builder.build({"messages": msgs})
        new = {c.new_id for c in built.report.compressions} - {c.new_id for c in previous.report.compressions}
        if not new:
            assert built.to_openai()[: len(previous.messages)] == previous.to_openai()
        previous = built
