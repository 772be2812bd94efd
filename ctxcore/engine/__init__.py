"""Engine layer: one build, from providers' messages to a legal, budgeted request and its report.

- :mod:`~ctxcore.engine.protocols`: the component contracts (Provider, Filter,
  TokenCounter, Checkpointer, MemoryStore, Summarizer) as typing Protocols.
- :mod:`~ctxcore.engine.counting`: :class:`MessageCounter`, the base a counter
  builds on (per-message framing, images, tool schemas).
- :mod:`~ctxcore.engine.budget`: the model budget, the count cache and
  :class:`FilterContext`.
- :mod:`~ctxcore.engine.lazy`: lazy message views and prefix memos, so a build
  costs what is new and what is kept.
- :mod:`~ctxcore.engine.report`: :class:`BuildReport`, every decision of a build.
- :mod:`~ctxcore.engine.builder`: :class:`ContextBuilder`, the build itself.

May import: ``ctxcore.errors`` and the model and render layers.
"""
