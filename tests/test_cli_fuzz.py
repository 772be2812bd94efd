"""CLI fuzz: any bytes as pipeline, state or transcript give exit 0, 1 or 2 with clear errors, never an exception.

Hypothesis draws inputs between "valid" and "garbage": real pipelines and states
with bytes flipped, cut or spliced in; random bytes; invalid UTF-8; deep nesting;
``NaN``; lone surrogates; unquoted YAML booleans. Each runs ``ctx pipeline
validate``, ``ctx build``, ``ctx explain`` or ``ctx replay`` in-process. Bounded:
the quick profile runs 60 examples, ``CTXCORE_THOROUGH=1`` 2,000 (docs/security.md).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxcore import Pipeline
from ctxcore.cli import cli
from ctxcore.cli._common import CliState
from ctxcore.errors import CtxError
from ctxcore.plugins.host import PluginHost
from ctxcore.testing import fresh_host

EXAMPLES = 2000 if os.environ.get("CTXCORE_THOROUGH") == "1" else 60
ROOT = Path(__file__).resolve().parents[1]
PIPELINES = [p.read_bytes() for p in sorted((ROOT / "examples").glob("*.yaml"))] + [
    b"version: 1\ntarget: {provider: anthropic, sanitize: off}\nproviders: [history]\n",
    b"version: 1\nproviders:\n  - {type: history, annotate: yes}\n  - {type: static_prompt, text: no}\n",
]
STATES = [json.dumps(s).encode() for s in (
    {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]},
    {"messages": [{"role": "user", "content": ""}, {"role": "assistant", "content": None, "tool_calls": [
        {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{\"x\": 1}"}}]},
        {"role": "tool", "tool_call_id": "a", "content": "ok"}, {"role": "user", "content": "[]"}], "tools": []},
)] + [p.read_bytes() for p in sorted((ROOT / "examples").glob("*.json"))]
SPECIAL = [b"", b"\xff\xfe\x00", b"[" * 5000, b"{\"a\":" * 3000, b'{"messages": [NaN]}', b'{"messages": "\\ud800"}',
           b'{"messages": [{"role": "user", "content": "\\udfff"}]}', b"- " * 3000, b"\x00" * 100, b"a: &a [*a]"]


@st.composite
def mutated(draw: st.DrawFn, seeds: list[bytes]) -> bytes:
    """A seed with a few bytes flipped, cut, or spliced with special input; or pure noise."""
    kind = draw(st.sampled_from(["seed", "flip", "cut", "splice", "noise", "special"]))
    if kind == "noise":
        return draw(st.binary(max_size=300))
    if kind == "special":
        return draw(st.sampled_from(SPECIAL))
    data = bytearray(draw(st.sampled_from(seeds)))
    if kind == "flip" and data:
        for _ in range(draw(st.integers(1, 8))):
            data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
    elif kind == "cut" and data:
        data = data[: draw(st.integers(0, len(data) - 1))]
    elif kind == "splice":
        at = draw(st.integers(0, len(data)))
        data[at:at] = draw(st.sampled_from(SPECIAL))[:200] + draw(st.binary(max_size=20))
    return bytes(data)


def check(result: Any, args: list[str]) -> None:
    exc, code, stderr = result.exception, result.exit_code, result.stderr
    assert exc is None or isinstance(exc, SystemExit), f"{args}: {type(exc).__name__}: {exc}"
    assert code in (0, 1, 2), (args, code, stderr)
    assert "Traceback" not in stderr and "internal error" not in stderr
    if code:
        last = stderr.strip().splitlines()[-1] if stderr.strip() else ""
        assert last.startswith(("error:", "Error:")), (args, stderr)


class Runner:
    """Invokes `ctx` in-process with the workspace plugins (a fresh per-invocation state sharing one host)."""

    def __init__(self, host: PluginHost) -> None:
        self.host = host
        self.runner = CliRunner()

    def invoke(self, args: list[str], **kwargs: Any) -> Any:
        obj = CliState()
        obj._host = self.host
        return self.runner.invoke(cli, args, obj=obj, **kwargs)


@pytest.fixture(scope="module")
def plugin_host() -> PluginHost:
    import ctxcore_counters.plugin
    import ctxcore_filters.plugin
    import ctxcore_providers.plugin

    return fresh_host(("ctxcore-providers", ctxcore_providers.plugin), ("ctxcore-filters", ctxcore_filters.plugin),
                      ("ctxcore-counters", ctxcore_counters.plugin))


@pytest.fixture
def runner(plugin_host: PluginHost) -> Runner:
    return Runner(plugin_host)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                                       HealthCheck.function_scoped_fixture])
@given(command=st.sampled_from(["validate", "build", "explain", "replay"]), pipeline=mutated(PIPELINES), data=mutated(STATES))
def test_no_input_makes_the_cli_raise(runner: Runner, tmp_path: Path, command: str, pipeline: bytes, data: bytes) -> None:
    """Whatever bytes the files hold, `ctx` exits 0, 1 or 2 and a failure ends with one `error:` line."""
    p, s = tmp_path / "p.yaml", tmp_path / "s.json"
    p.write_bytes(pipeline)
    s.write_bytes(data)
    args = {"validate": ["pipeline", "validate", str(p)], "build": ["build", str(p), "--state", str(s)],
            "explain": ["explain", str(p), "--state", str(s)], "replay": ["replay", str(s), "--pipeline", str(p)]}[command]
    check(runner.invoke(args), args)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.one_of(mutated(PIPELINES).map(lambda b: b.decode("utf-8", "replace")), st.text(max_size=200)))
def test_from_string_raises_only_ctx_errors(plugin_host: PluginHost, text: str) -> None:
    """``Pipeline.from_string`` raises a ``CtxError`` for any text, never a foreign exception."""
    try:
        Pipeline.from_string(text, host=plugin_host)
    except CtxError:
        pass


def test_stdin_for_state_and_pipeline(runner: Runner) -> None:
    """``-`` is stdin for --state (and for the pipeline); asking for stdin twice is a clear error."""
    pipeline = str(ROOT / "examples" / "coding-agent.yaml")
    ok = runner.invoke(["build", pipeline, "--state", "-"], input=STATES[0])
    assert ok.exit_code == 0, ok.stderr
    assert json.loads(ok.stdout)[-1]["content"] == "hello"
    twice = runner.invoke(["build", "-", "--state", "-"], input=PIPELINES[0])
    assert twice.exit_code == 1 and "only one input can come from stdin" in twice.stderr


def test_a_fifo_as_state_is_refused_at_once(runner: Runner, tmp_path: Path) -> None:
    """A FIFO given as --state is refused without reading (it would hang or never end)."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    result = runner.invoke(["build", str(ROOT / "examples" / "coding-agent.yaml"), "--state", str(fifo)])
    assert result.exit_code == 1 and "not a regular file" in result.stderr and "'-'" in result.stderr


def test_an_oversized_state_is_refused_before_reading(runner: Runner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A state over CTXCORE_MAX_INPUT_BYTES is refused by its size, naming the variable that raises the cap."""
    big = tmp_path / "big.json"
    big.write_bytes(b" " * 2000)
    monkeypatch.setenv("CTXCORE_MAX_INPUT_BYTES", "1000")
    result = runner.invoke(["build", str(ROOT / "examples" / "coding-agent.yaml"), "--state", str(big)])
    assert result.exit_code == 1 and "over the 1000-byte limit" in result.stderr and "CTXCORE_MAX_INPUT_BYTES" in result.stderr
