"""Plugin loading: ctxcore's own loop over the ``ctxcore`` entry-point group.

Allow and block lists are applied before any plugin code is imported. A plugin
that fails to import (or whose registration hook raises) is recorded as failed
and the others keep working, unless strict mode makes it fatal. Two plugins
offering the same (kind, name) are both marked ``conflict``; ``plugin:name``
picks one.

Environment:
    CTXCORE_PLUGINS                  comma-separated allow list (distribution or entry-point names)
    CTXCORE_BLOCK_PLUGINS            comma-separated block list
    CTXCORE_DISABLE_PLUGIN_AUTOLOAD  "1": load only plugins named in CTXCORE_PLUGINS
    CTXCORE_STRICT_PLUGINS           "1": any plugin failure raises PluginError
"""

from __future__ import annotations

import difflib
import functools
import os
import traceback
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import importlib_metadata
import pluggy
import structlog

from ctxcore.errors import PluginError
from ctxcore.plugins import hookspecs
from ctxcore.plugins.registry import (
    HOOK_FOR_KIND,
    KINDS,
    Registry,
    normalize_plugin_name,
)

__all__ = [
    "ENTRY_POINT_GROUP",
    "IntegrationInfo",
    "PluginInfo",
    "PluginHost",
    "new_plugin_manager",
    "default_host",
    "reset_default_host",
]

ENTRY_POINT_GROUP = "ctxcore"
log = structlog.get_logger("ctxcore.plugins")

_TRUE = {"1", "true", "yes", "on"}


def new_plugin_manager() -> pluggy.PluginManager:
    """A fresh manager with ctxcore's hook specifications and no plugins."""
    pm = pluggy.PluginManager(hookspecs.PROJECT_NAME)
    pm.add_hookspecs(hookspecs)
    return pm


@dataclass(frozen=True)
class IntegrationInfo:
    """A framework adapter a plugin declares (``register_integrations``).

    ``framework`` names the framework and the versions it was tested with (a
    requirement such as ``"langchain>=1.0"``); ``entry`` is the dotted path of the
    adapter (``"ctxcore_langchain:ContextMiddleware"``), shown, never imported.
    """

    name: str
    framework: str
    entry: str
    description: str = ""

    def to_dict(self) -> dict[str, str]:
        """The stable JSON shape inside ``ctx plugins list --json``."""
        return {"name": self.name, "framework": self.framework, "entry": self.entry, "description": self.description}


@dataclass
class PluginInfo:
    """One plugin as ``ctx plugins list`` shows it.

    ``status`` is ``loaded``, ``failed`` (import or registration raised), ``blocked``
    (excluded by the allow/block lists or autoload being off) or ``conflict`` (loaded,
    but one of its component names is also registered by another plugin).
    """

    name: str
    version: str
    entry_point: str
    status: str = "loaded"
    hooks: list[str] = field(default_factory=list)
    components: dict[str, list[str]] = field(default_factory=lambda: {k: [] for k in KINDS})
    #: framework adapters the plugin declares (``register_integrations``), by name.
    integrations: list[IntegrationInfo] = field(default_factory=list)
    error: dict[str, str] | None = None
    #: the formatted traceback of a failure (shown by ``ctx -v plugins list``; not in the JSON).
    traceback: str = field(default="", repr=False)

    def to_dict(self) -> dict[str, Any]:
        """The stable JSON shape of ``ctx plugins list --json``."""
        return {
            "name": self.name,
            "version": self.version,
            "entry_point": self.entry_point,
            "status": self.status,
            "hooks": sorted(self.hooks),
            "components": {k: sorted(self.components.get(k, [])) for k in KINDS},
            "integrations": [i.to_dict() for i in sorted(self.integrations, key=lambda i: i.name)],
            "error": self.error,
        }


def _env_list(env: Mapping[str, str], key: str) -> set[str] | None:
    raw = env.get(key)
    if raw is None or not raw.strip():
        return None
    return {normalize_plugin_name(p.strip()) for p in raw.split(",") if p.strip()}


def _flag(env: Mapping[str, str], key: str) -> bool:
    return env.get(key, "").strip().lower() in _TRUE


