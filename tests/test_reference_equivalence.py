"""The fast builder equals the reference build after every step of a conversation: messages and report.

A hypothesis state machine keeps ONE builder for a whole run (so its caches,
the history provider's conversions and the budget's window carry over, as in
an agent) and changes the conversation between builds the ways callers do:
appends (tool calls and results included, in every input form, now and then a
bulk of more than a thousand dicts, now and then an Anthropic compaction turn),
edits in place, truncation, a new list, a change of input form, providers
before and after the history. After every
build, :func:`ctxcore.engine.reference.reference_build` builds the same state
with fresh memo-free twins of the components, and both answers must be equal:
the messages, every record of the report (ids, fates, tokens, sources), the
warnings, notes and totals — or the same error. A bug shared by the cold and
the warm path of the fast code cannot hide here, unlike in a fast-vs-fresh
comparison.

Until the history provider and ``token_budget`` ship their own ``reference()``,
the twins here are fresh instances with the same settings (the cold path of
the same code); once they do, their ``reference()`` is what is compared.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pytest
from ctxcore_counters import TiktokenCounter
from ctxcore_filters import TokenBudget
from ctxcore_providers import History, StaticPrompt
from ctxcore_providers.history import GUARD
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from ctxcore.engine.builder import BuiltContext, ContextBuilder, Step
from ctxcore.engine.reference import reference_build, reference_of
from ctxcore.errors import CtxError
from ctxcore.model.anthropic_io import messages_from_anthropic
from ctxcore.model.blocks import provider_blocks
from ctxcore.model.messages import Message, ai, human, system, tool
from ctxcore.render import to_anthropic, to_openai_responses
from ctxcore.render.target import TargetSpec
from ctxcore.testing.harness.anthropic_server import compaction_block

#: a bulk append: more new items than the history provider's fast path is gated on.
BULK = 1_001
COUNTER = TiktokenCounter("cl100k_base")
FORMS = ("message", "openai", "anthropic", "responses")
TEXT = st.text(alphabet="abcd xyz<>[]", min_size=0, max_size=40)


class Slot:
    """A provider returning ``state[key]`` as given: a tuple the machine replaces when messages are added."""

    def __init__(self, key: str) -> None:
        self.key = key

    def get_messages(self, state: Mapping[str, Any], runtime: Mapping[str, Any]) -> Sequence[Message]:
        return state.get(self.key, ())


# ------------------------------------------------------------------ messages and forms
@st.composite
def turns(draw: st.DrawFn, tag: str) -> list[Message]:
    """One turn: a user message, an assistant answer, or a tool run (1-3 parallel calls, now and then one unanswered)."""
    kind = draw(st.sampled_from(["user", "assistant", "tools", "tools", "system"]))
    text = draw(TEXT)
    if kind == "user":
        return [human(text or "hi", id=f"{tag}u")]
    if kind == "assistant":
        return [ai(text or "ok", id=f"{tag}a")]
    if kind == "system":
        return [system(text or "note", id=f"{tag}s")]
    ids = [f"{tag}c{k}" for k in range(draw(st.integers(1, 3)))]
    call = ai(text or None, tool_calls=[{"id": i, "name": "read", "arguments": {"p": text}} for i in ids], id=f"{tag}a")
    answered = ids if draw(st.integers(0, 7)) else ids[:-1]
    return [call, *(tool(text * 4 or "done", tool_call_id=i, id=f"{tag}r{i}") for i in answered)]


def bulk(tag: str, n: int) -> list[Message]:
    """``n`` messages of plain user/assistant chat, all the same shape (the kind of run the fast path takes)."""
    return [human(f"question {k}", id=f"{tag}{k}") if k % 2 == 0 else ai(f"answer {k}", id=f"{tag}{k}") for k in range(n)]


def compaction_turn(tag: str, text: str, with_text: bool) -> list[Message]:
    """A user message and the Anthropic assistant turn answering it with a compaction block (and, maybe, text)."""
    blocks: list[dict[str, Any]] = [compaction_block(text or "summary")]
    if with_text:
        blocks.append({"type": "text", "text": "ok"})
    answer = messages_from_anthropic({"role": "assistant", "content": blocks})
    return [human(text or "go on", id=f"{tag}u"), *(m.model_copy(update={"id": f"{tag}k"}) for m in answer)]


def in_form(messages: list[Message], form: str) -> list[Any]:
    """Messages as a caller of one API holds them: ``message`` objects, ``openai`` chat dicts, ``anthropic``
    message dicts (as ``to_anthropic`` renders each run between system messages, which stay chat dicts) or
    ``responses`` input items."""
    if form == "message":
        return list(messages)
    if form == "openai":
        return [m.to_openai() for m in messages]
    if form == "responses":
        return list(to_openai_responses(messages)["input"])
    out: list[Any] = []
    run: list[Message] = []
    for m in [*messages, None]:
        if m is not None and m.role != "system":
            run.append(m)
            continue
        if run:
            out.extend(to_anthropic(run)["messages"])
            run = []
        if m is not None:
            out.append(m.to_openai())
    return out


def as_messages(history: list[Any]) -> list[Message]:
    """What a history provider reads ``history`` as (no annotations), to hand it over again in another form."""
    return list(History(annotate=False, neutralize_markers=False).get_messages({"messages": history}, {}))


def edit_text(item: Any) -> bool:
    """Prefix the first text of a stored dict with ``edited `` in place; whether it had one."""
    if not isinstance(item, dict):
        return False
    for key in ("content", "text", "output"):
        value = item.get(key)
        if isinstance(value, str):
            item[key] = "edited " + value
            return True
        if isinstance(value, list) and any(edit_text(block) for block in value):
            return True
    return False


def edited(item: Any) -> Any:
    """A new object for ``item`` with its text edited (a Message keeps its id)."""
    if isinstance(item, Message):
        return item.model_copy(update={"content": "edited " + item.text})
    new = copy.deepcopy(item)
    if not edit_text(new) and "role" in new:
        new["content"] = "edited"
    return new


# ------------------------------------------------------------------ comparing builds
def outcome(build: Callable[[], BuiltContext]) -> Any:
    """A build's messages, report (every record's fields, totals, warnings, notes), tools and cache plan; or its error."""
    try:
        built = build()
    except CtxError as exc:
        return type(exc).__name__, str(exc)
    report = built.report
    removed = report.removed_count  # read before the records exist, then checked against them
    records = [tuple(vars(r).values()) for r in report.records]
    assert removed == sum(1 for r in report.records if r.fate in ("dropped", "compressed"))
    totals = (report.budget, report.total_tokens, report.tool_tokens, report.utilization, report.pressure_level)
    return [m.model_dump() for m in built.messages], records, totals, report.warnings, report.notes, \
        report.compressions, built.tools, built.cache


def _kind(result: Any) -> str:
    """What a build did, for hypothesis' statistics: the error raised, or whether the budget evicted anything."""
    if isinstance(result[0], str):
        return f"raised {result[0]}"
    return "built, evicting" if any(r[5] == "dropped" for r in result[1]) else "built, all kept"


