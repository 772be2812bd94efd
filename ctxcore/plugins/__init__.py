"""Plugins layer: hook specifications, the plugin host (entry-point loading) and the component registry.

- :mod:`~ctxcore.plugins.hookspecs`: every hook a plugin may implement and the
  ``hookimpl`` marker.
- :mod:`~ctxcore.plugins.host`: :class:`PluginHost`, which loads the ``ctxcore``
  entry points (allow/block lists first, failures recorded, never at import).
- :mod:`~ctxcore.plugins.registry`: (kind, name) -> factory, config model and
  owning plugin.

May import: ``ctxcore.errors``, the model and engine layers and the plugin kit.
"""

from __future__ import annotations

from ctxcore.plugins.host import (
    ENTRY_POINT_GROUP,
    PluginHost,
    PluginInfo,
    default_host,
    reset_default_host,
)

__all__ = ["ENTRY_POINT_GROUP", "PluginHost", "PluginInfo", "default_host", "reset_default_host"]
