"""``history``'s ``replay_cap``: at most N newest messages, starting on a user message; ``auto`` is nanobot's rule."""

from __future__ import annotations

import ctxcore_counters.plugin as counters_plugin
import ctxcore_providers.plugin as providers_plugin
import pytest
from ctxcore_providers import History
from ctxcore_providers.history import auto_replay_cap, replay_start
from hypothesis import given
from hypothesis import strategies as st

from ctxcore import ConfigError, Pipeline, ai, human, tool
from ctxcore.testing import fresh_host

# Every behaviour here holds on the reference path and on the fast path (conftest.history_path).
pytestmark = pytest.mark.usefixtures("history_path")


def state(turns: int) -> dict:
    msgs = []
    for t in range(turns):
        msgs += [{"role": "user", "content": f"q{t}"},
                 {"role": "assistant", "content": None,
                  "tool_calls": [{"id": f"c{t}", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
                 {"role": "tool", "tool_call_id": f"c{t}", "content": f"r{t}"},
                 {"role": "assistant", "content": f"a{t}"}]
    return {"messages": msgs}


class TestAuto:
    @pytest.mark.parametrize(("window", "cap"), [(8_000, 120), (12_000, 120), (128_000, 1280), (200_000, 2000), (1_000_000, 2000)])
    def test_rule(self, window: int, cap: int) -> None:
        """min(2000, max(120, context_window // 100))."""
        assert auto_replay_cap(window) == cap

    def test_auto_from_the_pipeline_window(self) -> None:
        """replay_cap: auto in a pipeline takes model.context_window."""
        host = fresh_host(("providers", providers_plugin), ("counters", counters_plugin))
        pipe = Pipeline.from_string("version: 1\nmodel: {context_window: 12000}\nproviders:\n  - {type: history, replay_cap: auto}\n",
                                    host=host)
        texts = [m.text for m in pipe.build(state(40)).messages if m.role != "system"]
        assert len(texts) <= 120 and texts[0].startswith("q")

    def test_auto_outside_a_pipeline_needs_a_window(self) -> None:
        """Without a pipeline, auto needs context_window= (or a number)."""
        with pytest.raises(ValueError, match="context window"):
            History(replay_cap="auto")
        assert History(replay_cap="auto", context_window=500_000).replay_cap == 2000

    @pytest.mark.parametrize("bad", [0, -3, "all", True])
    def test_bad_values(self, bad: object) -> None:
        """A cap that is not >= 1 or 'auto' is a config error naming the option."""
        host = fresh_host(("providers", providers_plugin), ("counters", counters_plugin))
        with pytest.raises(ConfigError, match="replay_cap"):
            Pipeline.from_dict({"version": 1, "providers": [{"type": "history", "replay_cap": bad}]}, host=host)


class TestCap:
    def test_starts_on_a_user_message_and_keeps_units(self) -> None:
        """A cap of 6 over 4-message turns replays the last turn plus nothing that starts mid-turn."""
        out = History(annotate=False, replay_cap=6).get_messages(state(5), {})
        assert [m.text or m.role for m in out] == ["q4", "assistant", "r4", "a4"]

    def test_no_cap_or_short_history_is_unchanged(self) -> None:
        """Under the cap (or without one) the whole history is replayed."""
        assert len(History(annotate=False, replay_cap=100).get_messages(state(5), {})) == 20
        assert len(History(annotate=False).get_messages(state(5), {})) == 20

    def test_semantics_note_stays_first(self) -> None:
        """With annotation the History semantics note precedes the capped tail."""
        out = History(replay_cap=4).get_messages(state(5), {})
        assert out[0].role == "system" and "History semantics" in out[0].text and out[1].text == "q4"


@given(roles=st.lists(st.sampled_from(["user", "assistant", "tools"]), max_size=40), cap=st.integers(1, 30))
def test_replay_start_properties(roles: list[str], cap: int) -> None:
    """The start is a user message (when there is one), the tail holds no orphan result, and it is within the cap
    whenever a user message lies within the cap."""
    msgs = []
    for i, r in enumerate(roles):
        if r == "tools":
            msgs += [ai(tool_calls=[{"id": f"c{i}", "name": "f", "arguments": {}}]), tool("r", tool_call_id=f"c{i}")]
        else:
            msgs.append(human("u") if r == "user" else ai("a"))
    start = replay_start(msgs, cap)
    if any(m.role == "user" for m in msgs):
        assert msgs[start].role == "user"
    assert not msgs[start:] or msgs[start].role != "tool"
    if any(m.role == "user" for m in msgs[max(len(msgs) - cap, 0):]):
        assert len(msgs) - start <= cap