class FastEqualsReference(RuleBasedStateMachine):
    """One long-lived builder over a changing conversation, compared with the reference after every build."""

    def __init__(self) -> None:
        super().__init__()
        self.history: list[Any] = []
        self.slots: dict[str, tuple[Message, ...]] = {"before": (), "after": ()}
        self.turn = 0
        self.bulked = False
        self.previous: BuiltContext | None = None
        self.builder: ContextBuilder | None = None

    @initialize(
        budget=st.sampled_from([250, 400, 900, 100_000]),
        settings_=st.fixed_dictionaries({
            "provider": st.sampled_from(["openai", "anthropic"]),
            "sanitize": st.sampled_from(["drop", "backfill"]),
            "recover_user": st.booleans(),
            "legal_start": st.booleans(),
            "cache": st.sampled_from(["auto", "off"]),
            "cache_min_tokens": st.sampled_from([1, 200]),
        }),
        prompt_after=st.booleans(),
    )
    def make_builder(self, budget: int, settings_: dict[str, Any], prompt_after: bool) -> None:
        """The pipeline: static prompt, a slot, the history, a slot, (a static prompt), token_budget."""
        providers: list[Any] = [StaticPrompt("You are a careful agent."), Slot("before"), Step("history", History()),
                                Slot("after")]
        if prompt_after:
            providers.append(Step("closing", StaticPrompt("Answer in one line.")))
        self.builder = ContextBuilder(providers, [TokenBudget(max_tokens=budget)], COUNTER, target=TargetSpec(**settings_))

    def _new_tag(self) -> str:
        self.turn += 1
        return f"t{self.turn}_"

    @rule(data=st.data(), form=st.sampled_from(FORMS))
    def append_turn(self, data: st.DataObject, form: str) -> None:
        """Append a turn, in any input form, to the same list object."""
        self.history.extend(in_form(data.draw(turns(self._new_tag())), form))

    @precondition(lambda self: not self.bulked)
    @rule(form=st.sampled_from(["message", "openai"]))
    def append_bulk(self, form: str) -> None:
        """Append more than a thousand plain messages at once (once a run: the reference converts them every build)."""
        self.history.extend(in_form(bulk(self._new_tag(), BULK), form))
        self.bulked = True

    @rule(form=st.sampled_from(["message", "anthropic"]), text=TEXT, with_text=st.booleans())
    def append_compaction(self, form: str, text: str, with_text: bool) -> None:
        """Append a question answered by an Anthropic compaction turn: nothing before the question is read again."""
        self.history.extend(in_form(compaction_turn(self._new_tag(), text, with_text), form))

    @precondition(lambda self: self.history)
    @rule(data=st.data())
    def edit_recent(self, data: st.DataObject) -> None:
        """Edit one of the newest GUARD items in place (a dict changed, a Message replaced in the same list)."""
        k = data.draw(st.integers(max(0, len(self.history) - GUARD), len(self.history) - 1))
        item = self.history[k]
        if isinstance(item, Message) or not edit_text(item):
            self.history[k] = edited(item)

    @precondition(lambda self: len(self.history) > GUARD)
    @rule(data=st.data())
    def edit_old(self, data: st.DataObject) -> None:
        """Edit an older item the documented way: a new list holding a new object."""
        k = data.draw(st.integers(0, len(self.history) - GUARD - 1))
        self.history = list(self.history)
        self.history[k] = edited(self.history[k])

    @precondition(lambda self: self.history)
    @rule(data=st.data())
    def truncate(self, data: st.DataObject) -> None:
        """Cut the same list at any point (a retried turn, a rewound conversation)."""
        del self.history[data.draw(st.integers(0, len(self.history) - 1)):]

    @rule()
    def replace_list(self) -> None:
        """Hand over a new list of equal, new objects."""
        self.history = [m.model_copy() if isinstance(m, Message) else copy.deepcopy(m) for m in self.history]

    @rule(data=st.data())
    def change_form(self, data: st.DataObject) -> None:
        """Hand over the whole conversation in another API's shape (one that can hold its provider blocks)."""
        messages = as_messages(self.history)
        blocks = any(provider_blocks(m.content) for m in messages)
        self.history = in_form(messages, data.draw(st.sampled_from(["message", "anthropic"] if blocks else FORMS)))

    @rule(where=st.sampled_from(["before", "after"]), role=st.sampled_from(["system", "user"]), text=TEXT)
    def add_around(self, where: str, role: str, text: str) -> None:
        """A provider before or after the history starts returning one more message (a new tuple)."""
        make = system if role == "system" else human
        self.slots[where] = (*self.slots[where], make(text or role, id=f"{self._new_tag()}{where}"))

    @rule(where=st.sampled_from(["before", "after"]))
    def clear_around(self, where: str) -> None:
        """A provider before or after the history returns nothing again."""
        self.slots[where] = ()

    @precondition(lambda self: self.builder is not None and len(self.builder.providers) < 9)
    @rule(before=st.booleans(), text=TEXT)
    def add_provider(self, before: bool, text: str) -> None:
        """Put one more static prompt before or after the history into the same builder."""
        assert self.builder is not None
        at = self.builder.providers.index(next(s for s in self.builder.providers if isinstance(s.component, History)))
        step = Step(f"extra{self._new_tag()}", StaticPrompt(text or "extra rule"))
        self.builder.providers.insert(at if before else at + 1, step)

    @rule()
    def unchanged(self) -> None:
        """Nothing changes: the next build is of the same state (a retried request)."""

    @invariant()
    def fast_equals_reference(self) -> None:
        """After every step, build with the long-lived builder and with the reference: the same answer."""
        if self.builder is None:
            return
        state = {"messages": self.history, **self.slots}
        reference = outcome(lambda: reference_build(self.builder, state, previous=self.previous))
        fast = outcome(lambda: self._fast(state))
        assert fast == reference
        event(_kind(fast))

    def _fast(self, state: dict[str, Any]) -> BuiltContext:
        assert self.builder is not None
        built = self.builder.build(state)
        self.previous = built
        return built

    @invariant()
    def reference_uses_fresh_twins(self) -> None:
        """Each component's reference is a new object every time it is asked for."""
        if self.builder is not None:
            for step in self.builder.providers + self.builder.filters:
                if hasattr(step.component, "reference"):
                    assert reference_of(step.component) is not reference_of(step.component)


