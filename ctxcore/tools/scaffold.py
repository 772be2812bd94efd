"""Scaffold a plugin distribution: what ``ctx plugins new NAME --kind KIND`` writes.

The output is a complete, installable distribution that passes its own tests as
generated: a pyproject with the ``ctxcore`` entry point, a package holding one
working component of the chosen kind and its pydantic config model, the
``plugin.py`` hook implementation that registers them, a test module that
subclasses the matching :mod:`ctxcore.testing` contract, and a README.

Templates are package data (``ctxcore/tools/scaffold_templates/<kind>/*.tmpl`` and
``common/``), rendered with :class:`string.Template` (``$name`` placeholders),
so ctxcore needs no template engine.
"""

from __future__ import annotations

import importlib.util
import keyword
import re
import sys
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from string import Template

from ctxcore.errors import ScaffoldError
from ctxcore.plugins.registry import HOOK_FOR_KIND, KINDS

#: the kinds `ctx plugins new` has templates for: every kind a plugin can register.
SCAFFOLD_KINDS: tuple[str, ...] = KINDS

__all__ = ["ScaffoldError", "PluginNames", "plugin_names", "render_plugin", "create_plugin", "KIND_INFO", "SCAFFOLD_KINDS"]

#: PEP 508 distribution names: letters, digits, ``.``, ``_``, ``-``, starting and ending alphanumeric.
_DIST_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$")


@dataclass(frozen=True)
class _Kind:
    contract: str
    usage: str
    options: str


#: per kind: the contract suite the tests subclass, a pipeline snippet and the options it documents.
KIND_INFO: dict[str, _Kind] = {
    "provider": _Kind(
        "ProviderContract (ctxcore.testing.contracts)",
        "providers:\n  - type: $component\n    text: You help {user} with their code.\n  - {type: history}",
        "- `text`: the message; `{name}` placeholders are filled from runtime, then state values.\n"
        "- `role`: `system` (default) or `user`.",
    ),
    "filter": _Kind(
        "FilterContract (ctxcore.testing.contracts)",
        "filters:\n  - type: $component\n    drop_if_contains: [INTERNAL-ONLY]",
        "- `drop_if_contains`: phrases; a unit (a message, or a tool call with its results) holding one is dropped.\n"
        "- `case_sensitive`: match case (default false).",
    ),
    "counter": _Kind(
        "CounterContract (ctxcore.testing.contracts.counter)",
        "counter: {type: $component, chars_per_token: 4}",
        "- `chars_per_token`: characters per token of the estimate (default 4).",
    ),
    "checkpointer": _Kind(
        "CheckpointerContract (ctxcore.testing.contracts.checkpointer)",
        "checkpointer: {type: $component, path: .ctx/$component}",
        "- `path`: the directory holding one JSON file per thread.",
    ),
    "thread_store": _Kind(
        "ThreadStoreContract (ctxcore.testing.contracts)",
        "threads: {type: $component, path: .ctx/$component.db}",
        "- `path`: the SQLite file holding every thread's message log and step records.",
    ),
    "memory": _Kind(
        "MemoryStoreContract (ctxcore.testing.contracts.memory_store)",
        "memory: {type: $component}\nproviders:\n  - {type: memory_recall}",
        "- `max_items`: most memories kept per namespace (default 10000).",
    ),
}

@dataclass(frozen=True)
class PluginNames:
    """Every name derived from NAME: distribution, import package, component, module and classes."""

    dist: str
    package: str
    component: str
    module: str
    cls: str
    config_cls: str


