"""Testing layer: helpers for testing ctxcore plugins and pipelines (like ``structlog.testing``).

``fresh_host(*plugins)`` gives an isolated plugin host with only the plugins you
pass (modules or objects with ``@hookimpl`` methods), so a test never touches the
process-wide host nor depends on what else is installed.

- :mod:`ctxcore.testing.contracts`: the conformance suites, one per component
  kind (they need pytest).
- :mod:`ctxcore.testing.harness`: servers and harnesses tests run against (in the
  repository only: excluded from the wheel).

May import: every layer except ``ctxcore.tools`` and ``ctxcore.cli``.
"""

from __future__ import annotations

from typing import Any

from ctxcore.plugins.host import PluginHost

__all__ = ["fresh_host"]


def fresh_host(*plugins: Any, strict: bool = True) -> PluginHost:
    """A new :class:`PluginHost` holding exactly ``plugins`` (registered in-process).

    Each plugin may be a module or object, or a ``(name, plugin)`` pair to choose
    the name it is listed under (and qualified as ``name:component``).
    """
    host = PluginHost(strict=strict)
    for i, plugin in enumerate(plugins):
        if isinstance(plugin, tuple):
            name, obj = plugin
        else:
            name, obj = getattr(plugin, "__name__", f"plugin-{i}"), plugin
        host.register(obj, name)
    return host