FastEqualsReference.TestCase.settings = settings(
    max_examples=25, stateful_step_count=20, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)
TestFastEqualsReference = FastEqualsReference.TestCase


@pytest.mark.slow
@pytest.mark.skipif(os.environ.get("CTXCORE_RUN_SLOW") != "1", reason="slow: set CTXCORE_RUN_SLOW=1 to run")
class TestFastEqualsReferenceLong(FastEqualsReference.TestCase):  # type: ignore[misc,name-defined,valid-type]
    """The same machine, ten times the runs and longer conversations."""

    settings = settings(
        max_examples=400, stateful_step_count=60, deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    )


class TestReferenceBuild:
    """reference_build on its own: what a user calls to check a custom component."""

    def test_a_pipeline_builds_like_its_builder(self, host: Any) -> None:
        """A compiled Pipeline is accepted and builds what its builder builds."""
        from ctxcore.pipeline.spec import Pipeline

        pipeline = Pipeline.from_string(
            "version: 1\nmodel: {context_window: 400}\ncounter: {type: approximate}\n"
            "providers:\n  - {type: static_prompt, text: Be brief.}\n  - {type: history}\n"
            "filters:\n  - {type: token_budget}\n",
            host=host,
        )
        state = {"messages": [m.to_openai() for m in bulk("p", 60)]}
        assert outcome(lambda: pipeline.build(state)) == outcome(lambda: reference_build(pipeline, state))

    def test_the_builder_is_left_as_it_was(self) -> None:
        """A reference build changes none of the builder's caches (its count cache sees no lookups)."""
        builder = ContextBuilder([History()], [TokenBudget(max_tokens=300)], COUNTER)
        reference_build(builder, {"messages": bulk("q", 20)})
        assert (builder.counter.hits, builder.counter.misses, len(builder.counter.cache)) == (0, 0, 0)

    def test_anything_else_is_refused_with_the_fix(self) -> None:
        """Passing something that is neither a builder nor a pipeline names what is needed."""
        with pytest.raises(TypeError, match="needs a ContextBuilder or a Pipeline, got dict"):
            reference_build({"providers": []}, {})
