"""No poison messages: a bad *past* message is repaired or dropped (and reported); only the current turn can fail a build.

Also: tool-call arguments that are JSON only to Python (``NaN``) are repaired
when the call is made, so no request body carries one. The property test draws
histories with bad messages anywhere before the current turn; quick profile 150
examples, ``CTXCORE_THOROUGH=1`` 3,000 (docs/security.md).
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxcore import InvalidHistory, Pipeline, ai, to_anthropic
from ctxcore.model.messages import ToolCall

EXAMPLES = 3000 if os.environ.get("CTXCORE_THOROUGH") == "1" else 150


def call(i: str, arguments: str = "{}", *, twice: bool = False) -> dict[str, Any]:
    one = {"id": i, "type": "function", "function": {"name": "f", "arguments": arguments}}
    return {"role": "assistant", "content": None, "tool_calls": [one, one] if twice else [one]}


def result(i: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": i, "content": "ok"}


GOOD = [[{"role": "user", "content": "question"}, {"role": "assistant", "content": "answer"}],
        [{"role": "user", "content": "read it"}, call("g1"), result("g1"), {"role": "assistant", "content": "done"}]]
BAD = [
    [{"role": "user", "content": ""}], [{"role": "user", "content": "   \n"}], [{"role": "user", "content": None}],
    [{"role": "user", "content": []}], [{"role": "assistant", "content": []}], [{"role": "assistant", "content": None}],
    [{"role": "assistant", "content": ""}], [call("b1", twice=True), result("b1")],
    [call("b2", twice=True), result("b2"), result("b2")], [call("b3", '{"a": NaN}'), result("b3")],
    [call("b4", "not json"), result("b4")], [call("b5", "[1, 2]"), result("b5")],
    [{"role": "user", "content": [{"type": "text", "text": " "}]}],
]


def pipeline(host: Any, provider: str, sanitize: str) -> Pipeline:
    return Pipeline.from_dict({"version": 1, "model": {"context_window": 100_000},
                               "target": {"provider": provider, "sanitize": sanitize}, "providers": [{"type": "history"}]},
                              host=host)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(st.sampled_from(GOOD + BAD), max_size=8), provider=st.sampled_from(["openai", "anthropic"]),
       sanitize=st.sampled_from(["drop", "backfill"]))
def test_bad_past_messages_never_fail_a_build(host: Any, parts: list[list[dict[str, Any]]], provider: str, sanitize: str) -> None:
    """Any mix of bad past messages before a good current turn builds, with strict-JSON bodies and a note per drop."""
    messages = [dict(m) for part in parts for m in part]
    for n, m in enumerate(messages):  # unique ids across parts
        if m.get("tool_calls"):
            m["tool_calls"] = [{**c, "id": f"{c['id']}_{n}"} for c in m["tool_calls"]]
        elif m["role"] == "tool":
            previous = next(k for k in range(n - 1, -1, -1) if messages[k].get("tool_calls"))
            m["tool_call_id"] = f"{m['tool_call_id']}_{previous}"
    messages.append({"role": "user", "content": "the current question"})
    built = pipeline(host, provider, sanitize).build({"messages": messages})
    body = built.to_anthropic() if provider == "anthropic" else built.to_openai()
    json.dumps(body, allow_nan=False)  # raises on NaN or Infinity
    noted = " ".join(built.report.notes)
    for record in built.report.dropped:  # every message the repair dropped is reported with its reason
        if record.by == "sanitize" and f"sanitize dropped past message {record.id}:" not in noted:
            assert built.report.warnings, record  # dropped by the pairing sanitize, which warns instead
    assert built.messages[-1].text == "the current question"


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_only_the_current_turn_fails_a_build(host: Any, provider: str) -> None:
    """A blank *current* user message is still refused: it is the caller's to fix."""
    messages = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}, {"role": "user", "content": None}]
    with pytest.raises(Exception) as info:
        pipeline(host, provider, "drop").build({"messages": messages})
    assert isinstance(info.value, InvalidHistory) or isinstance(info.value.__cause__, (InvalidHistory, ValueError))


def test_a_repair_is_reported_with_its_reason(host: Any) -> None:
    """A duplicated call id in the past is repaired (the repeat dropped) and the report says so."""
    messages = [{"role": "user", "content": "a"}, call("d", twice=True), result("d"), {"role": "assistant", "content": "x"},
                {"role": "user", "content": "now"}]
    built = pipeline(host, "openai", "backfill").build({"messages": messages})
    calls = [m for m in built.to_openai() if m.get("tool_calls")]
    assert len(calls) == 1 and len(calls[0]["tool_calls"]) == 1
    assert any("tool call id 'd' repeated" in n for n in built.report.notes)


class TestStrictArguments:
    def test_nan_in_arguments_is_repaired_at_ingestion(self) -> None:
        """``NaN``/``Infinity`` in arguments become ``null`` when the call is made; words inside strings stay."""
        c = ToolCall(id="a", name="f", arguments='{"a": NaN, "b": "NaN", "c": [-Infinity]}')
        assert json.loads(c.arguments) == {"a": None, "b": "NaN", "c": [None]}

    def test_a_float_nan_argument_never_reaches_the_anthropic_body(self) -> None:
        """``ai(tool_calls=[{... "arguments": {"x": nan}}])`` renders as strict JSON for Anthropic."""
        m = ai(tool_calls=[{"id": "a", "name": "f", "arguments": {"x": float("nan")}}])
        body = to_anthropic([m])
        json.dumps(body, allow_nan=False)
        assert body["messages"][0]["content"][0]["input"] == {"x": None}

