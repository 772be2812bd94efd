"""The package layout holds: layers import only downward, no cycles, no private names across packages.

The layer order itself is the import-linter contract in pyproject.toml
(``make lint-imports``, part of ``make lint``); these tests prove that contract
bites, and check what import-linter does not: module-level cycles inside a
layer, private names imported across packages, and what shipped plugins may
import.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "ctxcore"
PLUGIN_DIRS = sorted({p.parent for p in ROOT.glob("plugins/*/*/pyproject.toml")} | {p.parent for p in ROOT.glob("examples/*/pyproject.toml")})
#: what a shipped plugin (and the example distributions) may import from the core.
PLUGIN_SURFACE = ("ctxcore", "ctxcore.kit", "ctxcore.testing")


@dataclass(frozen=True)
class Import:
    """One ``import``/``from ... import`` statement of a module, resolved to absolute names."""

    module: str  # the importing module
    target: str  # the module imported (``from a.b import c`` -> ``a.b``, or ``a.b.c`` when c is a module)
    names: tuple[str, ...]
    runtime: bool  # executed when the importing module is imported (not in a function, not TYPE_CHECKING)
    line: int


def module_name(path: Path, root: Path) -> str:
    """The dotted name of the module at ``path`` (a package's ``__init__`` is the package)."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_module(name: str, root: Path) -> bool:
    base = root.joinpath(*name.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def imports_of(path: Path, root: Path) -> list[Import]:
    """Every import statement of the module at ``path`` that names a module under ``root``'s packages."""
    module = module_name(path, root)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[Import] = []

    def visit(nodes: list[ast.stmt], runtime: bool) -> None:
        for node in nodes:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    found.append(Import(module, alias.name, (), runtime, node.lineno))
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                names = tuple(a.name for a in node.names)
                submodules = [f"{target}.{n}" for n in names if _is_module(f"{target}.{n}", root)]
                for sub in submodules:
                    found.append(Import(module, sub, (), runtime, node.lineno))
                if len(submodules) < len(names):
                    found.append(Import(module, target, names, runtime, node.lineno))
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                visit(node.body, False)
            elif isinstance(node, ast.If):
                type_checking = isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"
                visit(node.body, runtime and not type_checking)
                visit(node.orelse, runtime)
            elif isinstance(node, ast.Try):
                for block in (node.body, node.orelse, node.finalbody, *(h.body for h in node.handlers)):
                    visit(block, runtime)
            elif isinstance(node, (ast.ClassDef, ast.With, ast.For, ast.While)):
                visit(node.body, runtime)

    visit(ast.parse(path.read_text(encoding="utf-8")).body, True)
    return found


def core_imports(root: Path = ROOT) -> list[Import]:
    """Every import among ctxcore's own modules."""
    out = []
    for path in sorted((root / "ctxcore").rglob("*.py")):
        out.extend(i for i in imports_of(path, root) if i.target == "ctxcore" or i.target.startswith("ctxcore."))
    return out


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the directed graph ``edges`` as a list of nodes, or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def walk(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                cycle = walk(nxt)
                if cycle:
                    return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state:
            cycle = walk(node)
            if cycle:
                return cycle
    return None


class TestImportGraph:
    def test_no_module_level_import_cycle(self) -> None:
        """No chain of imports executed at import time leads from a ctxcore module back to itself."""
        edges: dict[str, set[str]] = {}
        for imp in core_imports():
            if imp.runtime and imp.target != imp.module:
                edges.setdefault(imp.module, set()).add(imp.target)
        assert find_cycle(edges) is None, f"import cycle: {' -> '.join(find_cycle(edges) or [])}"

    def test_cycle_finder_finds_a_planted_cycle(self) -> None:
        """The cycle check is not vacuous: a two-module loop is reported."""
        assert find_cycle({"a": {"b"}, "b": {"c", "a"}, "c": set()}) == ["a", "b", "a"]
        assert find_cycle({"a": {"b"}, "b": {"c"}}) is None

    def test_no_private_name_across_packages(self) -> None:
        """A module imports ``_private`` modules or names only from its own package."""
        offenders = []
        for imp in core_imports():
            package = imp.module if (ROOT / imp.module.replace(".", "/") / "__init__.py").is_file() else imp.module.rpartition(".")[0]
            target_package = imp.target.rpartition(".")[0] if _is_module(imp.target, ROOT) and not (ROOT / imp.target.replace(".", "/") / "__init__.py").is_file() else imp.target
            private_module = any(part.startswith("_") and not part.startswith("__") for part in imp.target.split("."))
            private_names = [n for n in imp.names if n.startswith("_") and not n.startswith("__")]
            if (private_module or private_names) and target_package != package:
                offenders.append(f"{imp.module}:{imp.line} imports {imp.target} {private_names or ''}")
        assert offenders == []

    def test_facade_is_not_imported_from_inside_the_layers(self) -> None:
        """Only the CLI (for ``__version__``) imports the ``ctxcore`` facade; the layers import the modules they need."""
        users = sorted({i.module for i in core_imports() if i.target == "ctxcore" and i.module != "ctxcore"})
        assert users == ["ctxcore.cli.app"]

    def test_every_subpackage_says_what_it_may_import(self) -> None:
        """Each subpackage's ``__init__`` docstring states what it is and what it may import."""
        for init in sorted(PACKAGE.glob("*/**/__init__.py")):
            doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
            assert "May import" in doc, f"{init.relative_to(ROOT)} docstring does not say what it may import"


class TestPluginImports:
    @pytest.mark.parametrize("project", PLUGIN_DIRS, ids=lambda p: p.name)
    def test_plugins_import_only_the_plugin_surface(self, project: Path) -> None:
        """A shipped plugin (code and tests) imports only ``ctxcore``, ``ctxcore.kit`` and ``ctxcore.testing``."""
        offenders = []
        for path in sorted(project.rglob("*.py")):
            for imp in imports_of(path, project):
                core = imp.target == "ctxcore" or imp.target.startswith("ctxcore.")
                allowed = imp.target in PLUGIN_SURFACE or imp.target.startswith("ctxcore.testing.")
                if core and not allowed:
                    offenders.append(f"{path.relative_to(ROOT)}:{imp.line} imports {imp.target}")
        assert offenders == []

    @pytest.mark.parametrize("project", PLUGIN_DIRS, ids=lambda p: p.name)
    def test_plugins_never_import_each_other(self, project: Path) -> None:
        """A plugin's package code never imports another plugin distribution (its tests may compose installed ones)."""
        own = {p.parent.name for p in project.glob("*/__init__.py")}
        others = {p.parent.name for d in PLUGIN_DIRS if d != project for p in d.glob("*/__init__.py")} - own
        offenders = []
        for path in sorted(p for package in own for p in (project / package).rglob("*.py")):
            for imp in imports_of(path, project):
                if imp.target.split(".")[0] in others:
                    offenders.append(f"{path.relative_to(ROOT)}:{imp.line} imports {imp.target}")
        assert offenders == []


def _lint_imports(tree: Path) -> subprocess.CompletedProcess[str]:
    """``make lint-imports`` run against the ctxcore package of ``tree`` (``IMPORTS_ROOT``)."""
    return subprocess.run(
        ["make", "--no-print-directory", "-C", str(ROOT), "lint-imports", f"VENV={sys.prefix}", f"IMPORTS_ROOT={tree}"],
        capture_output=True, text=True, timeout=300,
    )


@pytest.fixture(scope="module")
def planted_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of ctxcore whose model layer imports the CLI (the wrong way)."""
    tree = tmp_path_factory.mktemp("planted")
    shutil.copytree(PACKAGE, tree / "ctxcore", ignore=shutil.ignore_patterns("__pycache__"))
    messages = tree / "ctxcore" / "model" / "messages.py"
    messages.write_text(messages.read_text(encoding="utf-8") + "\nimport ctxcore.cli  # planted wrong-way import\n", encoding="utf-8")
    return tree


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
class TestLayerContract:
    def test_the_real_tree_keeps_the_contract(self) -> None:
        """``make lint-imports`` passes on the package as it is."""
        result = _lint_imports(ROOT)
        assert result.returncode == 0, result.stdout + result.stderr

    def test_a_planted_wrong_way_import_fails_lint(self, planted_tree: Path) -> None:
        """``make lint-imports`` fails, naming the import, when the model layer imports the CLI."""
        result = _lint_imports(planted_tree)
        assert result.returncode != 0
        assert "ctxcore.model.messages -> ctxcore.cli" in result.stdout + result.stderr


def test_architecture_doc_lists_every_module() -> None:
    """docs/architecture.md's module list names every module of the core package, under its own directory."""
    doc = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    listing = doc[doc.index("### Every module"):doc.index("### Moved modules")]
    missing = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(ROOT)
        if path.name == "__init__.py" and path.parent != PACKAGE and path.parent.name not in ("kit", "cli", "testing"):
            continue  # a subpackage's __init__ only re-exports; its directory line stands for it
        if f" {path.name} " not in listing.replace("\n", " \n") and f" {path.name}\n" not in listing:
            missing.append(str(rel))
        for directory in rel.parent.parts[1:]:
            if f"{directory}/" not in listing:
                missing.append(f"{rel} (directory {directory}/)")
    assert missing == []


def test_importing_the_package_and_cli_pulls_in_no_test_code() -> None:
    """``import ctxcore``, ``ctxcore.testing``, the kit and the CLI import neither pytest nor a suite or harness."""
    code = ("import sys, ctxcore, ctxcore.kit, ctxcore.testing, ctxcore.cli; "
            "print(sorted(m for m in sys.modules if m == 'pytest' or m.startswith(('ctxcore.testing.', 'hypothesis'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True).stdout
    assert out.strip() == "[]"
