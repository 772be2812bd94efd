"""The example pipeline, run by ``ctx build`` as a user would, with the plugin installed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parents[1]
SECRETS = ("sk-proj-4f9a8b7c6d5e4f3a2b1c0d9e", "hunter2-staging", "ACME-493027", "8812", "eyJhbGciOiJIUzI1NiJ9")

pytestmark = pytest.mark.integration


def ctx_build(metrics: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CTXCORE_")}
    env["CTXCORE_METRICS_FILE"] = str(metrics)
    return subprocess.run(
        [sys.executable, "-m", "ctxcore", "build", str(HERE / "pipeline.yaml"), "--state", str(HERE / "state.json"), *extra],
        capture_output=True, text=True, env=env, timeout=120, cwd=HERE,
    )


def test_the_state_holds_the_secrets() -> None:
    """The test below means something: every secret is in the input."""
    state = (HERE / "state.json").read_text()
    assert all(s in state for s in SECRETS)


def test_ctx_build_sends_no_secret_and_writes_one_metrics_line_per_build(tmp_path: Path) -> None:
    """`ctx build` with the redact filter prints no planted secret on stdout or stderr and writes one metrics line."""
    metrics = tmp_path / "metrics.jsonl"
    result = ctx_build(metrics, "--format", "json", "--explain")
    assert result.returncode == 0, result.stderr
    for secret in SECRETS:
        assert secret not in result.stdout and secret not in result.stderr, secret
    payload = json.loads(result.stdout)
    report = payload["report"]
    assert "[REDACTED]" in result.stdout
    assert any("redacted secrets in" in n for n in report["notes"])
    assert ctx_build(metrics).returncode == 0

    lines = [json.loads(line) for line in metrics.read_text().splitlines()]
    assert len(lines) == 2
    line = lines[0]
    assert line["total_tokens"] == report["total_tokens"]
    assert line["budget"] == report["budget"] == 1000
    assert line["messages"] == len(payload["messages"])
    dropped = [m for m in report["messages"] if m["fate"] == "dropped"]
    assert line["dropped"] == len(dropped) > 0
    assert line["by_source"] == report["by_source"]
    assert {k: v for k, v in lines[1].items() if k not in ("time", "pid")} == {
        k: v for k, v in line.items() if k not in ("time", "pid")}
