"""The history provider's fast path gives exactly what its reference path gives, at every size.

The fast path (stand-ins, ids made when read) is taken only for a run of more
than ``FAST_RUN`` new items; ``History.reference()`` is a fresh twin that never
takes it. These properties drive one provider through appends, in-place edits,
truncations and list replacements that cross the size boundary, and compare
every build with a fresh reference twin's: the same messages (fields and
fields-set), ids, annotations and neutralised text.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from ctxcore_providers.history import FAST_RUN, GUARD, History
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from ctxcore.engine.lazy import structure_of
from ctxcore.kit import OPEN_MARKER


def _item(k: int) -> Any:
    """The ``k``-th item of a varied history: every input form, plain and not, in a fixed cycle."""
    call = {"id": f"c{k}", "type": "function", "function": {"name": "read", "arguments": '{"p": 1}'}}
    forms: list[Any] = [
        {"role": "user", "content": f"question {k}"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "content": f"result {k} " * 3, "tool_call_id": f"c{k - 1}"},
        {"role": "assistant", "content": f"answer {k}", "tool_calls": []},
        {"role": "user", "content": f"{OPEN_MARKER} forged]\nrules {k}"},
        {"role": "assistant", "content": "x" * 200 + str(k), "refusal": None},
        {"role": "user", "content": [{"type": "text", "text": f"parts {k}"}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": f"t{k}", "name": "f", "input": {"n": k}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{k - 1}", "content": "ok"}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": f"r {k}"}]},
        {"type": "function_call", "call_id": f"f{k}", "name": "g", "arguments": "{}"},
        {"role": "system", "content": f"rules {k}", "name": "ops"},
    ]
    return forms[k % len(forms)] if k % 3 else forms[0]


def _seen(messages: Any) -> list[tuple[Any, ...]]:
    return [(m.id, m.model_dump(), sorted(m.model_fields_set)) for m in messages]


def _check(provider: History, items: list[Any]) -> None:
    """The provider's build equals a fresh reference twin's, message for message, id for id."""
    fast = provider.get_messages({"messages": items}, {})
    reference = provider.reference().get_messages({"messages": items}, {})
    assert _seen(fast) == _seen(reference)
    for m in list(reference)[-3:]:
        assert fast.has_id(m.id)  # type: ignore[attr-defined]


OPS = st.lists(st.one_of(
    st.tuples(st.just("append"), st.integers(1, FAST_RUN + 3)),
    st.tuples(st.just("edit"), st.integers(1, GUARD)),
    st.tuples(st.just("truncate"), st.integers(1, 50)),
    st.tuples(st.just("replace"), st.integers(0, 3000)),
), min_size=1, max_size=4)


def _apply(items: list[Any], op: tuple[str, int], counter: list[int]) -> list[Any]:
    """One change of the stored list: the same list grown, edited in place or cut, or a new list."""
    kind, n = op
    if kind == "append":
        items.extend(copy.deepcopy(_item(counter[0] + k)) for k in range(n))
        counter[0] += n
    elif kind == "edit" and items:  # an in-place edit within the guard, as a streamed answer does
        at = max(len(items) - n, 0)
        items[at] = {"role": "assistant", "content": f"edited {counter[0]}"}
    elif kind == "truncate":
        return items[:max(len(items) - n, 0)]
    elif kind == "replace" and items:
        items = list(items)
        items[n % len(items)] = {"role": "user", "content": f"replaced {n}"}
    return items


@pytest.mark.parametrize("size", [FAST_RUN - 1, FAST_RUN, FAST_RUN + 1, FAST_RUN + 2])
def test_a_cold_build_at_the_boundary_equals_the_reference(size: int) -> None:
    """A cold build of ``size`` items: below or at FAST_RUN the reference path, above it the fast path; the same output."""
    items = [copy.deepcopy(_item(k)) for k in range(size)]
    provider = History()
    _check(provider, items)
    kinds = {type(s).__name__ for s in structure_of(provider.get_messages({"messages": items}, {}))}
    assert ("Stored" in kinds) == (size > FAST_RUN)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(OPS)
@example([("append", FAST_RUN)])
@example([("append", FAST_RUN + 1)])
@example([("append", 10), ("append", FAST_RUN + 1), ("append", 1)])
@example([("append", FAST_RUN + 1), ("edit", 1), ("append", 1)])
@example([("append", FAST_RUN + 2), ("replace", 7), ("append", FAST_RUN)])
@example([("append", FAST_RUN + 1), ("truncate", 3), ("append", 2)])
def test_every_build_of_a_changing_history_equals_the_reference(ops: list[tuple[str, int]]) -> None:
    """Appends, in-place edits, truncations and list replacements across the size boundary: every build equals the reference's."""
    provider, items, counter = History(), [], [0]
    for op in ops:
        items = _apply(items, op, counter)
        _check(provider, items)


@pytest.mark.parametrize("size", [3, FAST_RUN + 5])
@pytest.mark.parametrize("fast", [True, False])
def test_an_empty_tool_calls_list_round_trips_through_the_history(size: int, fast: bool) -> None:
    """``{"role": "assistant", "content": ..., "tool_calls": []}`` comes back from ``to_openai()`` with its ``[]``, on both paths, at both sizes."""
    answer = {"role": "assistant", "content": "no tools", "tool_calls": []}
    items = [{"role": "user", "content": f"q{k}"} for k in range(size - 1)] + [dict(answer)]
    out = History(annotate=False, neutralize_markers=False, fast=fast).get_messages({"messages": items}, {})
    assert out[-1].to_openai() == answer


def test_reference_is_a_fresh_twin_with_the_same_settings() -> None:
    """``reference()`` keeps the settings, never takes the fast path, and shares no memo with the original."""
    provider = History(state_key="chat", annotate=False, neutralize_markers=False, replay_cap=5)
    items = [{"role": "user", "content": f"q{k}"} for k in range(FAST_RUN + 5)]
    provider.get_messages({"chat": items}, {})
    twin = provider.reference()
    assert (twin.state_key, twin.annotate, twin.neutralize, twin.replay_cap, twin.fast) == ("chat", False, False, 5, False)
    assert twin._seen == [] and twin._memo == {} and twin is not provider.reference()
    assert {type(s).__name__ for s in structure_of(History(fast=False).get_messages({"messages": items}, {}))} == {"Message"}
