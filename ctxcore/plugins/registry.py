"""The component registry: (kind, name) -> factory, config model and owning plugin."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict

from ctxcore.errors import ComponentConflict, UnknownComponent
from ctxcore.kit.components import EmptyConfig
from ctxcore.plugins.first_party import install_hint

__all__ = [
    "KINDS",
    "HOOK_FOR_KIND",
    "EmptyConfig",
    "Component",
    "Registry",
    "UnknownComponent",
    "ComponentConflict",
    "normalize_plugin_name",
]

#: component kinds, in the order listings show them.
KINDS: tuple[str, ...] = ("provider", "filter", "counter", "checkpointer", "thread_store", "memory")

HOOK_FOR_KIND: dict[str, str] = {
    "provider": "register_providers",
    "filter": "register_filters",
    "counter": "register_token_counters",
    "checkpointer": "register_checkpointers",
    "thread_store": "register_thread_stores",
    "memory": "register_memory_stores",
}


def normalize_plugin_name(name: str) -> str:
    """Compare distribution names the way packaging does (case, ``-``/``_``/``.``)."""
    return name.lower().replace("_", "-").replace(".", "-")


def _forbid_extra(config: type[BaseModel]) -> type[BaseModel]:
    if config.model_config.get("extra") == "forbid":
        return config
    return type(config.__name__, (config,), {"model_config": ConfigDict(extra="forbid"), "__doc__": config.__doc__})


@dataclass(frozen=True)
class Component:
    """A registered component: what a pipeline ``type:`` names."""

    kind: str
    name: str
    factory: Callable[..., Any]
    config: type[BaseModel]
    plugin: str
    description: str = ""

    @property
    def qualified_name(self) -> str:
        """``plugin:name``, the form that picks one of two conflicting components."""
        return f"{self.plugin}:{self.name}"

    def validate(self, options: Mapping[str, Any]) -> BaseModel:
        """Validate ``options`` with the config model (raises pydantic's ValidationError)."""
        return self.config.model_validate(dict(options))

    def create(self, options: Mapping[str, Any] | BaseModel | None = None) -> Any:
        """Validate the options and call the factory with the config model instance."""
        config = options if isinstance(options, BaseModel) else self.validate(options or {})
        return self.factory(config)


class Registry:
    """All components offered by the loaded plugins, by kind and name."""

    def __init__(self) -> None:
        self._components: dict[tuple[str, str], list[Component]] = {}

    def add(
        self,
        kind: str,
        name: str,
        factory: Callable[..., Any],
        *,
        plugin: str,
        config: type[BaseModel] | None = None,
        description: str | None = None,
    ) -> Component:
        """Add one component; conflicts are kept and reported, not overwritten."""
        if kind not in KINDS:
            raise ValueError(f"unknown component kind {kind!r}; expected one of {', '.join(KINDS)}")
        if not isinstance(name, str) or not name or ":" in name:
            raise ValueError(f"component name must be a non-empty string without ':', got {name!r}")
        if not callable(factory):
            raise TypeError(f"{kind} {name!r}: factory must be callable")
        if config is not None and not (isinstance(config, type) and issubclass(config, BaseModel)):
            raise TypeError(f"{kind} {name!r}: config must be a pydantic model class")
        if description is None:
            doc = (getattr(factory, "__doc__", None) or "").strip()
            description = doc.splitlines()[0] if doc else ""
        component = Component(kind, name, factory, _forbid_extra(config or EmptyConfig), plugin, description)
        self._components.setdefault((kind, name), []).append(component)
        return component

    def remove_plugin(self, plugin: str) -> None:
        """Forget everything ``plugin`` registered (used when its hook fails midway)."""
        for key in list(self._components):
            kept = [c for c in self._components[key] if c.plugin != plugin]
            if kept:
                self._components[key] = kept
            else:
                del self._components[key]

    def get(self, kind: str, name: str) -> Component:
        """Look up ``name`` (or ``plugin:name``) of ``kind``.

        Raises:
            UnknownComponent: nothing by that name (with close-name suggestions).
            ComponentConflict: several plugins registered it and no plugin was named.
        """
        plugin = None
        if ":" in name:
            plugin, name = name.split(":", 1)
        found = self._components.get((kind, name), [])
        if plugin is not None:
            found = [c for c in found if normalize_plugin_name(c.plugin) == normalize_plugin_name(plugin)]
        if not found:
            suggestions = self.suggest(kind, name)
            raise UnknownComponent(kind, name if plugin is None else f"{plugin}:{name}", suggestions,
                                   install_hint(kind, name) if plugin is None else None)
        if len(found) > 1:
            raise ComponentConflict(kind, name, [c.plugin for c in found])
        return found[0]

    def suggest(self, kind: str, name: str) -> list[str]:
        """Registered names of ``kind`` close to ``name``."""
        return difflib.get_close_matches(name, self.names(kind), n=3, cutoff=0.6)

    def names(self, kind: str) -> list[str]:
        """Sorted names registered for ``kind``."""
        return sorted({n for (k, n) in self._components if k == kind})

    def all(self, kind: str | None = None) -> list[Component]:
        """Every component (of ``kind``), sorted by kind order, name and plugin."""
        out = [c for comps in self._components.values() for c in comps if kind is None or c.kind == kind]
        return sorted(out, key=lambda c: (KINDS.index(c.kind), c.name, c.plugin))

    def conflicts(self) -> list[tuple[str, str, list[str]]]:
        """(kind, name, plugins) for every name registered more than once."""
        return [(k, n, [c.plugin for c in cs]) for (k, n), cs in sorted(self._components.items()) if len(cs) > 1]
