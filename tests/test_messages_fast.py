"""``Message.from_openai`` builds plain chat dicts without validation: the result must equal the validated one.

The fast path (``ctxcore.model.plain.plain_openai``, after the one plain check ``plain_fields``) is taken for dicts of the
usual shape and must be indistinguishable from the validating path: same fields,
same fields-set (``model_dump(exclude_unset=True)``), same OpenAI dict back, same
fingerprint. Dicts it does not accept must still fail with the validating path's error.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from ctxcore.model.messages import _READ_FIELDS, Message, copied_message
from ctxcore.model.plain import plain_calls, plain_fields, plain_message, plain_openai

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
# The two-key boundary of the plain check: a bare tool result (no call id), content absent, a non-string content.
@example({"role": "tool", "content": "ok"}, "m1")
@example({"role": "user", "name": "ann"}, "m1")
@example({"role": "assistant", "content": 3}, "m1")
@example({"role": "assistant", "content": None}, "m1")
@example({"role": "system", "content": "rules", "name": "x"}, "m1")
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
        made = plain_openai(data, "x")
        assert made is not None and made == _validated(data, id="x")
    assert plain_calls([call]) == ("c1", "f", "{}")
    assert plain_calls([{**call, "function": {"name": "f", "arguments": '{"a": NaN}'}}]) is None  # repaired by the validator
    assert plain_openai({"role": "user", "content": [{"type": "text", "text": "hi"}]}, "x") is None


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


@settings(max_examples=400, deadline=None)
@given(dicts, st.sampled_from([None, {"semantic_kind": "tool_observation"}]), st.sampled_from([None, "cleaned"]))
def test_a_deferred_dict_builds_what_from_openai_builds(data: dict[str, Any], metadata: dict[str, Any] | None,
                                                        content: str | None) -> None:
    """``plain_message`` of the fields ``plain_fields`` read is ``from_openai(dict, id=...)``; with metadata
    (and other content) it is that message's ``model_copy(update=...)``: same fields, fields-set, fingerprint."""
    fields = plain_fields(data)
    if fields is None:
        return
    expected = Message.from_openai(data, id="m1")
    calls_read = fields[3]
    made = plain_message("m1", data["role"], data["content"], data.get("name"), data.get("tool_call_id"), calls_read)
    assert _outcome(lambda: made) == _outcome(lambda: _validated(data, id="m1"))
    assert made == expected and made.model_fields_set == expected.model_fields_set
    update: dict[str, Any] = {}
    if metadata is not None:
        update["metadata"] = metadata
    if content is not None:
        update["content"] = content
    copied = BaseModel.model_copy(expected, update=update)  # pydantic's own copy: the reference
    made = plain_message("m1", data["role"], update.get("content", data["content"]), data.get("name"),
                         data.get("tool_call_id"), calls_read, metadata)
    assert (made.model_dump(), made.model_fields_set, made.fingerprint, made.text) == (
        copied.model_dump(), copied.model_fields_set, copied.fingerprint, copied.text)
    assert made == copied


updates = st.fixed_dictionaries({}, optional={
    "id": st.just("other"), "role": st.sampled_from(["user", "assistant"]), "content": texts,
    "name": st.one_of(st.none(), st.text(max_size=5)),
    "tool_call_id": st.one_of(st.none(), st.just("c9")), "tool_calls": st.just(()), "metadata": st.just({"k": 1}),
    "source": st.sampled_from(["history", None]), "trust": st.sampled_from(["trusted", "untrusted"]),
    "zone": st.sampled_from(["protected", "dynamic"]), "priority": st.integers(0, 90),
})


@settings(max_examples=400, deadline=None)
@given(dicts, updates, st.sampled_from(["none", "text", "both"]), st.booleans())
def test_model_copy_is_pydantics_copy(data: dict[str, Any], update: dict[str, Any], cached: str, empty: bool) -> None:
    """``Message.model_copy(update=...)`` (and ``copied_message``, which makes it) gives pydantic's copy
    exactly: same fields, fields-set, equality; the cached ``text``/``fingerprint`` carried over only
    when the update touches none of the fields they are made of, recomputed otherwise."""
    try:
        m = Message.from_openai(data, id="m1")
    except ValueError:
        return
    if cached in ("text", "both"):
        _ = m.text
    if cached == "both":
        _ = m.fingerprint
    given_update = None if empty and not update else update
    reference = BaseModel.model_copy(m, update=given_update)
    if update and not _READ_FIELDS.isdisjoint(update):
        for derived in ("text", "fingerprint"):
            reference.__dict__.pop(derived, None)
    state = dict(reference.__dict__)  # before reading a derived value caches it
    for copied in (m.model_copy(update=given_update), copied_message(m, given_update)):
        assert type(copied) is Message and copied is not m
        assert copied.__dict__ == state  # the cached derived values too
        assert copied.model_fields_set == reference.model_fields_set
        assert (copied.__pydantic_extra__, copied.__pydantic_private__) == (None, None)
        assert copied == reference and copied.model_dump() == reference.model_dump()
        assert (copied.fingerprint, copied.text) == (reference.fingerprint, reference.text)
        assert copied.metadata is m.metadata or "metadata" in update  # shallow, as pydantic's
    assert m.model_fields_set == Message.from_openai(data, id="m1").model_fields_set  # the original is untouched


def test_model_copy_of_a_subclass_or_a_deep_copy_takes_pydantics_path() -> None:
    """The direct copy is for ``Message`` itself; a subclass (which may add private attributes) and
    ``deep=True`` go through pydantic, derived values still recomputed."""

    class Tagged(Message):
        pass

    m = Tagged(role="user", content="a")
    _ = m.text
    copied = m.model_copy(update={"content": "b"})
    assert type(copied) is Tagged and copied.text == "b"
    plain = Message(role="user", content="a", metadata={"k": [1]})
    deep = plain.model_copy(update={"source": "x"}, deep=True)
    assert deep.metadata == plain.metadata and deep.metadata is not plain.metadata and deep.source == "x"


@settings(max_examples=400, deadline=None)
@given(dicts)
def test_the_plain_check_accepts_only_what_validation_would_not_change(data: dict[str, Any]) -> None:
    """A dict ``plain_fields`` accepts converts without error to the message built from what it read."""
    fields = plain_fields(data)
    if fields is None:
        return
    defaults, name, call_id, calls = fields
    assert plain_message("m1", defaults[3], data["content"], name, call_id, calls) == _validated(data, id="m1")


def test_an_empty_tool_calls_list_is_not_plain_and_comes_back() -> None:
    """``"tool_calls": []`` takes the validating path, which keeps it: ``to_openai()`` gives the three keys back."""
    data = {"role": "assistant", "content": "x", "tool_calls": []}
    assert plain_fields(data) is None
    assert Message.from_openai(data).to_openai() == data
