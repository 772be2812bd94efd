"""The tutorial (docs/tutorial.md) runs as written: its scripts against a local OpenAI-protocol stub.

The scripts and the outputs the page shows live in docs/tutorial/ and are
included into the page, so what a reader sees is what these tests ran.
``CTX_UPDATE_DOCS=1`` rewrites the recorded outputs instead of comparing them.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ctxcore import Pipeline
from ctxcore.plugins.host import reset_default_host

ROOT = Path(__file__).resolve().parent.parent
TUTORIAL = ROOT / "docs" / "tutorial"
OUTPUT = TUTORIAL / "output"
CTX = Path(sys.executable).with_name("ctx")

pytestmark = pytest.mark.integration


def _fake_model() -> Any:
    """docs/tutorial/fake_model.py as a module (it is a script, not a package)."""
    spec = importlib.util.spec_from_file_location("tutorial_fake_model", TUTORIAL / "fake_model.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def model() -> Iterator[Any]:
    """The tutorial's scripted model, running on 127.0.0.1."""
    with _fake_model().make_server() as server:
        yield server


def _run(model: Any, *args: str) -> subprocess.CompletedProcess[str]:
    """Run a command in docs/tutorial with the OpenAI client pointed at the stub and a fixed terminal width."""
    env = {**os.environ, "OPENAI_BASE_URL": model.base_url, "OPENAI_API_KEY": "unused", "COLUMNS": "100",
           "TUTORIAL_MODEL": "gpt-4o-mini"}
    env.pop("CTXCORE_DISABLE_PLUGIN_AUTOLOAD", None)  # the scripts use the installed plugins, as a reader's do
    return subprocess.run(list(args), cwd=TUTORIAL, env=env, capture_output=True, text=True, timeout=120)


def _matches_recorded(name: str, text: str) -> None:
    """``text`` equals the recorded output the page includes (or rewrites it with CTX_UPDATE_DOCS=1)."""
    path = OUTPUT / name
    if os.environ.get("CTX_UPDATE_DOCS") == "1":
        path.parent.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8"), f"docs/tutorial/output/{name} is stale; rerun with CTX_UPDATE_DOCS=1"


class TestHandWrittenLoop:
    def test_without_truncation_the_prompt_outgrows_the_window(self, model: Any) -> None:
        """Sending the whole conversation every call is refused with context_length_exceeded once it grows."""
        done = _run(model, sys.executable, "step1_loop.py")
        assert done.returncode == 1, done.stderr
        assert "maximum context length is 2000 tokens" in done.stdout
        _matches_recorded("step1-full.txt", done.stdout)

    def test_keep_last_cuts_a_tool_result_from_its_call(self, model: Any) -> None:
        """Keeping the last N messages starts the window at a tool result, which the API refuses (HTTP 400)."""
        done = _run(model, sys.executable, "step1_loop.py", "--keep-last", "6")
        assert done.returncode == 1, done.stderr
        assert "tool result for call" in done.stdout
        _matches_recorded("step1-keep-last.txt", done.stdout)


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, subprocess.CompletedProcess[str], Path]]:
    """One run of step2_pipeline.py against the scripted model: (the server, the run, the saved state)."""
    state = tmp_path_factory.mktemp("tutorial") / "state.json"
    with _fake_model().make_server() as server:
        yield server, _run(server, sys.executable, "step2_pipeline.py", str(state)), state


class TestPipelineLoop:
    def test_every_request_fits_and_is_accepted(self, session: tuple[Any, Any, Path]) -> None:
        """With the pipeline every request of the session is accepted, within the 1700-token input budget."""
        model, done, state = session
        assert done.returncode == 0, done.stderr
        fake = _fake_model()
        sizes = [fake.count(body) for body in model.requests]
        assert len(sizes) == 9 and max(sizes) <= 1700  # 4 turns with a tool round, 1 without
        assert sum(body["messages"][-1]["role"] == "tool" for body in model.requests) >= 4
        _matches_recorded("step2.txt", done.stdout)
        # The conversation kept in the state is whole: nothing was truncated by hand.
        saved = json.loads(state.read_text(encoding="utf-8"))
        assert saved["messages"][0]["content"].startswith("What does parse_list")
        assert sum(m["role"] == "user" for m in saved["messages"]) == 5

    def test_explain_output(self, session: tuple[Any, Any, Path]) -> None:
        """`ctx explain agent.yaml --state state.json` prints what the page shows."""
        model, done, state = session
        assert done.returncode == 0, done.stderr
        explain = _run(model, str(CTX), "explain", "agent.yaml", "--state", str(state))
        assert explain.returncode == 0, explain.stderr
        _matches_recorded("explain.txt", explain.stdout + explain.stderr)

    def test_python_pipeline_equals_the_yaml(self, session: tuple[Any, Any, Path], monkeypatch: pytest.MonkeyPatch) -> None:
        """The ContextBuilder of pipeline_in_python.py builds the same request as agent.yaml."""
        monkeypatch.delenv("CTXCORE_DISABLE_PLUGIN_AUTOLOAD")
        reset_default_host()
        state = json.loads(session[2].read_text(encoding="utf-8"))
        spec = importlib.util.spec_from_file_location("tutorial_pipeline_in_python", TUTORIAL / "pipeline_in_python.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        from_python = module.builder.build(state)
        from_yaml = Pipeline.from_yaml(TUTORIAL / "agent.yaml").build(state)
        assert from_python.to_openai() == from_yaml.to_openai()
        assert from_python.report.total_tokens == from_yaml.report.total_tokens
