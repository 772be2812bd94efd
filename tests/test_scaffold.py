"""``ctx plugins new``: names are checked, and every kind's scaffold survives the round trip.

The round trip is what a developer does on day one, run for real: scaffold into
a temporary directory, ``pip install`` it (not editable) into a throwaway venv
that also sees this project's environment, run the generated tests with that
venv's python (against the installed copy, not the source tree), and find the
plugin and its component in ``ctx plugins list --json``. No network: the build
backend (setuptools) comes from the project's venv (``--no-build-isolation``).
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from ctxcore.cli import cli
from ctxcore.plugins.registry import KINDS
from ctxcore.tools.scaffold import (
    SCAFFOLD_KINDS,
    ScaffoldError,
    create_plugin,
    plugin_names,
    render_plugin,
)

ROOT = Path(__file__).resolve().parents[1]


def _env() -> dict[str, str]:
    """The environment of a user's shell: plugin autoload on, no CTXCORE_* overrides."""
    return {k: v for k, v in os.environ.items() if not k.startswith("CTXCORE_") and k != "PYTHONPATH"}


def _run(*cmd: str | Path, cwd: Path, timeout: int = 300) -> subprocess.CompletedProcess[str]:
    result = subprocess.run([str(c) for c in cmd], cwd=cwd, env=_env(), capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, f"{' '.join(map(str, cmd))} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}"
    return result


# ------------------------------------------------------------------- names
class TestNames:
    def test_derived_names(self) -> None:
        names = plugin_names("ctxcore-shout", "filter")
        assert (names.dist, names.package, names.component, names.cls, names.config_cls) == (
            "ctxcore-shout", "ctxcore_shout", "shout", "Shout", "ShoutConfig")
        assert plugin_names("Acme.Tools", "counter").package == "acme_tools"
        assert plugin_names("acme-tools", "memory", component="vault").component == "vault"

    @pytest.mark.parametrize("bad", ["", "-x", "x-", "has space", "ümlaut", "a/b", "../escape", "x!"])
    def test_names_that_cannot_be_distributions(self, bad: str) -> None:
        with pytest.raises(ScaffoldError, match="distribution name"):
            plugin_names(bad, "filter")

    @pytest.mark.parametrize("bad", ["3d-filter", "class", "import"])
    def test_names_that_cannot_be_packages(self, bad: str) -> None:
        with pytest.raises(ScaffoldError, match="identifier"):
            plugin_names(bad, "filter")

    def test_ctxcore_distribution_names_are_refused(self) -> None:
        for taken in ("ctxcore", "ctxcore-filters", "ctxcore_memory"):
            with pytest.raises(ScaffoldError, match="ctxcore distribution"):
                plugin_names(taken, "filter")

    @pytest.mark.parametrize("taken", ["json", "pydantic", "click"])
    def test_names_that_would_shadow_a_module(self, taken: str) -> None:
        with pytest.raises(ScaffoldError, match="already importable"):
            plugin_names(taken, "memory")

    def test_bad_component_name(self) -> None:
        with pytest.raises(ScaffoldError, match="--component"):
            plugin_names("acme", "filter", component="not-valid")

    def test_unknown_kind(self) -> None:
        with pytest.raises(ScaffoldError, match="choose one of provider, filter"):
            plugin_names("acme", "summarizer")


# ------------------------------------------------------------------ render
@pytest.mark.parametrize("kind", SCAFFOLD_KINDS)
def test_rendered_files_are_complete(kind: str) -> None:
    """Every file renders without a leftover placeholder; Python parses; the entry point names plugin.py."""
    files = render_plugin("acme-thing", kind)
    assert set(files) == {"pyproject.toml", "README.md", "acme_thing/__init__.py", "acme_thing/plugin.py",
                          "acme_thing/acme_thing.py", "tests/test_acme_thing.py"}
    for path, text in files.items():
        assert "$" not in text, f"{path}: a placeholder was not filled"
        if path.endswith(".py"):
            ast.parse(text, filename=path)
    assert '[project.entry-points.ctxcore]\nacme-thing = "acme_thing.plugin"' in files["pyproject.toml"]
    assert 'dependencies = ["ctxcore-llm>=' in files["pyproject.toml"]
    hook = {"provider": "register_providers", "filter": "register_filters", "counter": "register_token_counters",
            "checkpointer": "register_checkpointers", "thread_store": "register_thread_stores",
            "memory": "register_memory_stores"}[kind]
    assert f"def {hook}(register: Any)" in files["acme_thing/plugin.py"]
    assert "Contract" in files["tests/test_acme_thing.py"]


@pytest.mark.parametrize("kind", SCAFFOLD_KINDS)
def test_rendered_code_imports_only_the_plugin_surface(kind: str) -> None:
    """A scaffolded plugin imports ctxcore only through ``ctxcore``, ``ctxcore.kit`` and ``ctxcore.testing``."""
    deep = []
    for path, text in render_plugin("acme-thing", kind).items():
        if not path.endswith(".py"):
            continue
        for node in ast.walk(ast.parse(text, filename=path)):
            module = node.module if isinstance(node, ast.ImportFrom) else None
            if module and module.startswith("ctxcore.") and module != "ctxcore.kit" and not module.startswith("ctxcore.testing"):
                deep.append(f"{path}: from {module}")
    assert deep == []


class TestCommand:
    def test_creates_the_directory(self, tmp_path: Path) -> None:
        result = CliRunner().invoke(cli, ["plugins", "new", "acme-echo", "--kind", "provider", "--dir", str(tmp_path)])
        assert result.exit_code == 0, result.output
        assert f"created {tmp_path / 'acme-echo'}" in result.output
        assert (tmp_path / "acme-echo" / "acme_echo" / "acme_echo.py").is_file()

    def test_existing_directory_is_refused_and_left_alone(self, tmp_path: Path) -> None:
        (tmp_path / "acme-echo").mkdir()
        (tmp_path / "acme-echo" / "keep.txt").write_text("mine")
        result = CliRunner().invoke(cli, ["plugins", "new", "acme-echo", "--kind", "filter", "--dir", str(tmp_path)])
        assert result.exit_code == 2
        assert "already exists" in result.output
        assert sorted(p.name for p in (tmp_path / "acme-echo").iterdir()) == ["keep.txt"]

    def test_bad_name_is_a_usage_error(self, tmp_path: Path) -> None:
        result = CliRunner().invoke(cli, ["plugins", "new", "my plugin", "--kind", "filter", "--dir", str(tmp_path)])
        assert result.exit_code == 2
        assert "cannot be a Python distribution name" in result.output
        assert list(tmp_path.iterdir()) == []

    def test_kind_is_required_and_checked(self, tmp_path: Path) -> None:
        result = CliRunner().invoke(cli, ["plugins", "new", "acme", "--kind", "parser", "--dir", str(tmp_path)])
        assert result.exit_code == 2 and "parser" in result.output

    def test_dir_that_is_a_file(self, tmp_path: Path) -> None:
        (tmp_path / "f").write_text("")
        with pytest.raises(ScaffoldError, match="not a directory"):
            create_plugin("acme", "filter", tmp_path / "f")


# -------------------------------------------------------------- round trip
@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A throwaway venv (no pip of its own) that also sees this project's site-packages.

    ``site.addsitedir`` (not a bare path line) so the project's editable
    installs, which are .pth files themselves, resolve in the new venv too.
    """
    root = tmp_path_factory.mktemp("plugin-venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True, timeout=120)
    python = root / "bin" / "python"
    purelib = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    parent = sysconfig.get_paths()["purelib"]
    Path(purelib, "_ctxcore_project_env.pth").write_text(f"import site; site.addsitedir({parent!r})\n")
    return python


@pytest.fixture(scope="module")
def installed(venv: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One freshly scaffolded plugin per kind, pip-installed (not editable) into the venv in one call."""
    root = tmp_path_factory.mktemp("scaffolded")
    targets = {kind: create_plugin(f"acme-{kind}-plugin", kind, root) for kind in SCAFFOLD_KINDS}
    _run(venv, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", "--no-index",
         *targets.values(), cwd=root)
    return targets


@pytest.fixture(scope="module")
def listing(venv: Path, installed: dict[str, Path]) -> dict[str, dict[str, object]]:
    """``ctx plugins list --json`` of the venv, by plugin name."""
    out = _run(venv, "-m", "ctxcore", "plugins", "list", "--json", cwd=next(iter(installed.values())).parent)
    return {p["name"]: p for p in json.loads(out.stdout)}


@pytest.mark.integration
@pytest.mark.parametrize("kind", SCAFFOLD_KINDS)
def test_scaffold_installs_passes_its_tests_and_is_listed(
    kind: str, venv: Path, installed: dict[str, Path], listing: dict[str, dict[str, object]]
) -> None:
    target = installed[kind]
    name, package = target.name, f"acme_{kind}_plugin"
    outside = target.parent  # not the plugin directory: imports must come from the installed copy

    where = _run(venv, "-c", f"import {package}; print({package}.__file__)", cwd=outside).stdout
    assert "site-packages" in where and str(target) not in where
    tests = _run(venv, "-m", "pytest", "-q", "-p", "no:cacheprovider", target / "tests", cwd=outside)
    assert " passed" in tests.stdout and "failed" not in tests.stdout and "error" not in tests.stdout.lower()

    assert name in listing, sorted(listing)
    mine = listing[name]
    assert mine["status"] == "loaded" and mine["error"] is None
    assert mine["components"] == {k: ([package] if k == kind else []) for k in KINDS}
    assert mine["entry_point"] == f"{name} = {package}.plugin"


@pytest.mark.integration
def test_templates_ship_in_the_wheel(tmp_path: Path) -> None:
    """A built (not editable) ctxcore wheel holds every template (package-data is configured)."""
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(ROOT / "ctxcore", src / "ctxcore", ignore=shutil.ignore_patterns("__pycache__"))
    _run(sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "--no-index",
         "-w", tmp_path / "dist", src, cwd=tmp_path)
    (wheel,) = (tmp_path / "dist").glob("ctxcore_llm-*.whl")
    shipped = {n for n in zipfile.ZipFile(wheel).namelist() if n.startswith("ctxcore/tools/scaffold_templates/")}
    expected = {f"ctxcore/{p.relative_to(ROOT / 'ctxcore').as_posix()}"
                for p in (ROOT / "ctxcore" / "tools" / "scaffold_templates").rglob("*.tmpl")}
    assert len(expected) == 4 + 2 * len(SCAFFOLD_KINDS)
    assert shipped == expected


@pytest.mark.integration
def test_scaffolds_pass_the_projects_linters(installed: dict[str, Path]) -> None:
    """The generated code is held to the bar of ctxcore's own plugins: ruff and mypy are clean."""
    bin_dir = Path(sys.executable).parent
    root = next(iter(installed.values())).parent
    _run(bin_dir / "ruff", "check", "--select", "F,E9,B,I,UP", "--target-version", "py310", "--no-cache", root, cwd=root)
    packages = [target / f"acme_{kind}_plugin" for kind, target in installed.items()]
    _run(sys.executable, "-m", "mypy", "--ignore-missing-imports", "--no-incremental", *packages, cwd=root)
