"""The ``history`` provider reads Anthropic dicts and OpenAI Responses items as it reads chat dicts.

Each form is converted once, when first seen, with ids that follow position and
content; a next turn converts only what was appended (the growth proof of
docs/providers.md, "history"). The reused-equals-fresh property over every form
is ``tests/test_build_cost.py::test_incremental_builds_equal_builds_from_scratch``.
"""

from __future__ import annotations

from typing import Any

import pytest
from ctxcore_providers import History

from ctxcore import ProviderBlock, messages_from_responses
from ctxcore.model.messages import Message

# Every behaviour here holds on the reference path and on the fast path (conftest.history_path).
pytestmark = pytest.mark.usefixtures("history_path")

CALL = {"type": "function_call", "call_id": "c1", "name": "read", "arguments": '{"p": "a.py"}'}
CALL2 = {"type": "function_call", "call_id": "c2", "name": "grep", "arguments": "{}"}


def read(provider: History, items: list[Any]) -> list[Message]:
    return list(provider.get_messages({"messages": items}, {}))


def plain(messages: list[Message]) -> list[tuple[Any, ...]]:
    return [(m.id, m.role, m.content, m.tool_call_ids, m.tool_call_id, m.trust) for m in messages]


def test_an_anthropic_user_turn_with_results_makes_one_tool_message_per_result() -> None:
    items = [
        {"role": "user", "content": "read a.py"},
        {"role": "assistant", "content": [{"type": "text", "text": "sure"}, {"type": "tool_use", "id": "t1", "name": "read", "input": {}},
                                          {"type": "tool_use", "id": "t2", "name": "read", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "one"},
                                     {"type": "tool_result", "tool_use_id": "t2", "content": [{"type": "text", "text": "two"}]},
                                     {"type": "text", "text": "and now?"}]},
    ]
    out = read(History(annotate=False), items)
    assert [(m.role, m.tool_call_id) for m in out] == [("user", None), ("assistant", None), ("tool", "t1"), ("tool", "t2"), ("user", None)]
    assert out[1].tool_call_ids == ("t1", "t2") and out[1].content == "sure"
    assert out[2].trust == "untrusted" and out[4].content == "and now?"
    assert len({m.id for m in out}) == 5  # distinct: the turn's messages are numbered


def test_responses_items_make_the_messages_to_openai_responses_renders_them_from() -> None:
    items = [
        {"role": "system", "content": "rules"},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
        {"type": "reasoning", "id": "rs_1", "summary": []},
        CALL, CALL2,
        {"type": "function_call_output", "call_id": "c1", "output": "text of a.py"},
        {"type": "function_call_output", "call_id": "c2", "output": "no match"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done", "annotations": []}]},
    ]
    out = read(History(annotate=False), items)
    assert [(m.role, m.content, m.tool_call_ids, m.tool_call_id) for m in out] == [
        ("system", "rules", (), None), ("user", "hi", (), None),
        ("assistant", (ProviderBlock(api="openai-responses", raw=items[2]),), ("c1", "c2"), None),  # reasoning kept with its calls
        ("tool", "text of a.py", (), "c1"), ("tool", "no match", (), "c2"), ("assistant", "done", (), None),
    ]
    assert [m.model_dump(exclude={"id"}) for m in messages_from_responses(items)] == [m.model_dump(exclude={"id"}) for m in out]


def test_a_call_appended_to_a_run_of_calls_joins_its_message() -> None:
    """Parallel calls may arrive one item at a time: the open run is converted again, as a fresh build would."""
    reused = History()
    items: list[Any] = [{"role": "user", "content": "go"}, CALL]
    read(reused, items)
    for more in (CALL2, {"type": "function_call_output", "call_id": "c1", "output": "1"},
                 {"type": "function_call_output", "call_id": "c2", "output": "2"}, {"role": "assistant", "content": "ok"}):
        items.append(more)
        assert plain(read(reused, items)) == plain(read(History(), items))
    assert read(reused, items)[2].tool_call_ids == ("c1", "c2")  # [note, user, assistant with both calls, ...]


def test_a_next_turn_converts_only_the_new_item_in_every_form(monkeypatch: pytest.MonkeyPatch) -> None:
    from ctxcore_providers import history as module

    converted: list[Any] = []
    real = module.History._convert

    def spy(self: History, index: int, item: Any, bulk: bool) -> Any:
        converted.append(index)
        return real(self, index, item, bulk)

    monkeypatch.setattr(module.History, "_convert", spy)
    for turn in (
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "x", "content": "r"}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
    ):
        provider, items = History(), [dict(turn) for _ in range(50)]
        read(provider, items)
        converted.clear()
        items.append(dict(turn))
        read(provider, items)
        assert converted == [50]


