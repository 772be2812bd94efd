"""Tests for ctxcore.plugins.host: entry-point loading, allow/block lists, failures, conflicts."""

from __future__ import annotations

import pathlib
import textwrap
import uuid

import importlib_metadata
import pytest
from pydantic import BaseModel

from ctxcore import hookimpl
from ctxcore.errors import PluginError
from ctxcore.plugins.host import PluginHost
from ctxcore.plugins.registry import ComponentConflict
from ctxcore.testing import fresh_host


class FakeDist(importlib_metadata.Distribution):
    """An installed distribution that exists only in memory."""

    def __init__(self, name: str, version: str, module: str) -> None:
        self._name, self._version, self._module = name, version, module

    def read_text(self, filename: str) -> str | None:
        if filename == "METADATA":
            return f"Metadata-Version: 2.1\nName: {self._name}\nVersion: {self._version}\n"
        if filename == "entry_points.txt":
            return f"[ctxcore]\n{self._name} = {self._module}\n"
        return None

    def locate_file(self, path: str) -> pathlib.Path:
        return pathlib.Path(path)


GOOD = """
from ctxcore import hookimpl

def make(config):
    return object()

@hookimpl
def register_filters(register):
    register("{component}", make)
"""


@pytest.fixture
def make_dist(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch):
    """Write a plugin module to disk and return a fake distribution pointing at it."""
    monkeypatch.syspath_prepend(str(tmp_path))

    def make(name: str, source: str = GOOD, component: str = "demo", version: str = "1.0") -> FakeDist:
        module = f"fakeplugin_{uuid.uuid4().hex[:10]}"
        (tmp_path / f"{module}.py").write_text(textwrap.dedent(source.replace("{component}", component)))
        return FakeDist(name, version, module)

    return make


def load(*dists: FakeDist, **env: str) -> PluginHost:
    eps = [ep for d in dists for ep in d.entry_points.select(group="ctxcore")]
    return PluginHost.load(env=env, entry_points=eps)


def by_name(host: PluginHost) -> dict[str, dict]:
    return {p.name: p.to_dict() for p in host.plugins}


class TestLoading:
    def test_good_plugin_loads_with_its_components(self, make_dist) -> None:
        """A plugin's entry point is imported and its components registered under its name."""
        host = load(make_dist("ctxcore-good", component="shiny"))
        info = by_name(host)["ctxcore-good"]
        assert info["status"] == "loaded" and info["version"] == "1.0"
        assert info["components"]["filter"] == ["shiny"] and info["hooks"] == ["register_filters"]
        assert info["error"] is None and info["entry_point"].startswith("ctxcore-good = fakeplugin_")
        assert host.registry.get("filter", "shiny").plugin == "ctxcore-good"

    def test_import_error_is_recorded_and_others_load(self, make_dist) -> None:
        """A plugin raising ImportError is 'failed' with its error; the rest still load."""
        bad = make_dist("ctxcore-bad", source="raise ImportError('no module named totally_missing')\n")
        host = load(bad, make_dist("ctxcore-good"))
        infos = by_name(host)
        assert infos["ctxcore-bad"]["status"] == "failed"
        assert infos["ctxcore-bad"]["error"] == {"type": "ImportError", "message": "no module named totally_missing"}
        assert infos["ctxcore-good"]["status"] == "loaded"
        assert host.registry.names("filter") == ["demo"]

    def test_strict_mode_makes_failure_fatal(self, make_dist) -> None:
        """CTXCORE_STRICT_PLUGINS=1 turns a failed import into PluginError naming the plugin."""
        bad = make_dist("ctxcore-bad", source="raise ImportError('boom')\n", version="0.3.1")
        with pytest.raises(PluginError, match=r"plugin 'ctxcore-bad' 0.3.1 failed to load: ImportError: boom"):
            load(bad, CTXCORE_STRICT_PLUGINS="1")

    def test_failing_register_hook_marks_plugin_failed(self, make_dist) -> None:
        """A registration hook that raises leaves no half-registered components."""
        source = """
from ctxcore import hookimpl

@hookimpl
def register_filters(register):
    register("half", lambda c: None)
    raise RuntimeError("config file missing")
"""
        host = load(make_dist("ctxcore-half", source=source))
        info = by_name(host)["ctxcore-half"]
        assert info["status"] == "failed" and info["error"]["message"] == "config file missing"
        assert host.registry.names("filter") == []