class PluginHost:
    """A plugin manager, the plugins it loaded, and the registry they filled.

    Each host is independent: tests make their own; the CLI makes one per run.
    """

    def __init__(self, pm: pluggy.PluginManager | None = None, *, strict: bool = False) -> None:
        self.pm = pm or new_plugin_manager()
        self.strict = strict
        self.plugins: list[PluginInfo] = []
        self._registry: Registry | None = None

    # ------------------------------------------------------------- loading
    @classmethod
    def load(
        cls,
        *,
        env: Mapping[str, str] | None = None,
        entry_points: Iterable[Any] | None = None,
        strict: bool | None = None,
    ) -> PluginHost:
        """Load every allowed plugin of the ``ctxcore`` entry-point group.

        Args:
            env: where to read the CTXCORE_* variables (default ``os.environ``).
            entry_points: entry points to consider instead of the installed ones
                (tests pass those of fake distributions).
            strict: override ``CTXCORE_STRICT_PLUGINS``.

        Raises:
            PluginError: in strict mode, on the first failed plugin or conflict.
        """
        env = os.environ if env is None else env
        host = cls(strict=_flag(env, "CTXCORE_STRICT_PLUGINS") if strict is None else strict)
        if entry_points is None:
            entry_points = importlib_metadata.entry_points(group=ENTRY_POINT_GROUP)
        allow = _env_list(env, "CTXCORE_PLUGINS")
        block = _env_list(env, "CTXCORE_BLOCK_PLUGINS") or set()
        autoload = not _flag(env, "CTXCORE_DISABLE_PLUGIN_AUTOLOAD")
        for ep in sorted(entry_points, key=lambda e: _dist_name(e)):
            names = {normalize_plugin_name(_dist_name(ep)), normalize_plugin_name(ep.name)}
            if names & block or (allow is not None and not names & allow) or (not autoload and allow is None):
                host.plugins.append(PluginInfo(_dist_name(ep), _dist_version(ep), _ep_text(ep), status="blocked"))
                continue
            host._load_entry_point(ep)
        host.registry  # noqa: B018 - registration hooks run now so failures show in the listing
        return host

    def _load_entry_point(self, ep: Any) -> None:
        info = PluginInfo(_dist_name(ep), _dist_version(ep), _ep_text(ep))
        self.plugins.append(info)
        try:
            plugin = ep.load()
        except (Exception, SystemExit) as exc:  # a plugin calling sys.exit() on import must not end the host
            self._fail(info, exc, "failed to load")
            return
        try:
            self.pm.register(plugin, name=info.name)
            _check_hook_names(self.pm, plugin)
        except Exception as exc:
            if self.pm.is_registered(plugin):
                self.pm.unregister(plugin)
            self._fail(info, exc, "failed to register")
            return
        info.hooks = sorted(c.name for c in (self.pm.get_hookcallers(plugin) or []))

    def register(self, plugin: Any, name: str, *, version: str = "0", entry_point: str = "") -> PluginInfo:
        """Register an in-process plugin object (a module or a class with @hookimpl methods)."""
        info = PluginInfo(name, version, entry_point or f"{name} = <in-process>")
        self.pm.register(plugin, name=name)
        try:
            _check_hook_names(self.pm, plugin)
        except PluginError:
            self.pm.unregister(name=name)
            raise
        info.hooks = sorted(c.name for c in (self.pm.get_hookcallers(plugin) or []))
        self.plugins.append(info)
        self._registry = None
        return info

    def _fail(self, info: PluginInfo, exc: BaseException, what: str) -> None:
        info.status = "failed"
        info.error = {"type": type(exc).__name__, "message": str(exc)}
        info.traceback = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        log.warning("plugin_failed", plugin=info.name, version=info.version, error=f"{type(exc).__name__}: {exc}")
        if self.strict:
            raise PluginError(
                f"plugin '{info.name}' {info.version} {what}: {type(exc).__name__}: {exc} "
                "(unset CTXCORE_STRICT_PLUGINS to continue without it)"
            ) from exc

    # ------------------------------------------------------------ registry
    @property
    def registry(self) -> Registry:
        """The components registered by the loaded plugins (built on first access)."""
        if self._registry is None:
            self._registry = self._build_registry()
        return self._registry

    def _build_registry(self) -> Registry:
        registry = Registry()
        infos = {i.name: i for i in self.plugins}
        for info in infos.values():
            info.components = {k: [] for k in KINDS}
        for kind in KINDS:
            caller = getattr(self.pm.hook, HOOK_FOR_KIND[kind])
            for impl in caller.get_hookimpls():
                info = infos.get(impl.plugin_name) or PluginInfo(impl.plugin_name, "", "")
                if info.status == "failed":
                    continue
                self._call_register_hook(registry, kind, impl, info)
        for info in infos.values():
            info.integrations = []
        for impl in self.pm.hook.register_integrations.get_hookimpls():
            info = infos.get(impl.plugin_name) or PluginInfo(impl.plugin_name, "", "")
            if info.status != "failed":
                self._call_integrations_hook(registry, impl, info)
        self._mark_conflicts(registry, infos)
        return registry

    def _call_integrations_hook(self, registry: Registry, impl: Any, info: PluginInfo) -> None:
        def register(name: str, *, framework: str, entry: str, description: str = "") -> None:
            if not name or not framework or ":" not in entry:
                raise ValueError(
                    f"register_integrations needs a name, framework='pkg>=x' and entry='module:attr' (got {name!r}, {framework!r}, {entry!r})"
                )
            info.integrations.append(IntegrationInfo(name, framework, entry, description))

        try:
            impl.function(**{arg: register for arg in impl.argnames})
        except Exception as exc:
            registry.remove_plugin(info.name)
            info.components = {k: [] for k in KINDS}
            info.integrations = []
            self._fail(info, exc, "failed in register_integrations")

    def _call_register_hook(self, registry: Registry, kind: str, impl: Any, info: PluginInfo) -> None:
        def register(name: str, factory: Callable[..., Any], *, config: Any = None, description: str | None = None) -> None:
            registry.add(kind, name, factory, plugin=info.name, config=config, description=description)
            info.components[kind].append(name)

        try:
            impl.function(**{arg: register for arg in impl.argnames})
        except Exception as exc:
            registry.remove_plugin(info.name)
            info.components = {k: [] for k in KINDS}
            self._fail(info, exc, f"failed in {HOOK_FOR_KIND[kind]}")

    def _mark_conflicts(self, registry: Registry, infos: dict[str, PluginInfo]) -> None:
        for kind, name, plugins in registry.conflicts():
            for plugin in plugins:
                info = infos.get(plugin)
                if info is None or info.status == "failed":
                    continue
                others = [p for p in plugins if p != plugin]
                info.status = "conflict"
                info.error = {
                    "type": "ComponentConflict",
                    "message": f"{kind} {name!r} is also registered by {', '.join(others)}; "
                    f"pipelines must write '{plugin}:{name}' or '{others[0]}:{name}'",
                }
            if self.strict:
                raise PluginError(f"{kind} {name!r} is registered by {', '.join(plugins)} (strict mode)")

    @property
    def hook(self) -> Any:
        """The pluggy hook relay (for ``on_build_complete`` and ``register_commands``)."""
        return self.pm.hook

    def failed(self) -> list[PluginInfo]:
        """Plugins that failed to load or register."""
        return [p for p in self.plugins if p.status == "failed"]


