"""The ``redact`` filter: the filter contract, ctxcore's rules applied, and a pipeline that never sends a secret."""

from __future__ import annotations

import json

import pytest
from ctxcore_example_redact import plugin
from ctxcore_example_redact.redact import Redact, RedactConfig
from pydantic import ValidationError

from ctxcore import (
    ContextBuilder,
    MessageCounter,
    ModelBudget,
    TextBlock,
    ai,
    human,
    system,
    tool,
)
from ctxcore.kit import REDACTED
from ctxcore.testing import fresh_host
from ctxcore.testing.contracts import FilterContract

OPENAI_KEY = "sk-proj-4f9a8b7c6d5e4f3a2b1c0d9e"
BEARER = "Bearer eyJhbGciOiJIUzI1NiJ9.c2VjcmV0.sig"


class TestRedactContract(FilterContract):
    """Every check ctxcore runs on its own filters (redaction keeps ids, so output is a subsequence)."""

    def make_filter(self) -> Redact:
        return Redact(RedactConfig(extra_patterns=["result [bd]"]))


class TestRedactAllRolesContract(FilterContract):
    def make_filter(self) -> Redact:
        return Redact(RedactConfig(roles=["system", "user", "assistant", "tool"], extra_patterns=["question"]))


def _apply(f: Redact, messages: list) -> list:
    return list(f.apply(messages, FilterContract().context(None)))


def test_secrets_in_tool_results_are_replaced_by_ctxcore_rules() -> None:
    """An API key and a bearer token in a tool result become [REDACTED]; id, trust and call id stay."""
    result = tool(f"OPENAI_API_KEY={OPENAI_KEY}\nheader: Authorization: {BEARER}\nLOG_LEVEL=info", tool_call_id="c1")
    (out,) = _apply(Redact(RedactConfig()), [result])
    assert OPENAI_KEY not in out.text and "eyJhbGciOiJIUzI1NiJ9" not in out.text
    assert out.text == f"OPENAI_API_KEY={REDACTED}\nheader: Authorization: {REDACTED}\nLOG_LEVEL=info"
    assert out.id == result.id and out.trust == "untrusted" and out.tool_call_id == "c1"


def test_text_blocks_and_clean_messages() -> None:
    """Secrets in text blocks are redacted block by block; a clean message is returned as the same object."""
    clean = human("nothing secret here")
    blocks = human([TextBlock(text=f"key {OPENAI_KEY}"), TextBlock(text="plain")])
    out = _apply(Redact(RedactConfig()), [clean, blocks])
    assert out[0] is clean
    assert [b.text for b in out[1].content] == [f"key {REDACTED}", "plain"]


def test_tool_call_arguments_by_key_name_and_pattern() -> None:
    """Tool-call arguments are redacted by key name (also extra names) and by value pattern; clean calls are untouched."""
    call = ai(tool_calls=[{"id": "c1", "name": "login", "arguments": {"user": "ada", "password": "hunter2", "pin": "8812",
                                                                      "note": f"use {OPENAI_KEY}"}}])
    (out,) = _apply(Redact(RedactConfig(extra_key_names=["pin"])), [call])
    assert json.loads(out.tool_calls[0].arguments) == {"user": "ada", "password": REDACTED, "pin": REDACTED,
                                                      "note": f"use {REDACTED}"}
    untouched = ai(tool_calls=[{"id": "c2", "name": "read", "arguments": {"path": "a.py"}}])
    assert _apply(Redact(RedactConfig()), [untouched])[0] is untouched


def test_extra_patterns_and_roles() -> None:
    """Extra patterns apply only to the configured roles."""
    msgs = [human("licence ACME-493027"), tool("licence ACME-493027", tool_call_id="c")]
    out = _apply(Redact(RedactConfig(extra_patterns=["ACME-[0-9]{6}"], roles=["tool"])), msgs)
    assert [m.text for m in out] == ["licence ACME-493027", f"licence {REDACTED}"]


def test_protected_messages_are_never_rewritten() -> None:
    """A system message is never rewritten, even when its role is listed."""
    rule = system(f"deploy with {OPENAI_KEY}")
    assert _apply(Redact(RedactConfig(roles=["system"])), [rule])[0] is rule


def test_a_bad_pattern_is_a_config_error() -> None:
    """An extra pattern that is not a regular expression is refused when the config is validated."""
    with pytest.raises(ValidationError, match="not a regular expression"):
        RedactConfig(extra_patterns=["ACME-[0-9"])


def test_a_secret_in_a_tool_result_never_reaches_the_built_request() -> None:
    """Through the real plugin registration, a builder with a budget, and both wire formats."""
    host = fresh_host(("ctxcore-example-redact", plugin))
    redact = host.registry.get("filter", "redact").create({"extra_key_names": ["pin"]})
    history = [
        human("read the env file"),
        ai(tool_calls=[{"id": "c1", "name": "read_file", "arguments": {"path": ".env", "pin": "8812"}}]),
        tool(f"OPENAI_API_KEY={OPENAI_KEY}", tool_call_id="c1"),
        ai("done"),
    ]

    class History:
        def get_messages(self, state, runtime):
            return history

    class Chars(MessageCounter):
        name = "chars/4"

        def count_text(self, text: str) -> int:
            return -(-len(text) // 4)

    built = ContextBuilder([History()], [redact], Chars(), budget=ModelBudget(context_window=4000)).build({})
    wire = json.dumps([built.to_openai(), built.to_anthropic(), built.report.to_dict()], ensure_ascii=False)
    assert OPENAI_KEY not in wire and "8812" not in wire
    assert wire.count(REDACTED) >= 2
    assert any("redacted secrets in 2 message(s)" in n for n in built.report.notes)
