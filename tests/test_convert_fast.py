"""The fast paths of the Anthropic and Responses converters equal their validating paths, message for message.

:func:`ctxcore.messages_from_anthropic` and :func:`ctxcore.messages_from_responses`
build plain items without pydantic validation; the validating path
(``_validated_messages`` in each module) is kept as the reference and takes
everything else. These properties hold the two equal on generated items, odd
values included: the same messages (fields and fields-set; ids are random on
both sides), or the same error. The history provider over such items gives the
same messages, ids and errors as with the validating converters.
"""

from __future__ import annotations

import math
import zlib
from typing import Any

import pytest
from ctxcore_providers.history import History, ids, provider, standins
from ctxcore_providers.history.formats import is_call, item_format
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxcore import Message, messages_from_anthropic, messages_from_responses
from ctxcore.model import anthropic_io, responses_io

SETTINGS = settings(max_examples=400, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
# The history properties hold on the reference path and on the fast path (conftest.history_path).
pytestmark = pytest.mark.usefixtures("history_path")

# ------------------------------------------------------------------ values
def _mostly(usual: st.SearchStrategy[Any], *rare: st.SearchStrategy[Any], odds: int = 12) -> st.SearchStrategy[Any]:
    """``usual``, and one of ``rare`` about once in ``odds`` draws (most generated items convert; some fail)."""
    return st.integers(0, odds - 1).flatmap(lambda k: st.one_of(*rare) if k == 0 else usual)


_odd = st.one_of(st.none(), st.integers(), st.floats(allow_nan=True), st.booleans(), st.just([]), st.just({}),
                 st.just(("a",)), st.builds(object))
_text = st.one_of(st.text(max_size=12), st.sampled_from(["NaN", "Infinity", "x" * 200, "\x00\ud800", "é"]))
_json = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), _text),
                     lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(_text, inner, max_size=3)),
                     max_leaves=6)
_maybe_odd_text = _mostly(_text, _odd)


