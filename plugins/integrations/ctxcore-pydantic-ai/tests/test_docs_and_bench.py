"""The pydantic-ai section of docs/integrations.md runs, the plugin declares itself, the benchmark runs."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[4]


def _docs_test_module():
    spec = importlib.util.spec_from_file_location("ctxcore_docs_code", ROOT / "tests" / "test_docs_code.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_the_docs_blocks_for_this_suite_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every block marked run-in: ctxcore-pydantic-ai runs as a reader would (and there is at least one)."""
    assert _docs_test_module().run_suite_blocks("ctxcore-pydantic-ai", tmp_path, monkeypatch) >= 1


def test_the_plugin_declares_the_integration() -> None:
    """ctx plugins list shows integration:pydantic-ai from this distribution's entry point."""
    listing = subprocess.run([sys.executable, "-m", "ctxcore", "plugins", "list", "--json"], capture_output=True,
                             text=True, check=True).stdout
    assert '"pydantic-ai"' in listing and "ctxcore_pydantic_ai:ContextCapability" in listing


def test_the_benchmark_runs_on_a_small_history() -> None:
    """bench/integration_pydantic_ai.py measures a tiny history and prints its table without writing the page."""
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "integration_pydantic_ai.py"), "--size", "60", "--turns", "2",
                          "--no-write"], capture_output=True, text=True, check=True).stdout
    assert "conversion per turn" in out and "ctxcore build" in out
