"""Fast start: ``import ctxcore`` loads no drawing, CLI or plugin code, and public names still load on first use."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import ctxcore

HEAVY = ("rich", "click", "structlog", "yaml", "pluggy")


def _modules_after(code: str) -> set[str]:
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    return set(json.loads(done.stdout.splitlines()[-1]))


def test_import_ctxcore_loads_no_rich_click_or_plugins() -> None:
    """`import ctxcore` in a fresh interpreter imports neither rich, click, structlog, YAML, pluggy nor any plugin."""
    loaded = _modules_after("import ctxcore")
    tops = {name.split(".")[0] for name in loaded}
    assert not tops & set(HEAVY), tops & set(HEAVY)
    assert not {t for t in tops if t.startswith("ctxcore_")}, tops
    assert [m for m in loaded if m.startswith("ctxcore.")] == [], "ctxcore submodules load on first use only"


def test_public_names_load_on_first_use_and_logging_default_applies() -> None:
    """A public name loads its module on first use, and with it the quiet, redacted logging default."""
    loaded = _modules_after("from ctxcore import Message\nimport structlog\nassert structlog.is_configured()")
    assert "ctxcore.model.messages" in loaded and "click" not in loaded


def test_every_public_name_resolves() -> None:
    """Every name of `ctxcore.__all__` is reachable (the lazy table misses none) and `dir()` lists it."""
    for name in ctxcore.__all__:
        assert getattr(ctxcore, name) is not None, name
        assert name in dir(ctxcore)
    try:
        ctxcore.NoSuchName  # type: ignore[attr-defined]  # noqa: B018
    except AttributeError as exc:
        assert "NoSuchName" in str(exc)
    else:
        raise AssertionError("an unknown name must raise AttributeError")


FIRST_BUILD = '''from ctxcore import Pipeline
Pipeline.from_string("""
version: 1
model: {context_window: 8000}
counter: {type: approximate}
providers:
  - {type: static_prompt, text: You are a helpful assistant.}
  - {type: history}
filters:
  - {type: token_budget}
""").build({"messages": [{"role": "user", "content": "Hello, who are you?"}]})
import ctxcore.kit.markers
assert ctxcore.kit.markers._confusables.cache_info().currsize == 0, "the confusables were loaded"
'''
#: what a first build loads only when its pipeline uses it (the HF counter and its template engine, compaction,
#: the summarizers' HTTP client, the drivers and counters of other plugins)
UNUSED = ("jinja2", "ctxcore_counter_hf.counter", "ctxcore_filters.compaction", "urllib.request", "psycopg",
          "redis", "mem0", "tiktoken")


@pytest.mark.integration
def test_first_build_loads_only_what_its_pipeline_uses(monkeypatch: pytest.MonkeyPatch) -> None:
    """A first build with the installed plugins imports none of the modules its pipeline does not use, and
    scans for markers without loading the confusables (the bracket class is recorded)."""
    monkeypatch.delenv("CTXCORE_DISABLE_PLUGIN_AUTOLOAD")
    loaded = _modules_after(FIRST_BUILD)
    assert "ctxcore_filters.token_budget" in loaded
    assert not [m for m in loaded if m in UNUSED or m.startswith(tuple(f"{u}." for u in UNUSED))]