def test_an_in_place_edit_of_a_recent_anthropic_dict_is_noticed() -> None:
    reused = History()
    items: list[Any] = [{"role": "user", "content": "q"},
                        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}]}]
    read(reused, items)
    items[1]["content"] = [{"type": "text", "text": "no tools after all"}]
    assert plain(read(reused, items)) == plain(read(History(), items))
    assert read(reused, items)[-1].text == "no tools after all"


def test_an_item_that_cannot_be_read_names_its_place() -> None:
    """A tool result with no call id cannot be paired: the error names its place in the state and what is missing."""
    with pytest.raises(ValueError, match=r"state\['messages'\]\[1\]") as caught:
        read(History(), [{"role": "user", "content": "hi"}, {"type": "function_call_output", "output": "1"}])
    assert "call_id" in str(caught.value)


@pytest.mark.parametrize(
    ("item", "api", "raw"),
    [
        ({"type": "item_reference", "id": "x"}, "openai-responses", {"type": "item_reference", "id": "x"}),
        ({"role": "user", "content": [{"type": "tool_use", "id": "t", "name": "f"}]}, "anthropic",
         {"type": "tool_use", "id": "t", "name": "f"}),
    ],
)
def test_an_item_ctxcore_does_not_model_is_carried_whole(item: dict[str, Any], api: str, raw: dict[str, Any]) -> None:
    """A block or item ctxcore does not model is kept as its raw dict, never refused: a new API type cannot break a thread."""
    out = read(History(annotate=False), [{"role": "user", "content": "hi"}, item])
    assert out[-1].content == (ProviderBlock(api=api, raw=raw),)


def test_a_developer_message_is_read_as_the_apps_own_instruction() -> None:
    """A Responses developer message is the application's instruction, read with the system role as a system item is."""
    out = read(History(annotate=False), [{"role": "user", "content": "hi"}, {"type": "message", "role": "developer", "content": "x"}])
    assert [(m.role, m.content) for m in out] == [("user", "hi"), ("system", "x")]


def test_the_collector_paused_for_a_long_conversion_is_running_again_even_after_an_error() -> None:
    import gc

    from ctxcore_providers.history import PAUSE_GC, provider

    items: list[Any] = [{"role": "user", "content": f"m{k}"} for k in range(PAUSE_GC + 5)]
    seen: list[bool] = []
    real, real_step = provider.stand_in_run, provider.History._step

    def spy(items: Any, start: int, *args: Any) -> int:
        seen.append(gc.isenabled())
        return real(items, start, *args)

    def spy_step(self: History, items: Any, start: int, *args: Any) -> int:
        seen.append(gc.isenabled())
        return real_step(self, items, start, *args)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(provider, "stand_in_run", spy)  # the fast path's conversion
        mp.setattr(provider.History, "_step", spy_step)  # the reference path's
        read(History(), items)
        assert seen and not any(seen) and gc.isenabled()
        items.append({"role": "bogus", "content": "x"})
        with pytest.raises(ValueError, match=rf"\[{PAUSE_GC + 5}\]"):
            read(History(), items)
        assert gc.isenabled()
        gc.disable()
        try:  # a caller's own choice is kept
            read(History(), items[:-1])
            assert not gc.isenabled()
        finally:
            gc.enable()
