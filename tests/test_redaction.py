"""Secret redaction rules (ctxcore.redaction): by key name and by value pattern."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from ctxcore.redaction import REDACTED, Redactor, is_secret_key, redact, redact_text

CANARIES = [
    "sk-proj-CANARY1234567890abcdef",
    "sk-ant-api03-CANARYxyz_0123456789",
    "Bearer eyJhbGciOiJIUzI1NiJ9.CANARY.sig",
    "AIzaSyCANARY0123456789abcdefghijklm",
    "ghp_CANARY0123456789abcdefghijkl",
    "xoxb-1234567890-CANARY",
    "AKIAIOSFODNN7EXAMPLE",
]


def test_secret_key_names() -> None:
    for name in ("api_key", "OPENAI_API_KEY", "X-Api-Key", "GITHUB_TOKEN", "client_secret", "password", "db_passwd",
                 "Authorization", "aws_credentials", "key", "Cookie"):
        assert is_secret_key(name), name
    for name in ("total_tokens", "max_tokens", "tool_tokens", "keys", "event", "model", "tokens", 3, None):
        assert not is_secret_key(name), name


def test_value_patterns_replaced_in_place() -> None:
    for canary in CANARIES:
        text = f"request failed: header was {canary} (retrying)"
        out = redact_text(text)
        assert "CANARY" not in out and "AKIAIOSFODNN7EXAMPLE" not in out, out
        assert out.startswith("request failed: header was ") and out.endswith(" (retrying)")
    assert redact_text("postgresql://alice:s3cr3t@db:5432/app") == f"postgresql://{REDACTED}@db:5432/app"
    assert redact_text("a skeleton sk-short and Bearer x") == "a skeleton sk-short and Bearer x"  # too short to be keys


def test_nested_values() -> None:
    event = {"event": "call", "headers": {"Authorization": "anything at all"}, "config": [{"api_key": 123}],
             "note": ("see sk-abcdefghijklmnop",), "total_tokens": 812}
    out = redact(event)
    assert out == {"event": "call", "headers": {"Authorization": REDACTED}, "config": [{"api_key": REDACTED}],
                   "note": (f"see {REDACTED}",), "total_tokens": 812}
    assert event["headers"] == {"Authorization": "anything at all"}  # the input is not modified


def test_extended_rules() -> None:
    r = Redactor().extended(key_names=["session_id"], value_patterns=[r"INTERNAL-\d{6}"])
    assert r.value({"Session-Id": "abc", "x": "id INTERNAL-123456 here"}) == {"Session-Id": REDACTED, "x": f"id {REDACTED} here"}
    assert not is_secret_key("session_id")  # the defaults are unchanged


@given(prefix=st.text(max_size=30), suffix=st.text(max_size=30), body=st.from_regex(r"[A-Za-z0-9]{20,40}", fullmatch=True))
def test_a_key_never_survives_whatever_surrounds_it(prefix: str, suffix: str, body: str) -> None:
    secret = f"sk-{body}"
    out = redact_text(f"{prefix} {secret} {suffix}")
    assert secret not in out
    assert not re.search(re.escape(body), out.replace(prefix, "").replace(suffix, ""))