def _with_extras(block: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[Any]:
    """A block, sometimes with cache_control or an unknown key."""
    extras = st.dictionaries(st.sampled_from(["cache_control", "citations", "extra"]),
                             st.one_of(st.just({"type": "ephemeral"}), _odd), max_size=2)
    return st.builds(lambda b, e: {**b, **e}, block, extras)


# ------------------------------------------------------------------ Anthropic items
_a_text = _with_extras(st.fixed_dictionaries({"type": st.just("text"), "text": _maybe_odd_text}))
_a_tool_use = _with_extras(st.fixed_dictionaries(
    {"type": st.just("tool_use"), "id": _maybe_odd_text, "name": _maybe_odd_text},
    optional={"input": st.one_of(st.dictionaries(_text, _json, max_size=3), _json, _odd)}))
_a_image = st.fixed_dictionaries({"type": st.just("image"), "source": st.one_of(
    st.fixed_dictionaries({"type": st.just("base64"), "media_type": st.just("image/png"), "data": _text}),
    st.fixed_dictionaries({"type": st.just("url"), "url": _text}), _odd)})
_a_document = st.fixed_dictionaries({"type": st.just("document"), "source": st.one_of(
    st.fixed_dictionaries({"type": st.just("base64"), "media_type": st.just("application/pdf"), "data": _text}),
    st.fixed_dictionaries({"type": st.just("file"), "file_id": _text}))}, optional={"title": _maybe_odd_text})
_a_part = _mostly(_a_text, _a_image, _odd, st.just({"type": "text"}), st.just({"no": "type"}))
_a_tool_result = _with_extras(st.fixed_dictionaries(
    {"type": st.just("tool_result"), "tool_use_id": _mostly(st.sampled_from(["toolu_1", "toolu_2", "é" * 3]), _text, _odd)},
    optional={"content": _mostly(st.one_of(_text, st.lists(_a_part, max_size=3)), _odd),
              "is_error": st.one_of(st.booleans(), _odd)}))
_a_thinking = st.one_of(st.fixed_dictionaries({"type": st.just("thinking"), "thinking": _text, "signature": _text}),
                        st.fixed_dictionaries({"type": st.just("redacted_thinking"), "data": _text}))
_a_usual = st.one_of(_a_text, _a_tool_use, _a_tool_result)
_a_block = _mostly(_a_usual, _a_thinking, _a_image, _a_document, _odd, st.just({"type": "server_tool_use"}),
                   st.just({"type": 3}), odds=4)
# a user turn: its tool results first, then other blocks (the order the API requires)
_a_user_blocks = st.builds(lambda results, rest: results + rest, st.lists(_a_tool_result, max_size=3),
                           st.lists(_mostly(_a_text, _a_image, _a_document), max_size=2))
_a_assistant_blocks = st.lists(_mostly(st.one_of(_a_text, _a_tool_use), _a_thinking, odds=6), max_size=4)
anthropic_items = _mostly(
    st.one_of(st.fixed_dictionaries({"role": st.just("user"), "content": st.one_of(_text, _a_user_blocks, _a_user_blocks)}),
              st.fixed_dictionaries({"role": st.just("assistant"), "content": st.one_of(_text, _a_assistant_blocks)})),
    st.fixed_dictionaries(
        {"role": st.one_of(st.sampled_from(["user", "assistant"]), st.sampled_from(["user", "assistant", "system", "tool"]), _odd)},
        optional={"content": st.one_of(_text, st.lists(_a_block, max_size=5), _odd)}), odds=4)

# ------------------------------------------------------------------ Responses items
_r_part = st.one_of(
    st.fixed_dictionaries({"type": st.sampled_from(["input_text", "output_text"]), "text": _maybe_odd_text}),
    st.fixed_dictionaries({"type": st.just("refusal"), "refusal": _maybe_odd_text}),
    st.fixed_dictionaries({"type": st.just("input_image"), "image_url": _maybe_odd_text},
                          optional={"detail": st.sampled_from(["auto", "low", "odd"])}),
    st.fixed_dictionaries({"type": st.just("input_file")}, optional={"file_id": _text, "filename": _maybe_odd_text}),
    _odd, st.just({"type": ["unhashable"]}), st.just({"type": "text", "text": "chat part"}))
_r_text_part = st.fixed_dictionaries({"type": st.sampled_from(["input_text", "output_text"]), "text": _text})
_r_content = st.one_of(_text, _text, st.none(), st.lists(_mostly(_r_text_part, _r_part, odds=4), max_size=3), _odd)
_r_message = st.fixed_dictionaries(
    {"role": _mostly(st.sampled_from(["user", "assistant", "system"]), st.sampled_from(["developer", "tool"]), _odd)},
    optional={"type": st.just("message"), "content": _r_content})
_r_call = st.fixed_dictionaries({"type": st.just("function_call"), "call_id": _mostly(st.one_of(_text, st.just("call_1")), _odd),
                                 "name": _maybe_odd_text}, optional={"arguments": _mostly(_text, st.just('{"a": NaN}'), _odd, odds=6)})
_r_output = st.fixed_dictionaries({"type": st.just("function_call_output"),
                                   "call_id": _mostly(st.one_of(st.just("call_1"), _text), _odd)},
                                  optional={"output": _r_content})
_r_usual = st.one_of(_r_message, _r_call, _r_output, st.just({"type": "reasoning", "summary": []}))
_r_item = _mostly(_r_usual, st.just({"type": "item_reference", "id": "x"}), _odd, odds=20)
responses_items = st.lists(_r_item, max_size=6)


# ------------------------------------------------------------------ comparison
def _outcome(convert: Any, value: Any) -> Any:
    """What a conversion gives, comparable across runs: each message's dump and fields-set (not its random id), or the error."""
    try:
        made = convert(value)
    except Exception as exc:  # noqa: BLE001  (the error itself is what is compared)
        return ("error", type(exc).__name__, str(exc))
    return ("ok", [_shape(m) for m in made])


def _shape(m: Message) -> Any:
    dump = m.model_dump()
    del dump["id"]
    blocks = () if m.content is None or isinstance(m.content, str) else m.content
    return (_nan_safe(dump), sorted(m.model_fields_set),
            [sorted(b.model_fields_set) for b in blocks], [sorted(c.model_fields_set) for c in m.tool_calls])


def _nan_safe(value: Any) -> Any:
    """NaN made comparable (NaN != NaN): a dump holding one is otherwise never equal to itself."""
    if isinstance(value, float) and math.isnan(value):
        return "<nan>"
    if isinstance(value, dict):
        return {k: _nan_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_nan_safe(v) for v in value]
    return value


class TestAnthropicFastPath:
    @SETTINGS
    @given(anthropic_items)
    def test_equals_the_validating_path(self, item: dict[str, Any]) -> None:
        """Every generated Anthropic message converts to the validating path's messages, or fails with its error."""
        assert _outcome(messages_from_anthropic, item) == _outcome(anthropic_io._validated_messages, item)

    def test_plain_turns_take_the_fast_path(self) -> None:
        """The usual blocks (text, tool_use, tool_result with text) are built by the fast path, not validated."""
        turns = [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [{"type": "text", "text": "a"}, {"type": "tool_use", "id": "t1", "name": "f", "input": {"x": 1}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "r"}],
                                          "is_error": True, "cache_control": {"type": "ephemeral"}}, {"type": "text", "text": "next"}]},
        ]
        for turn in turns:
            assert anthropic_io._plain_messages(turn) is not None
            assert _outcome(messages_from_anthropic, turn) == _outcome(anthropic_io._validated_messages, turn)

    def test_provenance_takes_the_validating_path(self) -> None:
        """Provenance (an explicit id, a source) is the validating path's: the fast path is for bare conversions."""
        made = messages_from_anthropic({"role": "user", "content": "hi"}, id="m1", source="s")
        assert (made[0].id, made[0].source, made[0].model_fields_set) == ("m1", "s", {"id", "role", "content", "tool_calls", "metadata", "source"})


