"""The LangChain section of docs/integrations.md runs here; the plugin declares the integration; the bench runs."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ctxcore.testing import fresh_host

ROOT = Path(__file__).resolve().parents[4]


def _docs_module():
    spec = importlib.util.spec_from_file_location("ctxcore_docs_code", ROOT / "tests" / "test_docs_code.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_integrations_page_blocks_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The page's ctxcore-langchain examples run against the real framework (network cut but for the stub)."""
    assert _docs_module().run_suite_blocks("ctxcore-langchain", tmp_path, monkeypatch) >= 1


def test_plugin_declares_the_integration() -> None:
    """The plugin registers integration 'langchain' with its framework and an importable entry; ``ctx plugins list`` shows it."""
    import ctxcore_langchain
    import ctxcore_langchain.plugin as plugin

    host = fresh_host(("ctxcore-langchain", plugin))
    host.registry  # noqa: B018 - the registration hooks run here
    (declared,) = host.plugins[0].to_dict()["integrations"]
    assert declared["name"] == "langchain" and declared["framework"] == "langchain>=1.5,<2"
    module, attr = declared["entry"].split(":")
    assert module == "ctxcore_langchain" and getattr(ctxcore_langchain, attr) is ctxcore_langchain.ContextMiddleware
    ctx = Path(sys.executable).with_name("ctx")
    out = subprocess.run([str(ctx), "plugins", "list"], capture_output=True, text=True, cwd=ROOT, check=False,
                         env={k: v for k, v in os.environ.items() if k != "CTXCORE_DISABLE_PLUGIN_AUTOLOAD"})
    assert "integration:langchain" in out.stdout, out.stdout + out.stderr


def test_bench_smoke() -> None:
    """bench/integration_langchain.py runs on a tiny history without writing the page."""
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "integration_langchain.py"), "--messages", "60",
                          "--rounds", "3", "--no-write"], capture_output=True, text=True, cwd=ROOT, check=False)
    assert out.returncode == 0, out.stderr
    assert "conversion" in out.stdout
