"""``ctx``: the command-line interface, one module per command group.

:mod:`ctxcore.cli.app` holds the root group (options, logging, the table of
built-in commands, plugin-added commands); each other module defines one
command or group, imported only when that command runs
(:mod:`ctxcore.cli.lazy`), so no command module imports another's group and
``ctx --help`` imports none of them. Shared helpers (reading state, failing
without a traceback) live in :mod:`ctxcore.cli._common`. ``python -m ctxcore``
runs :func:`main`.

May import: every layer (it is the top one).
"""

from __future__ import annotations

from ctxcore.cli.app import cli, main

__all__ = ["cli", "main"]