class TestResponsesFastPath:
    @SETTINGS
    @given(responses_items)
    def test_equals_the_validating_path(self, items: list[Any]) -> None:
        """Every generated list of Responses items converts to the validating path's messages, or fails with its error."""
        assert _outcome(messages_from_responses, items) == _outcome(responses_io._validated_messages, items)

    def test_plain_items_take_the_fast_path(self) -> None:
        """Messages, calls and call outputs are built by the fast path, not validated; reasoning takes the checking path."""
        items = [{"role": "system", "content": "s"}, {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "q"}]},
                 {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
                 {"type": "function_call", "call_id": "c2", "name": "g"}, {"type": "function_call_output", "call_id": "c1", "output": "r"}]
        assert responses_io._plain_messages(items) is not None
        assert _outcome(messages_from_responses, items) == _outcome(responses_io._validated_messages, items)
        assert responses_io._plain_messages([*items[:2], {"type": "reasoning", "summary": []}, *items[2:]]) is None


# ------------------------------------------------------------------ the history provider
def _built(items: list[Any]) -> Any:
    """The history's messages over ``items`` (dumps, ids included, and fields-sets), or its error."""
    try:
        built = History().get_messages({"messages": items}, {})
        return ("ok", [(_nan_safe(m.model_dump()), sorted(m.model_fields_set)) for m in built])
    except Exception as exc:  # noqa: BLE001  (the error itself is what is compared)
        return ("error", type(exc).__name__, str(exc))


_mixed = st.lists(st.one_of(anthropic_items, _r_item, st.fixed_dictionaries({"role": st.just("user"), "content": _text})), max_size=8)


class TestHistoryOverFastPaths:
    @SETTINGS
    @given(_mixed)
    def test_same_messages_ids_and_errors_as_the_validating_converters(self, items: list[Any]) -> None:
        """The history over Anthropic, Responses and chat items builds what it built with the validating converters."""
        fast = _built(items)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(provider, "messages_from_anthropic", anthropic_io._validated_messages)
            patch.setattr(provider, "messages_from_responses", responses_io._validated_messages)
            reference = _built(items)
        assert fast == reference


# ------------------------------------------------------------------ the history's lazy ids
def _old_history(items: list[Any], key: str = "messages") -> list[Message]:
    """What the history stored before ids were made lazily: every item converted and id-stamped when seen.

    The old conversion, written out: a Message as it is; a chat dict through
    ``from_openai`` with its stable id; an Anthropic message or Responses item
    through the validating converter, each message re-id'd ``<id>``,
    ``<id>.1``...; a run of Responses calls as one assistant message whose id
    checksums the run's items' readings.
    """
    out: list[Message] = []
    i = 0
    while i < len(items):
        item = items[i]
        if is_call(item):
            j = i
            while j < len(items) and is_call(items[j]):
                j += 1
            made = responses_io._validated_messages(items[i:j])[0]
            reading = "\x1d".join(ids.stable_id("", 0, x) for x in items[i:j])
            out.append(made.model_copy(update={"id": f"{key}:{i}:{zlib.crc32(reading.encode()):08x}"}))
            i = j
            continue
        if not isinstance(item, dict):
            raise ValueError("not a message dict")
        kind = item_format(item)
        if kind == "openai":
            out.append(Message.from_openai(item, id=ids.stable_id(key, i, item)))
        else:
            made = anthropic_io._validated_messages(item) if kind == "anthropic" else responses_io._validated_messages([item])
            base = ids.stable_id(key, i, item)
            out.extend(m.model_copy(update={"id": f"{base}.{k}" if k else base}) for k, m in enumerate(made))
        i += 1
    return out