class TestSelection:
    def test_block_list_prevents_import(self, make_dist) -> None:
        """A blocked plugin is never imported: its import-time error cannot happen."""
        bad = make_dist("ctxcore-blocked", source="raise SystemExit('imported!')\n")
        host = load(bad, make_dist("ctxcore-good"), CTXCORE_BLOCK_PLUGINS="ctxcore_blocked")
        assert by_name(host)["ctxcore-blocked"]["status"] == "blocked"
        assert by_name(host)["ctxcore-good"]["status"] == "loaded"

    def test_allow_list_loads_only_named(self, make_dist) -> None:
        """With CTXCORE_PLUGINS set, only the named plugins are imported."""
        other = make_dist("ctxcore-other", source="raise SystemExit('imported!')\n")
        host = load(make_dist("ctxcore-good"), other, CTXCORE_PLUGINS="ctxcore-good")
        assert by_name(host)["ctxcore-other"]["status"] == "blocked"
        assert by_name(host)["ctxcore-good"]["status"] == "loaded"

    def test_autoload_off_loads_nothing_unless_allowed(self, make_dist) -> None:
        """CTXCORE_DISABLE_PLUGIN_AUTOLOAD=1 loads only plugins named in CTXCORE_PLUGINS."""
        a, b = make_dist("ctxcore-a", component="x"), make_dist("ctxcore-b", component="y")
        host = load(a, b, CTXCORE_DISABLE_PLUGIN_AUTOLOAD="1")
        assert {p["status"] for p in by_name(host).values()} == {"blocked"}
        host = load(a, b, CTXCORE_DISABLE_PLUGIN_AUTOLOAD="1", CTXCORE_PLUGINS="ctxcore-b")
        assert by_name(host)["ctxcore-b"]["status"] == "loaded" and by_name(host)["ctxcore-a"]["status"] == "blocked"


class TestConflicts:
    def test_conflict_names_both_and_qualified_name_picks_one(self, make_dist) -> None:
        """Two plugins registering one name are both 'conflict'; 'plugin:name' resolves it."""
        host = load(make_dist("ctxcore-one", component="dup"), make_dist("ctxcore-two", component="dup"))
        infos = by_name(host)
        assert infos["ctxcore-one"]["status"] == infos["ctxcore-two"]["status"] == "conflict"
        assert "ctxcore-two" in infos["ctxcore-one"]["error"]["message"]
        with pytest.raises(ComponentConflict, match="ctxcore-one, ctxcore-two"):
            host.registry.get("filter", "dup")
        assert host.registry.get("filter", "ctxcore-two:dup").plugin == "ctxcore-two"
        assert host.registry.get("filter", "ctxcore_one:dup").plugin == "ctxcore-one"

    def test_conflict_is_fatal_in_strict_mode(self, make_dist) -> None:
        """Strict mode refuses ambiguous component names."""
        with pytest.raises(PluginError, match="registered by"):
            load(make_dist("ctxcore-one", component="dup"), make_dist("ctxcore-two", component="dup"), CTXCORE_STRICT_PLUGINS="1")


class TestInProcess:
    def test_fresh_host_registers_hookimpl_class(self) -> None:
        """A class with @hookimpl methods registers components on an isolated host."""

        class Cfg(BaseModel):
            size: int = 1

        class MyPlugin:
            @hookimpl
            def register_providers(self, register):
                register("sized", lambda cfg: cfg.size, config=Cfg, description="A sized thing.")

        host = fresh_host(("my-plugin", MyPlugin()))
        component = host.registry.get("provider", "sized")
        assert component.description == "A sized thing." and component.create({"size": 3}) == 3
        assert host.plugins[0].hooks == ["register_providers"]

    def test_hosts_are_independent(self) -> None:
        """Registering on one host does not leak into another."""

        class P:
            @hookimpl
            def register_filters(self, register):
                register("only-here", lambda cfg: None)

        assert fresh_host(("p", P())).registry.names("filter") == ["only-here"]
        assert fresh_host().registry.names("filter") == []