def _check_hook_names(pm: pluggy.PluginManager, plugin: Any) -> None:
    """Refuse hook implementations that match no ctxcore hook (a typo would silently do nothing)."""
    known = sorted(n for n in dir(pm.hook) if not n.startswith("_") and getattr(pm.hook, n).spec is not None)
    for caller in pm.get_hookcallers(plugin) or []:
        if caller.spec is None:
            close = difflib.get_close_matches(caller.name, known, n=1)
            hint = f" — did you mean '{close[0]}'?" if close else ""
            raise PluginError(f"unknown hook '{caller.name}'{hint}")


def _dist_name(ep: Any) -> str:
    dist = getattr(ep, "dist", None)
    return dist.name if dist is not None and dist.name else ep.name


def _dist_version(ep: Any) -> str:
    dist = getattr(ep, "dist", None)
    return (dist.version or "") if dist is not None else ""


def _ep_text(ep: Any) -> str:
    return f"{ep.name} = {ep.value}"


@functools.lru_cache(maxsize=1)
def default_host() -> PluginHost:
    """The process-wide host, loaded on first use (never at import of ctxcore)."""
    return PluginHost.load()


def reset_default_host() -> None:
    """Forget the process-wide host so the next :func:`default_host` reloads plugins."""
    default_host.cache_clear()
