"""``Message.from_openai`` builds plain chat dicts without validation: the result must equal the validated one.

The fast path (``ctxcore.model.messages._plain_openai``) is taken for dicts of the
usual shape and must be indistinguishable from the validating path: same fields,
same fields-set (``model_dump(exclude_unset=True)``), same OpenAI dict back, same
fingerprint. Dicts it does not accept must still fail with the validating path's error.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from ctxcore.model.messages import Message, ToolCall, _plain_openai, _plain_tool_call

texts = st.one_of(st.none(), st.text(max_size=20), st.sampled_from(["NaN", '{"a": NaN}', '{"x": 1}', ""]))
names = st.one_of(st.none(), st.text(max_size=5), st.integers(0, 3))
calls = st.lists(
    st.fixed_dictionaries(
        {"id": st.one_of(st.text(max_size=4), st.none(), st.integers(0, 2))},
        optional={
            "type": st.sampled_from(["function", "other"]),
            "function": st.one_of(
                st.fixed_dictionaries({"name": names}, optional={"arguments": st.one_of(texts, st.just({"a": 1}))}),
                st.none(),
            ),
        },
    ),
    max_size=3,
)
dicts = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "system", "tool", "developer", 3])},
    optional={
        "content": st.one_of(texts, st.just([{"type": "text", "text": "hi"}]), st.integers(0, 2)),
        "name": names,
        "tool_call_id": names,
        "tool_calls": st.one_of(calls, st.none()),
        "refusal": st.none(),
    },
)


def _validated(data: dict[str, Any], **provenance: Any) -> Message:
    """``from_openai`` through the validating path (a Mapping that is not a dict skips the fast path)."""

    class Frozen(dict):  # type: ignore[type-arg]
        pass

    return Message.from_openai(Frozen(data), **provenance)


def _outcome(call: Any) -> tuple[str, Any]:
    try:
        m = call()
    except ValueError as exc:
        return "error", str(exc)
    return "ok", (m.model_dump(), m.model_dump(exclude_unset=True), m.to_openai(), m.fingerprint, m.text)


@settings(max_examples=400, deadline=None)
@given(dicts, st.sampled_from([None, "m1"]))
def test_plain_dicts_build_what_validation_builds(data: dict[str, Any], message_id: str | None) -> None:
    provenance = {} if message_id is None else {"id": message_id}
    fast = _outcome(lambda: Message.from_openai(data, **provenance))
    slow = _outcome(lambda: _validated(data, **provenance))
    if message_id is None and fast[0] == slow[0] == "ok":  # random default ids: compare everything else
        fast = ("ok", tuple({k: v for k, v in d.items() if k != "id"} if isinstance(d, dict) else d for d in fast[1]))
        slow = ("ok", tuple({k: v for k, v in d.items() if k != "id"} if isinstance(d, dict) else d for d in slow[1]))
    assert fast == slow


def test_the_fast_path_is_taken_for_the_usual_shapes() -> None:
    """Guard against the fast path silently never applying (the property alone would still pass)."""
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    for data in (
        {"role": "user", "content": "hi"},
        {"role": "system", "content": "rules"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "content": "42", "tool_call_id": "c1", "name": "f"},
    ):
        made = _plain_openai(Message, data, "x")
        assert made is not None and made == _validated(data, id="x")
    assert isinstance(_plain_tool_call(call), ToolCall)
    assert _plain_tool_call({**call, "function": {"name": "f", "arguments": '{"a": NaN}'}}) is None  # repaired by the validator
    assert _plain_openai(Message, {"role": "user", "content": [{"type": "text", "text": "hi"}]}, "x") is None


def test_fast_messages_keep_the_role_rules() -> None:
    """What validation refuses is still refused (the fast path declines and validation raises)."""
    with pytest.raises(ValueError, match="tool_call_id"):
        Message.from_openai({"role": "tool", "content": "42"})
    with pytest.raises(ValueError, match="only assistant"):
        Message.from_openai({"role": "user", "content": "x", "tool_calls": [{"id": "a", "function": {"name": "f"}}]})
    m = Message.from_openai({"role": "tool", "content": "x", "tool_call_id": "a"})
    assert (m.trust, m.zone) == ("untrusted", "dynamic")
    with pytest.raises(ValidationError):  # still frozen
        m.content = "y"  # type: ignore[misc]


run_items = st.lists(
    st.one_of(dicts, dicts, dicts, st.just({"type": "message", "role": "user", "content": "hi"}), st.just("not a dict"),
              st.just({"role": "user", "content": [{"type": "text", "text": "parts"}]})),
    max_size=6,
)


def _run_id(index: int, item: dict[str, Any], content: Any) -> str:
    return f"h:{index}:{item.get('role')}:{content!r}"


@settings(max_examples=300, deadline=None)
@given(run_items, st.integers(0, 2))
def test_a_run_of_dicts_builds_what_from_openai_builds_one_by_one(items: list[Any], start: int) -> None:
    """``Message.from_openai_run`` = ``from_openai(item, id=make_id(...))`` for each item of the run, stopping where it should."""
    start = min(start, len(items))
    expected_stop = start
    while expected_stop < len(items):
        item = items[expected_stop]
        if type(item) is not dict or "type" in item or not (item.get("content") is None or type(item.get("content")) is str):
            break
        expected_stop += 1
    out: list[Message] = []
    try:
        stop = Message.from_openai_run(items, start, out, _run_id)
    except ValueError as exc:
        failing = start + len(out)
        assert failing < expected_stop
        item = items[failing]
        assert _outcome(lambda: _validated(item, id=_run_id(failing, item, item.get("content")))) == ("error", str(exc))
    else:
        assert stop == expected_stop
        assert len(out) == stop - start
    for k, made in enumerate(out, start):
        item = items[k]
        expected = _outcome(lambda: _validated(item, id=_run_id(k, item, item.get("content"))))  # noqa: B023
        assert ("ok", (made.model_dump(), made.model_dump(exclude_unset=True), made.to_openai(), made.fingerprint,
                       made.text)) == expected


def test_a_run_takes_the_fast_path_for_plain_dicts() -> None:
    """Plain dicts in a run are not validated (guard against the run silently taking the slow path)."""
    items = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": None,
             "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
             {"role": "tool", "content": "42", "tool_call_id": "c1"}, {"type": "message"}]
    out: list[Message] = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Message, "from_openai", classmethod(lambda cls, data, **kw: pytest.fail("validated")))
        assert Message.from_openai_run(items, 0, out, _run_id) == 3
    assert [m.role for m in out] == ["user", "assistant", "tool"] and out[1].tool_calls[0].id == "c1"
