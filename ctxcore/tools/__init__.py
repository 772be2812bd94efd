"""Tools layer: what the ``ctx`` commands do, as functions (replay, explain, HTML report, scaffold).

- :mod:`~ctxcore.tools.replay`: replay a recorded session through a pipeline,
  one model call at a time (tokens, fill, cached prefix, cost).
- :mod:`~ctxcore.tools.explain`: the explanation of a build report (budget rows,
  decisions) as data; :mod:`~ctxcore.tools.report_tables` prints it with rich.
- :mod:`~ctxcore.tools.html_report`: the self-contained HTML page of a build.
- :mod:`~ctxcore.tools.scaffold`: a new plugin distribution from templates.

May import: every layer below it (errors, model, render, engine, kit, plugins,
pipeline, runtime). Only :mod:`ctxcore.cli` imports this layer.
"""