def plugin_names(name: str, kind: str, component: str | None = None) -> PluginNames:
    """Derive and check the names of a new plugin.

    ``name`` is the distribution name (``ctxcore-shout``); the package is its
    lower-case snake form (``ctxcore_shout``); the component defaults to the
    name without a leading ``ctxcore-`` (``shout``).

    Raises:
        ScaffoldError: the name cannot be a distribution, package or component name.
    """
    if kind not in SCAFFOLD_KINDS:
        raise ScaffoldError(f"unknown kind {kind!r}; choose one of {', '.join(SCAFFOLD_KINDS)}")
    if not _DIST_NAME.match(name or ""):
        raise ScaffoldError(
            f"{name!r} cannot be a Python distribution name: use letters, digits, '-', '_' or '.', "
            "starting and ending with a letter or digit (for example ctxcore-shout)"
        )
    package = re.sub(r"[-.]+", "_", name).lower()
    if not package.isidentifier() or keyword.iskeyword(package) or not package.isascii():
        raise ScaffoldError(f"{name!r} gives the package name {package!r}, which is not a Python identifier; "
                            "start the name with a letter (for example ctxcore-3d -> ctxcore-three-d)")
    if package == "ctxcore" or (package.startswith("ctxcore_") and package.split("_", 1)[1] in _RESERVED):
        raise ScaffoldError(f"{name!r} is the name of a ctxcore distribution; choose another one")
    if package in sys.stdlib_module_names or importlib.util.find_spec(package) is not None:
        raise ScaffoldError(f"a module named {package!r} is already importable here; a plugin package of that name "
                            "would shadow it (or it is installed already): choose another NAME")
    if component is None:
        base = name.lower()
        base = base[len("ctxcore-"):] if base.startswith(("ctxcore-", "ctxcore_")) and len(base) > 8 else base
        component = re.sub(r"[-.]+", "_", base)
    if not component.isidentifier() or keyword.iskeyword(component) or not component.isascii():
        raise ScaffoldError(f"component name {component!r} must be a Python identifier (letters, digits, '_'); "
                            "pass --component to choose it")
    cls = "".join(part.capitalize() for part in component.split("_") if part) or "Component"
    if cls[0].isdigit():
        cls = "C" + cls
    return PluginNames(dist=name, package=package, component=component, module=component,
                       cls=cls, config_cls=f"{cls}Config")


#: packages ctxcore ships; a plugin of the same name would shadow it.
_RESERVED = ("filters", "providers", "counters", "checkpointers", "memory", "postgres", "counter_hf", "memory_mem0")


def _template(*parts: str) -> Template:
    node = resources.files("ctxcore.tools").joinpath("scaffold_templates", *parts)
    return Template(node.read_text(encoding="utf-8"))


def render_plugin(name: str, kind: str, component: str | None = None) -> dict[str, str]:
    """The files of the new plugin as ``{relative path: text}`` (nothing is written)."""
    names = plugin_names(name, kind, component)
    info = KIND_INFO[kind]
    values = {
        "dist": names.dist,
        "package": names.package,
        "component": names.component,
        "module": names.module,
        "cls": names.cls,
        "config_cls": names.config_cls,
        "kind": kind,
        "hook": HOOK_FOR_KIND[kind],
        "contract": info.contract,
        "description": f"A scaffolded {kind}: edit {names.package}/{names.module}.py.",
        "ctxcore_min": "0.1",
    }
    values["usage"] = Template(info.usage).substitute(values)
    values["options"] = Template(info.options).substitute(values)
    files = {
        "pyproject.toml": _template("common", "pyproject.toml.tmpl").substitute(values),
        "README.md": _template("common", "README.md.tmpl").substitute(values),
        f"{names.package}/__init__.py": _template("common", "__init__.py.tmpl").substitute(values),
        f"{names.package}/plugin.py": _template("common", "plugin.py.tmpl").substitute(values),
        f"{names.package}/{names.module}.py": _template(kind, "component.py.tmpl").substitute(values),
        f"tests/test_{names.module}.py": _template(kind, "test_component.py.tmpl").substitute(values),
    }
    return files


def create_plugin(name: str, kind: str, directory: str | Path = ".", component: str | None = None) -> Path:
    """Write the plugin ``name`` into ``directory/name`` and return that path.

    Raises:
        ScaffoldError: a bad name, or the target already exists (nothing is overwritten).
    """
    files = render_plugin(name, kind, component)
    parent = Path(directory)
    if parent.exists() and not parent.is_dir():
        raise ScaffoldError(f"{parent} is not a directory: give --dir an existing or new directory")
    target = parent / name
    if target.exists():
        raise ScaffoldError(f"{target} already exists: choose another NAME or --dir, or remove it first")
    for rel, text in files.items():
        path = target / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return target
