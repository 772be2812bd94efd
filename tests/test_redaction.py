"""Secret redaction rules (ctxcore.redaction): by key name and by value pattern."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctxcore.redaction import DEFAULT_REDACTOR, REDACTED, Redactor, is_secret_key, redact, redact_text

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


class TestRoundTwoPatterns:
    """AWS secret access keys and secret-named URL query parameters (issue 17); only the secret part is replaced."""

    KEY = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"  # AWS's documented example: 40 characters

    @pytest.mark.parametrize("text", [
        f"aws_secret_access_key = {KEY}",
        f"AWS_SECRET_ACCESS_KEY={KEY}",
        f'"SecretAccessKey": "{KEY}"',
        f"aws-secret-access-key: '{KEY}'",
    ])
    def test_aws_secret_access_key_after_its_name(self, text: str) -> None:
        """A 40-character key after an aws_secret_access_key-like name is replaced; the name stays readable."""
        out = redact_text(text)
        assert self.KEY not in out and "[REDACTED]" in out and out.lower().replace("-", "_").count("secret") == 1

    def test_forty_base64_characters_alone_are_kept(self) -> None:
        """Without the name a 40-character run is not assumed to be a key (hashes, ids and base64 data stay)."""
        assert redact_text(f"sha: {self.KEY}") == f"sha: {self.KEY}"

    @pytest.mark.parametrize(("url", "kept"), [
        ("https://api.example.com/v1?api_key=abc123&model=x", "model=x"),
        ("https://b.s3.amazonaws.com/o?X-Amz-Credential=AKID%2F1&X-Amz-Signature=f00d", "https://b.s3.amazonaws.com/o?"),
        ("wss://h/socket?access_token=eyJhbGci.x.y#frag", "#frag"),
    ])
    def test_secret_named_query_parameters(self, url: str, kept: str) -> None:
        """Query parameters named like secrets lose their value; other parameters and the rest of the URL stay."""
        out = redact_text(url)
        assert kept in out and "[REDACTED]" in out
        for secret in ("abc123", "f00d", "AKID", "eyJhbGci"):
            assert secret not in out

    def test_harmless_query_parameters_are_kept(self) -> None:
        """``?keyboard=1`` or ``&max_tokens=5`` are not secrets."""
        assert redact_text("https://h/p?keyboard=1&max_tokens=5") == "https://h/p?keyboard=1&max_tokens=5"

    def test_extension_patterns_may_name_the_secret_group(self) -> None:
        """The documented extension point: ``extended(value_patterns=...)`` with a ``secret`` group keeps the context."""
        rules = DEFAULT_REDACTOR.extended(value_patterns=[r"acme_id=(?P<secret>[0-9]{6})"])
        assert rules.text("acme_id=123456 ok") == "acme_id=[REDACTED] ok"