_chat_parts = st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant"]),
                                     "content": st.lists(st.fixed_dictionaries({"type": st.just("text"), "text": _text}), max_size=2)})
_convertible = st.lists(st.one_of(anthropic_items, _r_item, _chat_parts,
                                  st.fixed_dictionaries({"role": st.just("user"), "content": _text})), max_size=8)


class TestLazyIds:
    @SETTINGS
    @given(_convertible)
    def test_the_history_stores_what_it_stored_when_ids_were_made_eagerly(self, items: list[Any]) -> None:
        """Unannotated, the history's messages (dumps, ids, fields-sets) are the old eager conversion's, errors aside."""
        try:
            expected = [(_nan_safe(m.model_dump()), sorted(m.model_fields_set)) for m in _old_history(items)]
        except (ValueError, TypeError, KeyError):
            with pytest.raises(ValueError):
                History(annotate=False, neutralize_markers=False).get_messages({"messages": items}, {})
            return
        built = History(annotate=False, neutralize_markers=False).get_messages({"messages": items}, {})
        assert [(_nan_safe(m.model_dump()), sorted(m.model_fields_set)) for m in built] == expected

    @SETTINGS
    @given(_convertible)
    def test_every_message_id_is_found_and_no_other(self, items: list[Any]) -> None:
        """``has_id`` finds each built message's id (lazy or not) and refuses near misses of it."""
        try:
            built = History().get_messages({"messages": items}, {})
        except ValueError:
            return
        ids = [m.id for m in built]
        fresh = History().get_messages({"messages": items}, {})  # asked before any message is read
        assert all(fresh.has_id(i) for i in ids)  # type: ignore[attr-defined]
        for i in ids:
            assert not fresh.has_id(i + ".9") and not fresh.has_id(i[:-1])  # type: ignore[attr-defined]

    def test_an_id_is_made_from_the_dict_as_it_was_stored(self) -> None:
        """A stored Anthropic dict edited in place later (older than the guard) keeps the id and message it was stored with."""
        turns = [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{k}", "content": "r" * 300}]} if k % 2 == 0 else
                 {"role": "assistant", "content": [{"type": "tool_use", "id": f"t{k + 1}", "name": "f", "input": {"n": k}}]}
                 for k in range(19)]
        turns[0] = {"role": "user", "content": [{"type": "text", "text": "a" * 300}, {"type": "text", "text": "b"}]}
        expected = [m.id for m in _old_history(turns)]
        history = History(annotate=False, neutralize_markers=False)
        state = {"messages": turns}
        history.get_messages(state, {})  # stored, no id read
        turns[0]["content"][0]["text"] = "z" * 300  # an in-place edit, far behind the guard
        turns.append({"role": "user", "content": "next"})
        built = history.get_messages(state, {})
        assert [m.id for m in built][:-1] == expected
        assert built[0].content[0].text == "a" * 300  # type: ignore[union-attr]

    def test_the_fast_paths_leave_ids_to_be_made_when_read(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """A cold build of Anthropic items computes no stable id before the messages are read."""
        calls = {"n": 0}
        real = ids.stable_id

        def counting(*args: Any) -> str:
            calls["n"] += 1
            return real(*args)

        monkeypatch.setattr(provider, "FAST_RUN", 0)  # the fast path at this size
        monkeypatch.setattr(provider, "stable_id", counting)
        monkeypatch.setattr(standins, "stable_id", counting)
        items = [{"role": "user", "content": [{"type": "text", "text": "q"}, {"type": "text", "text": "r"}]},
                 {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}]},
                 {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]}]
        built = History(annotate=False).get_messages({"messages": items}, {})
        assert calls["n"] == 0
        assert [m.id for m in built] == [m.id for m in _old_history(items)]
