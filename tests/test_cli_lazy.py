"""`ctx --help` imports no command module and no plugin: a table of built-ins and a cache of plugin commands."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import textwrap

import click
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxcore import __version__
from ctxcore.cli import command_cache
from ctxcore.cli.app import BUILT_IN_COMMANDS, cli
from ctxcore.cli.lazy import SHORT_HELP_LIMIT, LazyGroup

ROOT = pathlib.Path(__file__).resolve().parents[1]
HELLO = '''
import click
from ctxcore import hookimpl

@hookimpl
def register_commands(cli):
    @cli.command()
    def hello():
        "{summary}"
        click.echo("hello from a plugin")
'''
# Runs `ctx ARGS` in-process and writes the modules it imported to MODULES_OUT.
PROBE = textwrap.dedent("""
    import json, os, sys
    from ctxcore.cli import main
    try:
        main()
    finally:
        with open(os.environ["MODULES_OUT"], "w") as out:
            json.dump(sorted(sys.modules), out)
""")


def _plugin(tmp_path: pathlib.Path, summary: str = "Say hello.") -> pathlib.Path:
    """An installed-looking distribution `ctxcore-hello` whose plugin adds `ctx hello`."""
    site = tmp_path / "site"
    info = site / "ctxcore_hello-1.0.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: ctxcore-hello\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[ctxcore]\nctxcore-hello = ctxcore_hello_plugin\n")
    (site / "ctxcore_hello_plugin.py").write_text(HELLO.format(summary=summary))
    return site


class Ctx:
    """`ctx` in a subprocess with its own cache directory (autoload on, no other CTXCORE_* variables)."""

    def __init__(self, tmp_path: pathlib.Path) -> None:
        self.cache = tmp_path / "cache"
        self.modules_out = tmp_path / "modules.json"
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("CTXCORE_")}
        self.env.update(COLUMNS="80", XDG_CACHE_HOME=str(self.cache), MODULES_OUT=str(self.modules_out))

    def __call__(self, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True,
                              env={**self.env, **env}, timeout=120, cwd=ROOT)

    def modules(self) -> set[str]:
        """The modules the last run had imported."""
        return set(json.loads(self.modules_out.read_text()))

    def entries(self) -> list[pathlib.Path]:
        return sorted((self.cache / "ctxcore" / "cli-commands").glob("*.json"))


@pytest.fixture
def ctx(tmp_path: pathlib.Path) -> Ctx:
    return Ctx(tmp_path)


def _command_modules() -> set[str]:
    groups = [BUILT_IN_COMMANDS, *(g.lazy_commands for g in _subgroups())]
    return {entry.target.partition(":")[0] for table in groups for entry in table.values()}


def _subgroups() -> list[LazyGroup]:
    context = click.Context(cli)
    found = [cli.get_command(context, name) for name in BUILT_IN_COMMANDS]
    return [g for g in found if isinstance(g, LazyGroup)]


class TestTables:
    def test_summaries_match_the_commands(self) -> None:
        """Every table entry names a command of that name whose own short help is the table's summary."""
        for group in (cli, *_subgroups()):
            context = click.Context(group)
            for name, entry in group.lazy_commands.items():
                command = group.get_command(context, name)
                assert command is not None and command.name == name, entry.target
                assert command.get_short_help_str(SHORT_HELP_LIMIT) == entry.summary, entry.target

    def test_every_command_module_is_in_a_table(self) -> None:
        """No command module of ctxcore.cli is left out of the tables (it would be missing from `ctx`)."""
        helpers = {"__init__", "app", "lazy", "command_cache", "_common", "_progress"}
        modules = {f"ctxcore.cli.{p.stem}" for p in (ROOT / "ctxcore" / "cli").glob("*.py") if p.stem not in helpers}
        assert modules == _command_modules()


