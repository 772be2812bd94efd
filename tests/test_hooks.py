"""One test per hook (test_hook_<name>), as datasette does; a meta-test keeps it that way."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys

import click
from click.testing import CliRunner
from pydantic import BaseModel

from ctxcore import hookimpl
from ctxcore.engine.builder import Step
from ctxcore.model.messages import human
from ctxcore.pipeline.spec import Pipeline
from ctxcore.plugins import hookspecs
from ctxcore.testing import fresh_host


def _hookspec_names() -> list[str]:
    return [name for name, fn in inspect.getmembers(hookspecs, inspect.isfunction) if hasattr(fn, "ctxcore_spec")]


class Greeting(BaseModel):
    text: str = "hello"


class Everything:
    """A plugin implementing every registration hook."""

    @hookimpl
    def register_providers(self, register):
        class Greeter:
            def __init__(self, text):
                self.text = text

            def get_messages(self, state, runtime):
                return [human(self.text)]

        register("greeter", lambda cfg: Greeter(cfg.text), config=Greeting)

    @hookimpl
    def register_filters(self, register):
        class Reverse:
            def apply(self, messages, ctx):
                return list(reversed(messages))

        register("reverse", lambda cfg: Reverse())

    @hookimpl
    def register_token_counters(self, register):
        class One:
            name = "one"

            def count_text(self, text):
                return 1

            def count_message(self, m):
                return 1

            def count_messages(self, ms):
                return len(ms)

            def count_tools(self, tools):
                return len(tools)

        register("one", lambda cfg: One())

    @hookimpl
    def register_checkpointers(self, register):
        register("dict", lambda cfg: {"kind": "checkpointer"})

    @hookimpl
    def register_thread_stores(self, register):
        register("dict", lambda cfg: {"kind": "thread_store"})

    @hookimpl
    def register_memory_stores(self, register):
        register("list", lambda cfg: ["memory"])


def _pipeline(text: str) -> Pipeline:
    return Pipeline.from_string(text, host=fresh_host(("everything", Everything())))


def test_hook_register_providers() -> None:
    """A registered provider is usable by name with its config."""
    built = _pipeline("version: 1\ncounter: one\nproviders: [{type: greeter, text: hi}]\n").build({})
    assert [m.content for m in built.messages] == ["hi"]


def test_hook_register_filters() -> None:
    """A registered filter runs in the pipeline."""
    built = _pipeline("version: 1\ncounter: one\nproviders: [{type: greeter, text: a}, {type: greeter, text: b}]\nfilters: [reverse]\n").build({})
    assert [m.content for m in built.messages] == ["b", "a"]


def test_hook_register_token_counters() -> None:
    """A registered counter measures the build."""
    built = _pipeline("version: 1\ncounter: one\nproviders: [greeter, greeter]\n").build({})
    assert built.report.total_tokens == 2


def test_hook_register_checkpointers() -> None:
    """The checkpointer slot creates the registered checkpointer."""
    p = _pipeline("version: 1\ncounter: one\ncheckpointer: dict\n")
    p.builder()
    assert p.checkpointer == {"kind": "checkpointer"}


def test_hook_register_thread_stores() -> None:
    """The threads slot creates the registered thread store; without it, the checkpointer's namesake is used."""
    assert _pipeline("version: 1\ncounter: one\nthreads: dict\n").thread_store() == {"kind": "thread_store"}
    assert _pipeline("version: 1\ncounter: one\ncheckpointer: dict\n").thread_store() == {"kind": "thread_store"}


def test_hook_register_memory_stores() -> None:
    """The memory slot creates the registered store."""
    p = _pipeline("version: 1\ncounter: one\nmemory: list\n")
    p.builder()
    assert p.memory == ["memory"]


def test_hook_register_presets(tmp_path) -> None:
    """A registered preset is listed and builds like the pipeline file it names."""
    from ctxcore.pipeline.presets import available_presets, preset_pipeline, preset_text

    path = tmp_path / "hello.yaml"
    path.write_text("version: 1\ncounter: one\nproviders: [{type: greeter, text: preset}]\n")

    class Presets:
        @hookimpl
        def register_presets(self, register):
            register("hello", path, description="greets")

    host = fresh_host(("everything", Everything()), ("presets", Presets()))
    assert available_presets(host)["hello"].description == "greets"
    assert preset_text("hello", host) == path.read_text()
    assert [m.content for m in preset_pipeline("hello", host=host).build({}).messages] == ["preset"]


def test_hook_register_integrations(monkeypatch) -> None:
    """A declared integration is listed by `ctx plugins list` as integration:NAME and in --json, never imported."""
    from ctxcore.cli.app import cli
    from ctxcore.plugins.host import PluginHost

    class Adapter:
        @hookimpl
        def register_integrations(self, register):
            register("acme", framework="acme-agents>=3", entry="acme_never_imported:Filter", description="acme filter")

    host = fresh_host(("ctxcore-acme", Adapter()))
    monkeypatch.setattr(PluginHost, "load", classmethod(lambda cls, **kw: host))
    monkeypatch.setenv("COLUMNS", "200")
    table = CliRunner().invoke(cli, ["plugins", "list"])
    assert table.exit_code == 0 and "integration:acme" in table.output
    listed = json.loads(CliRunner().invoke(cli, ["plugins", "list", "--json"]).output)
    assert listed[0]["integrations"] == [
        {"name": "acme", "framework": "acme-agents>=3", "entry": "acme_never_imported:Filter", "description": "acme filter"}
    ]
    assert "acme_never_imported" not in sys.modules


def test_hook_register_commands() -> None:
    """register_commands receives the click group and may add commands to it."""
    group = click.Group("ctx")

    class Commands:
        @hookimpl
        def register_commands(self, cli):
            @cli.command()
            def ping():
                click.echo("pong")

    fresh_host(("cmds", Commands())).hook.register_commands(cli=group)
    assert CliRunner().invoke(group, ["ping"]).output == "pong\n"


def test_hook_on_build_complete() -> None:
    """Observers receive the BuiltContext with its report after each pipeline build."""
    seen = []

    class Audit:
        @hookimpl
        def on_build_complete(self, context):
            seen.append((len(context.messages), context.report.total_tokens))

    host = fresh_host(("everything", Everything()), ("audit", Audit()))
    p = Pipeline.from_string("version: 1\ncounter: one\nproviders: [greeter]\n", host=host)
    p.build({})
    assert seen == [(1, 1)]


def test_every_hook_has_a_test() -> None:
    """Each hookspec has a test_hook_<name> in this module."""
    names = _hookspec_names()
    assert len(names) == 10
    missing = [n for n in names if f"test_hook_{n}" not in globals()]
    assert not missing


def test_importing_ctxcore_loads_no_plugin() -> None:
    """Plugins load lazily: `import ctxcore` imports no plugin package."""
    code = "import sys, ctxcore, ctxcore.pipeline.spec; print(sorted(m for m in sys.modules if m.startswith('ctxcore_')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_builder_steps_accept_plain_objects() -> None:
    """Step wraps any object with the right method; no ctxcore base class needed."""

    class P:
        def get_messages(self, state, runtime):
            return [human("x")]

    from ctxcore_counters import ApproximateCounter

    from ctxcore.engine.builder import ContextBuilder

    assert ContextBuilder([Step("p", P())], [], ApproximateCounter()).build().messages[0].source == "p"
