"""``ctx``: the command-line interface, one module per command group.

:mod:`ctxcore.cli.app` holds the root group (options, logging, plugin-added
commands); each other module defines one command or group and this module
attaches them with ``add_command``, so no command module imports another's
group. Shared helpers (reading state, failing without a traceback) live in
:mod:`ctxcore.cli._common`. ``python -m ctxcore`` runs :func:`main`.

May import: every layer (it is the top one).
"""

from __future__ import annotations

from ctxcore.cli.app import cli, main
from ctxcore.cli.build import build
from ctxcore.cli.checkpoint import checkpoint
from ctxcore.cli.counters import count, counters
from ctxcore.cli.diff import diff
from ctxcore.cli.explain import explain
from ctxcore.cli.init import init
from ctxcore.cli.memory import memory
from ctxcore.cli.pipeline import pipeline
from ctxcore.cli.plugins import plugins
from ctxcore.cli.presets import pipeline_presets, pipeline_show
from ctxcore.cli.replay import replay_command
from ctxcore.cli.report import report
from ctxcore.cli.scaffold import plugins_new
from ctxcore.cli.schema import pipeline_schema_command
from ctxcore.cli.thread import thread

__all__ = ["cli", "main"]

plugins.add_command(plugins_new)
for _command in (pipeline_show, pipeline_presets, pipeline_schema_command):
    pipeline.add_command(_command)
for _command in (plugins, pipeline, build, explain, report, diff, replay_command, count, counters, memory, checkpoint, thread,
                 init):
    cli.add_command(_command)