class TestHelp:
    def test_help_imports_no_command_module_or_plugin(self, ctx: Ctx, tmp_path: pathlib.Path) -> None:
        """Once the listing is cached, `ctx --help` lists built-ins and plugin commands importing neither."""
        site = _plugin(tmp_path)
        first = ctx("--help", PYTHONPATH=str(site))
        assert first.returncode == 0, first.stderr
        assert "ctxcore_hello_plugin" in ctx.modules()  # the first run loads the plugins to list their commands
        second = ctx("--help", PYTHONPATH=str(site))
        assert (second.returncode, second.stdout, second.stderr) == (0, first.stdout, first.stderr)
        assert "  hello       Say hello." in second.stdout and "  build       Build the context" in second.stdout
        loaded = ctx.modules()
        assert not loaded & _command_modules(), loaded & _command_modules()
        assert not {m for m in loaded if m.startswith(("ctxcore_", "pluggy", "ctxcore.plugins"))}

    def test_subgroup_help_imports_only_its_group(self, ctx: Ctx) -> None:
        """`ctx pipeline --help` lists show/presets/schema without importing their modules."""
        result = ctx("pipeline", "--help")
        assert result.returncode == 0 and "  schema    Print the JSON Schema" in result.stdout
        assert not ctx.modules() & {"ctxcore.cli.presets", "ctxcore.cli.schema"}

    def test_commands_still_run(self, ctx: Ctx, tmp_path: pathlib.Path) -> None:
        """With a warm cache a plugin command and a built-in command still load what they need and run."""
        site = _plugin(tmp_path)
        assert ctx("--help", PYTHONPATH=str(site)).returncode == 0
        hello = ctx("hello", PYTHONPATH=str(site))
        assert (hello.returncode, hello.stdout) == (0, "hello from a plugin\n"), hello.stderr
        listed = ctx("pipeline", "presets", "--json")
        assert listed.returncode == 0 and isinstance(json.loads(listed.stdout), list)

    def test_broken_register_commands_warns_every_time(self, ctx: Ctx, tmp_path: pathlib.Path) -> None:
        """A plugin whose register_commands raises is reported by a cached help as by the first one."""
        site = _plugin(tmp_path)
        (site / "ctxcore_hello_plugin.py").write_text(
            "from ctxcore import hookimpl\n\n@hookimpl\ndef register_commands(cli):\n    raise RuntimeError('bad table')\n")
        warning = "plugin 'ctxcore-hello' failed in register_commands: RuntimeError: bad table"
        for _ in range(2):
            result = ctx("--help", PYTHONPATH=str(site))
            assert result.returncode == 0 and "build" in result.stdout and warning in result.stderr


class TestInvalidation:
    def test_installing_blocking_and_editing_a_plugin(self, ctx: Ctx, tmp_path: pathlib.Path) -> None:
        """Installing, blocking, unblocking or editing a plugin changes the next help; each setting has its entry."""
        assert "hello" not in ctx("--help").stdout
        site = _plugin(tmp_path)
        assert "Say hello." in ctx("--help", PYTHONPATH=str(site)).stdout
        assert "hello" not in ctx("--help", PYTHONPATH=str(site), CTXCORE_BLOCK_PLUGINS="ctxcore-hello").stdout
        assert "Say hello." in ctx("--help", PYTHONPATH=str(site)).stdout
        assert "hello" not in ctx("--help", PYTHONPATH=str(site), CTXCORE_DISABLE_PLUGIN_AUTOLOAD="1").stdout
        _plugin(tmp_path, summary="Greet the user.")
        os.utime(site / "ctxcore_hello_plugin.py", ns=(1, 1))  # a different mtime even on a coarse clock
        assert "  hello       Greet the user." in ctx("--help", PYTHONPATH=str(site)).stdout
        assert len(ctx.entries()) == 5

    def test_corrupt_cache_is_ignored_and_rewritten(self, ctx: Ctx, tmp_path: pathlib.Path) -> None:
        """A corrupt cache entry is a miss: help loads the plugins, shows them, and writes a good entry."""
        site = _plugin(tmp_path)
        good = ctx("--help", PYTHONPATH=str(site)).stdout
        for entry in ctx.entries():
            entry.write_bytes(b'{"format": 1, "commands": [{"name": 3}]')
        result = ctx("--help", PYTHONPATH=str(site))
        assert (result.returncode, result.stdout) == (0, good) and "Traceback" not in result.stderr
        assert "ctxcore_hello_plugin" in ctx.modules()
        assert all(command_cache.read_listing(e.stem, e.parent) is not None for e in ctx.entries())

    def test_unwritable_cache_dir_is_ignored(self, ctx: Ctx, tmp_path: pathlib.Path) -> None:
        """When the cache directory cannot be created, help still works (it loads the plugins every time)."""
        blocker = tmp_path / "not-a-dir"
        blocker.write_text("")
        result = ctx("--help", PYTHONPATH=str(_plugin(tmp_path)), XDG_CACHE_HOME=str(blocker))
        assert result.returncode == 0 and "Say hello." in result.stdout and result.stderr == ""


