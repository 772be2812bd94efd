"""Tests for ctxcore-providers: static_prompt and history."""

from __future__ import annotations

import pytest
from ctxcore_providers import History, StaticPrompt
from ctxcore_providers.history import private_copy
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxcore import Message, human


class TestStaticPrompt:
    def test_one_protected_trusted_system_message(self) -> None:
        """The prompt is a trusted system message in the protected zone."""
        [m] = StaticPrompt("You are terse.").get_messages({}, {})
        assert (m.role, m.content, m.zone, m.trust) == ("system", "You are terse.", "protected", "trusted")

    def test_identical_across_builds(self) -> None:
        """Every call returns the same message, id included (stable cache prefix)."""
        p = StaticPrompt("x")
        assert p.get_messages({}, {})[0] is p.get_messages({"messages": []}, {})[0]

    def test_empty_text_rejected(self) -> None:
        """An empty prompt is a configuration mistake."""
        with pytest.raises(ValueError):
            StaticPrompt("")


class TestHistory:
    def test_reads_openai_dicts_and_messages(self) -> None:
        """Dicts are converted; Message objects pass through untouched."""
        own = human("kept as is")
        out = History().get_messages({"messages": [{"role": "user", "content": "hi"}, own]}, {})
        assert out[0].to_openai() == {"role": "user", "content": "hi"} and out[1] is own

    def test_ids_stable_across_builds(self) -> None:
        """The same conversation yields the same ids; different positions differ."""
        state = {"messages": [{"role": "user", "content": "same"}, {"role": "user", "content": "same"}]}
        a, b = History().get_messages(state, {}), History().get_messages(state, {})
        assert [m.id for m in a] == [m.id for m in b]
        assert a[0].id != a[1].id

    def test_custom_state_key_and_missing_key(self) -> None:
        """state_key selects the list; an absent key means no history."""
        assert History("chat").get_messages({"chat": [{"role": "user", "content": "x"}]}, {})[0].content == "x"
        assert History().get_messages({}, {}) == []

    @pytest.mark.parametrize(
        "value, match",
        [
            ("not a list", r"state\['messages'\] must be a list"),
            ([42], r"state\['messages'\]\[0\] is a int"),
            ([{"role": "user", "content": "ok"}, {"role": "tool", "content": "x"}], r"state\['messages'\]\[1\]: .*tool_call_id"),
        ],
    )
    def test_bad_state_names_the_item(self, value, match) -> None:
        """Invalid history raises ValueError pointing at the key and index."""
        with pytest.raises(ValueError, match=match):
            History().get_messages({"messages": value}, {})

    def test_tool_results_stay_untrusted(self) -> None:
        """Tool output read from history is untrusted."""
        msgs = [{"role": "assistant", "content": None, "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "c", "content": "output"}]
        out = History().get_messages({"messages": msgs}, {})
        assert isinstance(out[-1], Message) and out[-1].role == "tool" and out[-1].trust == "untrusted"


class TestHistoryReuse:
    def test_unchanged_items_reuse_their_messages(self) -> None:
        """A second call on an equal conversation returns the very same Message objects."""
        h = History()
        state = {"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]}
        first = h.get_messages(state, {})
        again = h.get_messages({"messages": [dict(d) for d in state["messages"]] + [{"role": "user", "content": "c"}]}, {})
        assert again[0] is first[0] and again[1] is first[1] and again[2].content == "c"

    def test_dict_mutated_in_place_is_reconverted(self) -> None:
        """Editing a stored dict in place is noticed: no stale message is served."""
        h = History()
        item = {"role": "user", "content": "before"}
        h.get_messages({"messages": [item]}, {})
        item["content"] = "after"
        [m] = h.get_messages({"messages": [item]}, {})
        assert m.content == "after"

    def test_nested_edit_in_place_is_reconverted(self) -> None:
        """An edit deep inside a guarded dict (a tool call's arguments) is noticed too."""
        h = History()
        call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        item = {"role": "assistant", "content": None, "tool_calls": [call]}
        h.get_messages({"messages": [{"role": "user", "content": "go"}, item]}, {})
        call["function"]["arguments"] = '{"x": 1}'
        out = h.get_messages({"messages": [{"role": "user", "content": "go"}, item]}, {})
        [planned] = [m for m in out if m.tool_calls]
        assert planned.tool_calls[0].arguments == '{"x": 1}'


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=12,
)


@settings(max_examples=200, deadline=None)
@given(_JSON)
def test_private_copy_equals_and_shares_nothing_mutable(value: object) -> None:
    """The guard's copy equals the original, and no dict or list of the original is inside it."""
    copied = private_copy(value)
    assert copied == value

    def containers(v: object) -> list[object]:
        if isinstance(v, dict):
            return [v, *(c for x in v.values() for c in containers(x))]
        if isinstance(v, list):
            return [v, *(c for x in v for c in containers(x))]
        return []

    originals = {id(c) for c in containers(value)}
    assert not originals & {id(c) for c in containers(copied)}


# ------------------------------------------------------------------ contracts
from ctxcore.testing.contracts import ProviderContract  # noqa: E402

# Every behaviour here holds on the reference path and on the fast path (conftest.history_path).
pytestmark = pytest.mark.usefixtures("history_path")


class TestStaticPromptContract(ProviderContract):
    """static_prompt passes the provider contract."""

    def make_provider(self) -> StaticPrompt:
        return StaticPrompt("You are a careful agent.")


class TestHistoryContract(ProviderContract):
    """history passes the provider contract."""

    def make_provider(self) -> History:
        return History()
