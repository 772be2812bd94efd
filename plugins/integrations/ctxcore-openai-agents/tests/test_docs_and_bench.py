"""This integration's blocks of docs/integrations.md run here, and its benchmark runs on a tiny size."""

from __future__ import annotations

import importlib
import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[4]


def _docs_test_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("ctxcore_docs_code_test", ROOT / "tests" / "test_docs_code.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_docs_blocks_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The blocks marked run-in: ctxcore-openai-agents run as a reader would (network cut but for their stub)."""
    ran = _docs_test_module().run_suite_blocks("ctxcore-openai-agents", tmp_path, monkeypatch)
    assert ran >= 3


def test_bench_smoke() -> None:
    """bench/integration_openai_agents.py runs on a tiny history and prints its table (warm and deserialized) without writing the page."""
    before = (ROOT / "docs" / "performance.md").read_text(encoding="utf-8")
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "integration_openai_agents.py"), "--messages", "60",
                          "--turns", "3", "--no-write"], capture_output=True, text=True, timeout=300, check=True)
    assert "conversion, warm" in out.stdout and "conversion, deserialized" in out.stdout and "ctxcore build" in out.stdout
    assert (ROOT / "docs" / "performance.md").read_text(encoding="utf-8") == before


def test_listed_as_an_integration() -> None:
    """`ctx plugins list --json` shows the installed distribution's integration:openai-agents, entry importable."""
    import json

    out = subprocess.run([sys.executable, "-m", "ctxcore", "plugins", "list", "--json"], capture_output=True, text=True,
                         timeout=120, check=True)
    (mine,) = [p for p in json.loads(out.stdout) if p["name"] == "ctxcore-openai-agents"]
    assert mine["status"] == "loaded" and [i["name"] for i in mine["integrations"]] == ["openai-agents"]
    module, attr = mine["integrations"][0]["entry"].split(":")
    assert getattr(importlib.import_module(module), attr).__name__ == "ContextFilter"
