"""The compact stored form of a thread's messages and its unvalidated reader (``ctxcore.model.stored``).

``stored_message`` skips validation only where a complete check shows
validation could neither fail nor change a value, so for any input it either
declines (``None``) or builds exactly what ``Message.model_validate`` builds,
fields-set included. ``stored_dump`` leaves out role defaults and reads back
as the same message.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxcore.model.messages import ImageBlock, Message, TextBlock, ToolCall, ai, human, system, tool
from ctxcore.model.stored import stored_dump, stored_message

strs = st.one_of(st.none(), st.text(max_size=6), st.sampled_from(["", "NaN", '{"a": NaN}', '{"x": 1}']))
odd = st.one_of(strs, st.integers(-1, 2), st.booleans(), st.just([]), st.just({}), st.just(["x"]))
calls = st.lists(
    st.fixed_dictionaries({}, optional={"id": odd, "name": odd, "arguments": odd,
                                        "type": st.sampled_from(["function", "other"]), "extra": st.just(1)}),
    max_size=3,
)
stored = st.fixed_dictionaries(
    {},
    optional={
        "id": st.one_of(st.text(max_size=4), st.none(), st.integers(0, 2)),
        "role": st.sampled_from(["user", "assistant", "system", "tool", "developer", 3]),
        "content": st.one_of(odd, st.just([{"type": "text", "text": "hi"}])),
        "name": odd, "tool_call_id": odd, "source": odd,
        "tool_calls": st.one_of(calls, odd),
        "metadata": st.one_of(st.just({}), st.just({"k": [1, {"v": None}]}), st.just({1: 2}), odd),
        "trust": st.sampled_from(["trusted", "untrusted", "other", None]),
        "zone": st.sampled_from(["protected", "dynamic", "other"]),
        "priority": st.one_of(st.integers(-3, 10**20), st.booleans(), st.just(1.5), st.none()),
        "refusal": st.none(),
    },
)


def _shape(m: Message) -> tuple[Any, ...]:
    """Everything a caller can observe of a message: fields, fields-set (of calls too), derived values."""
    return (m.model_dump(), m.model_dump(exclude_unset=True), m.model_fields_set,
            [c.model_fields_set for c in m.tool_calls], m.fingerprint, m.text, m.to_openai())


@settings(max_examples=400, deadline=None)
@given(stored)
def test_stored_message_builds_what_validation_builds(data: dict[str, Any]) -> None:
    """Any dict: ``stored_message`` declines it or builds the message ``model_validate`` builds, fields-set included."""
    fast = stored_message(data)
    if fast is None:
        return
    assert type(fast) is Message
    assert _shape(fast) == _shape(Message.model_validate(data))
    assert fast.role != "system"


messages = st.builds(
    lambda make, text, extra: make(text, extra),
    st.sampled_from([
        lambda t, x: human(t, **x),
        lambda t, x: ai(t or None, **x),
        lambda t, x: ai(None, tool_calls=[ToolCall(id="c1", name="f", arguments='{"p": "' + t + '"}')], **x),
        lambda t, x: tool(t, tool_call_id="c1", **x),
        lambda t, x: human([TextBlock(text=t), ImageBlock(url="https://x/y.png")], **x),
        lambda t, x: system(t, **{k: v for k, v in x.items() if k != "trust"}),
    ]),
    st.text(max_size=8),
    st.fixed_dictionaries({}, optional={"name": st.text(max_size=3), "metadata": st.just({"a": [1, "b"]}),
                                        "source": st.text(max_size=3), "priority": st.integers(-2, 2),
                                        "trust": st.just("untrusted")}),
)


@settings(max_examples=200, deadline=None)
@given(messages)
def test_the_stored_form_reads_back_as_the_same_message(m: Message) -> None:
    """Both stored forms of any message validate back to it, and the fast reader, where it applies, builds the same."""
    for dump in (stored_dump(m), m.model_dump(mode="json")):  # the compact form, and the full one older stores hold
        back = Message.model_validate(dump)
        assert back == m and back.fingerprint == m.fingerprint
        fast = stored_message(dump)
        assert fast is None or _shape(fast) == _shape(back)


class TestStoredForm:
    def test_defaults_are_left_out(self) -> None:
        """A plain turn stores only what differs from its role's defaults (a call without its ``type``)."""
        call = ai(None, tool_calls=[ToolCall(id="c1", name="read", arguments="{}")], id="a")
        assert stored_dump(human("hi", id="u")) == {"id": "u", "role": "user", "content": "hi"}
        assert stored_dump(call) == {"id": "a", "role": "assistant",
                                     "tool_calls": [{"id": "c1", "name": "read", "arguments": "{}"}]}
        assert stored_dump(tool("out", tool_call_id="c1", id="t")) == {"id": "t", "role": "tool", "content": "out",
                                                                        "tool_call_id": "c1"}

    def test_non_defaults_are_kept(self) -> None:
        """A trusted tool result, an empty text and zero-like values that are not the default stay in the stored form."""
        m = tool("", tool_call_id="c1", trust="trusted", id="t", metadata={"k": 0})
        assert stored_dump(m) == {"id": "t", "role": "tool", "content": "", "tool_call_id": "c1", "trust": "trusted",
                                  "metadata": {"k": 0}}

    def test_the_usual_shapes_take_the_fast_path(self) -> None:
        """Guard against the reader silently never applying: compact and full dumps of a turn both build unchecked."""
        turn = [human("q"), ai(None, tool_calls=[ToolCall(id="c1", name="f", arguments="{}")]),
                tool("r", tool_call_id="c1"), ai("a")]
        turn.append(ai("text and a call", tool_calls=[ToolCall(id="c2", name="g", arguments="{}")]))
        for m in turn:
            fast = stored_message(stored_dump(m))
            assert fast is not None and fast == m and _shape(fast) == _shape(Message.model_validate(stored_dump(m)))

    def test_what_the_reader_declines(self) -> None:
        """System messages, content blocks, unknown keys, NaN arguments and a tool result without its call id are validated instead."""
        for data in (
            {"id": "s", "role": "system", "content": "x"},
            {"id": "u", "role": "user", "content": [{"type": "text", "text": "x"}]},
            {"id": "u", "role": "user", "content": "x", "extra": 1},
            {"id": "a", "role": "assistant", "tool_calls": [{"id": "c", "name": "f", "arguments": '{"a": NaN}'}]},
            {"id": "t", "role": "tool", "content": "x"},
            {"role": "user", "content": "x"},
            {"id": "u", "role": "user", "content": "x", "tool_calls": [{"id": "c", "name": "f", "arguments": "{}"}]},
            {"id": "a", "role": "assistant", "tool_calls": [{"id": "c", "name": "f"}]},
            {"id": "u", "role": "user", "content": "x", "metadata": {"k": 1}},
            human("x").model_dump(mode="json"),
        ):
            assert stored_message(data) is None, data

    def test_each_message_gets_its_own_metadata(self) -> None:
        """Messages read without validation never share a metadata dict (the role's defaults are not aliased)."""
        a, b = (stored_message({"id": i, "role": "user", "content": "x"}) for i in ("a", "b"))
        assert a is not None and b is not None
        a.metadata["k"] = 1
        assert b.metadata == {}