class TestIntegrations:
    def test_declared_integration_is_listed_and_never_imported(self) -> None:
        """register_integrations records the adapter; its entry is a path the host does not import."""

        class Adapter:
            @hookimpl
            def register_integrations(self, register):
                register("someframework", framework="someframework>=2", entry="not_a_module_anywhere:Middleware",
                         description="runs a pipeline before each model call")

        host = fresh_host(("ctxcore-someframework", Adapter()))
        host.registry  # noqa: B018 - the registration hooks run here
        info = host.plugins[0]
        assert info.status == "loaded" and info.hooks == ["register_integrations"]
        assert info.to_dict()["integrations"] == [
            {"name": "someframework", "framework": "someframework>=2", "entry": "not_a_module_anywhere:Middleware",
             "description": "runs a pipeline before each model call"}
        ]

    def test_bad_integration_declaration_fails_only_that_plugin(self) -> None:
        """An entry without 'module:attr' marks the plugin failed, naming the hook; others still load."""

        class Bad:
            @hookimpl
            def register_integrations(self, register):
                register("x", framework="x>=1", entry="no_colon_here")

        class Good:
            @hookimpl
            def register_filters(self, register):
                register("fine", lambda cfg: None)

        host = fresh_host(("bad", Bad()), ("good", Good()), strict=False)
        assert host.registry.names("filter") == ["fine"]
        bad = next(p for p in host.plugins if p.name == "bad")
        assert bad.status == "failed" and "module:attr" in bad.error["message"] and bad.integrations == []


@pytest.mark.integration
def test_installed_workspace_plugins_load() -> None:
    """The three workspace distributions load from their real entry points."""
    host = PluginHost.load(env={})
    infos = {p.name: p for p in host.plugins}
    for name in ("ctxcore-providers", "ctxcore-filters", "ctxcore-counters"):
        assert infos[name].status == "loaded", infos[name].error
    assert {"static_prompt", "history"} <= set(host.registry.names("provider"))
    assert {"max_messages", "token_budget"} <= set(host.registry.names("filter"))
    assert {"approximate", "tiktoken"} <= set(host.registry.names("counter"))


class TestHookNames:
    def test_misspelled_hook_fails_the_plugin(self, make_dist) -> None:
        """An implementation of an unknown hook marks the plugin failed with a suggestion."""
        source = """
from ctxcore import hookimpl

@hookimpl
def register_filter(register):
    register("never", lambda c: None)
"""
        host = load(make_dist("ctxcore-typo", source=source), make_dist("ctxcore-good"))
        info = by_name(host)["ctxcore-typo"]
        assert info["status"] == "failed"
        assert info["error"] == {"type": "PluginError", "message": "unknown hook 'register_filter' — did you mean 'register_filters'?"}
        assert by_name(host)["ctxcore-good"]["status"] == "loaded"
        assert host.registry.names("filter") == ["demo"]
        [typo] = [p for p in host.plugins if p.name == "ctxcore-typo"]
        assert typo.traceback.startswith("Traceback") and "PluginError" in typo.traceback

    def test_in_process_typo_raises(self) -> None:
        """fresh_host refuses a plugin object with a misspelled hook."""

        class Typo:
            @hookimpl
            def on_build_completed(self, context):
                pass

        with pytest.raises(PluginError, match="did you mean 'on_build_complete'"):
            fresh_host(("typo", Typo()))


def test_plugin_exiting_on_import_is_recorded(make_dist) -> None:
    """A plugin that calls sys.exit() while importing is 'failed', not the end of the process."""
    host = load(make_dist("ctxcore-exits", source="import sys\nsys.exit('no config')\n"), make_dist("ctxcore-good"))
    infos = by_name(host)
    assert infos["ctxcore-exits"]["status"] == "failed" and infos["ctxcore-exits"]["error"]["type"] == "SystemExit"
    assert infos["ctxcore-good"]["status"] == "loaded"