class TestCacheStore:
    def test_round_trip(self, tmp_path: pathlib.Path) -> None:
        """A written listing reads back equal, under its own key only."""
        listing = command_cache.CachedListing((command_cache.CachedCommand("hello", "Say hello.", hidden=True),),
                                              ("warning: x",))
        command_cache.write_listing("k1", listing, tmp_path)
        assert command_cache.read_listing("k1", tmp_path) == listing
        assert command_cache.read_listing("k2", tmp_path) is None

    def test_old_entries_are_pruned(self, tmp_path: pathlib.Path) -> None:
        """The directory keeps a bounded number of entries, the newest."""
        for n in range(command_cache._KEEP + 5):
            command_cache.write_listing(f"k{n}", command_cache.CachedListing(()), tmp_path)
            os.utime(tmp_path / f"k{n}.json", ns=(n, n))
        kept = sorted(tmp_path.glob("*.json"))
        assert len(kept) == command_cache._KEEP and (tmp_path / f"k{command_cache._KEEP + 4}.json") in kept

    @settings(max_examples=200, deadline=None)
    @given(st.one_of(st.binary(max_size=200), st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=5),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(
            ["format", "commands", "warnings", "name", "summary", "hidden"]), inner, max_size=4),
        max_leaves=12).map(lambda doc: json.dumps(doc).encode())))
    def test_any_file_content_reads_as_a_listing_or_a_miss(self, data: bytes) -> None:
        """Whatever a cache file holds, reading it gives a listing or None, never an exception."""
        import tempfile

        with tempfile.TemporaryDirectory() as directory:
            pathlib.Path(directory, "k.json").write_bytes(data)
            got = command_cache.read_listing("k", pathlib.Path(directory))
        assert got is None or all(isinstance(c.name, str) for c in got.commands)

    def test_key_follows_the_plugin_variables(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """The key is stable, and changes with each plugin variable and with ctxcore's version."""
        base = {k: v for k, v in os.environ.items() if not k.startswith("CTXCORE_")}
        key = command_cache.listing_key(__version__, base)
        assert command_cache.listing_key(__version__, dict(base)) == key
        assert command_cache.listing_key("0.0.0-other", base) != key
        for name in command_cache.PLUGIN_VARIABLES:
            assert command_cache.listing_key(__version__, {**base, name: "1"}) != key, name

    def test_sources_are_found_without_importing(self, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """A plugin module's files are fingerprinted without importing its package or the module."""
        package = tmp_path / "fingerprint_pkg"
        package.mkdir()
        (package / "__init__.py").write_text("raise RuntimeError('imported')\n")
        (package / "plugin.py").write_text("raise RuntimeError('imported')\n")
        monkeypatch.syspath_prepend(str(tmp_path))
        found = command_cache._sources("fingerprint_pkg.plugin")
        assert [row[0] for row in found] == ["__init__.py", "plugin.py"]
        assert "fingerprint_pkg" not in sys.modules
        assert command_cache._sources("no_such_module_anywhere.plugin") == ["not found"]
