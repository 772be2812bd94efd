"""pluggy hook specifications: how a plugin offers components and observes builds.

Registration hooks hand the plugin a ``register(name, factory, *, config=None,
description=None)`` function to call once per component. Factories, not
instances: a factory runs only when a pipeline uses the component, so heavy
imports stay out of ``ctx plugins list``. No hook is called per message.
Full documentation of each hook: docs/plugins.md.
"""

from __future__ import annotations

from typing import Any

import pluggy

__all__ = ["hookspec", "hookimpl", "PROJECT_NAME"]

PROJECT_NAME = "ctxcore"
hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)


@hookspec
def register_providers(register: Any) -> None:
    """Register providers: ``register("name", factory, config=Model, description=...)``."""


@hookspec
def register_filters(register: Any) -> None:
    """Register filters the same way."""


@hookspec
def register_token_counters(register: Any) -> None:
    """Register token counters the same way."""


@hookspec
def register_checkpointers(register: Any) -> None:
    """Register checkpointers the same way."""


@hookspec
def register_thread_stores(register: Any) -> None:
    """Register thread stores (message logs, ``ctxcore.kit.ThreadStore``) the same way; a pipeline's ``threads:`` names one."""


@hookspec
def register_memory_stores(register: Any) -> None:
    """Register long-term memory stores the same way."""


@hookspec
def register_integrations(register: Any) -> None:
    """Declare framework adapters: ``register("name", framework=..., entry="module:attr", description=...)``.

    An integration is not a pipeline component: nothing is built from it by name. The
    declaration only makes it visible (``ctx plugins list`` shows ``integration:NAME``);
    ``entry`` is a dotted path, never imported by the listing.
    """


@hookspec
def register_presets(register: Any) -> None:
    """Offer preset pipeline files: ``register("name", path, description=...)``."""


@hookspec
def register_commands(cli: Any) -> None:
    """Add commands to the ``ctx`` click group (``@cli.command()``)."""


@hookspec
def on_build_complete(context: Any) -> None:
    """Observe each finished build (a ``BuiltContext``): metrics, audit. Called once per build."""
